/* Reading JSON back: a strict parser into a small tree, for the files frugal wrote itself
 * (summary.json) and reads again to draw a report. Strict means: one value, RFC 8259 syntax,
 * nesting at most JSON_MAX_DEPTH deep; an error names the line and what was expected. */
#ifndef FRUGAL_JSON_PARSE_H
#define FRUGAL_JSON_PARSE_H

#include <stddef.h>

#define JSON_MAX_DEPTH 64

typedef enum { JSON_NULL, JSON_FALSE, JSON_TRUE, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_type;

typedef struct json_value {
    json_type type;
    double number;
    char *string;                /* JSON_STRING: UTF-8, 0-ended */
    int n;                       /* JSON_ARRAY, JSON_OBJECT: how many items */
    struct json_value *items;    /* the elements, or the members' values */
    char **keys;                 /* JSON_OBJECT: the members' names */
} json_value;

/* The tree (json_free it), or NULL with err set ("line L: ..." or out of memory). */
json_value *json_parse(const char *text, size_t len, char *err, size_t errlen);
void json_free(json_value *v);

/* A member of an object by a dotted path ("energy.source"); NULL when absent or not an object. */
const json_value *json_get(const json_value *v, const char *path);
/* A member by its whole name (which may hold dots); NULL when absent or not an object. */
const json_value *json_member(const json_value *v, const char *name);
/* The number, or fallback when v is not one (null, absent). */
double json_num(const json_value *v, double fallback);
/* The string, or fallback when v is not one. */
const char *json_str(const json_value *v, const char *fallback);

#endif
