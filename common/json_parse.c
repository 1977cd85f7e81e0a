#include "common/json_parse.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    const char *p, *end, *start;
    int depth;
    char *err;
    size_t errlen;
    int failed;
} parser;

static int line_of(const parser *ps)
{
    int line = 1;
    for (const char *c = ps->start; c < ps->p && c < ps->end; c++)
        line += *c == '\n';
    return line;
}

__attribute__((format(printf, 2, 3))) static int bad(parser *ps, const char *fmt, ...)
{
    if (ps->failed++)
        return -1;
    int n = snprintf(ps->err, ps->errlen, "line %d: ", line_of(ps));
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < ps->errlen)
        vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static void skip_space(parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int literal(parser *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n))
        return bad(ps, "expected a value");
    ps->p += n;
    return 0;
}

static int hex4(parser *ps, unsigned *out)
{
    if (ps->end - ps->p < 4)
        return bad(ps, "a \\u escape needs four hex digits");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = *ps->p++;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return bad(ps, "a \\u escape needs four hex digits");
        v = v << 4 | (unsigned)d;
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80)
        return o[0] = (char)cp, 1;
    if (cp < 0x800)
        return o[0] = (char)(0xc0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3f)), 2;
    if (cp < 0x10000)
        return o[0] = (char)(0xe0 | cp >> 12), o[1] = (char)(0x80 | (cp >> 6 & 0x3f)),
               o[2] = (char)(0x80 | (cp & 0x3f)), 3;
    return o[0] = (char)(0xf0 | cp >> 18), o[1] = (char)(0x80 | (cp >> 12 & 0x3f)),
           o[2] = (char)(0x80 | (cp >> 6 & 0x3f)), o[3] = (char)(0x80 | (cp & 0x3f)), 4;
}

static int escape(parser *ps, char *o, size_t *len)
{
    char c = *ps->p++;
    const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
    const char *hit = strchr(from, c);
    if (c && hit) {
        o[(*len)++] = to[hit - from];
        return 0;
    }
    if (c != 'u')
        return bad(ps, "unknown escape \\%c", c);
    unsigned cp, low;
    if (hex4(ps, &cp))
        return -1;
    if (cp >= 0xd800 && cp < 0xdc00) {   /* a surrogate pair */
        if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
            return bad(ps, "a lone surrogate in a \\u escape");
        ps->p += 2;
        if (hex4(ps, &low) || low < 0xdc00 || low > 0xdfff)
            return ps->failed ? -1 : bad(ps, "a lone surrogate in a \\u escape");
        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
    } else if (cp >= 0xdc00 && cp < 0xe000) {
        return bad(ps, "a lone surrogate in a \\u escape");
    }
    *len += put_utf8(o + *len, cp);
    return 0;
}

/* The string at ps->p (past its opening quote), malloc'd. Escapes never grow the text. */
static char *string(parser *ps)
{
    const char *q = ps->p;
    while (q < ps->end && *q != '"')
        q += *q == '\\' && q + 1 < ps->end ? 2 : 1;
    if (q >= ps->end)
        return bad(ps, "a string without its closing quote"), NULL;
    char *o = malloc((size_t)(q - ps->p) + 1);
    if (!o)
        return bad(ps, "out of memory"), NULL;
    size_t len = 0;
    while (ps->p < q) {
        char c = *ps->p++;
        if ((unsigned char)c < 0x20) {
            free(o);
            return bad(ps, "a control character inside a string"), NULL;
        }
        if (c != '\\')
            o[len++] = c;
        else if (escape(ps, o, &len)) {
            free(o);
            return NULL;
        }
    }
    ps->p = q + 1;
    o[len] = 0;
    return o;
}

static int number(parser *ps, json_value *v)
{
    const char *s = ps->p;
    if (s < ps->end && *s == '-')
        s++;
    if (s >= ps->end || *s < '0' || *s > '9' || (*s == '0' && s + 1 < ps->end && s[1] >= '0' && s[1] <= '9'))
        return bad(ps, "expected a value");
    char buf[64];
    size_t n = 0;
    for (const char *c = ps->p; c < ps->end && strchr("+-.eE0123456789", *c) && *c; c++)
        if (n + 1 < sizeof buf)
            buf[n++] = *c;
        else
            return bad(ps, "a number too long");
    buf[n] = 0;
    char *stop;
    v->type = JSON_NUMBER;
    v->number = strtod(buf, &stop);
    if ((size_t)(stop - buf) != n || !isfinite(v->number))
        return bad(ps, "a malformed number");
    ps->p += n;
    return 0;
}

static int value(parser *ps, json_value *v);

static int grow(parser *ps, json_value *v, int *cap, int object)
{
    if (v->n < *cap)
        return 0;
    int c = *cap ? 2 * *cap : 4;
    json_value *items = realloc(v->items, (size_t)c * sizeof *items);
    if (items)
        v->items = items;
    char **keys = object ? realloc(v->keys, (size_t)c * sizeof *keys) : NULL;
    if (keys)
        v->keys = keys;
    if (!items || (object && !keys))
        return bad(ps, "out of memory");
    *cap = c;
    return 0;
}

/* An array or object after its opening bracket. */
static int container(parser *ps, json_value *v, int object)
{
    char close = object ? '}' : ']';
    v->type = object ? JSON_OBJECT : JSON_ARRAY;
    if (++ps->depth > JSON_MAX_DEPTH)
        return bad(ps, "nested more than %d deep", JSON_MAX_DEPTH);
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++, ps->depth--;
        return 0;
    }
    for (int cap = 0;;) {
        if (grow(ps, v, &cap, object))
            return -1;
        skip_space(ps);
        if (object) {
            if (ps->p >= ps->end || *ps->p != '"')
                return bad(ps, "expected a member name in quotes");
            ps->p++;
            if (!(v->keys[v->n] = string(ps)))
                return -1;
            skip_space(ps);
            if (ps->p >= ps->end || *ps->p++ != ':') {
                free(v->keys[v->n]);
                return bad(ps, "expected ':' after a member name");
            }
        }
        memset(&v->items[v->n], 0, sizeof v->items[0]);
        v->n++;
        if (value(ps, &v->items[v->n - 1]))
            return -1;
        skip_space(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++, ps->depth--;
            return 0;
        }
        return bad(ps, "expected ',' or '%c'", close);
    }
}

static int value(parser *ps, json_value *v)
{
    skip_space(ps);
    if (ps->p >= ps->end)
        return bad(ps, "expected a value, found the end");
    switch (*ps->p) {
    case '{': ps->p++; return container(ps, v, 1);
    case '[': ps->p++; return container(ps, v, 0);
    case '"':
        ps->p++;
        v->type = JSON_STRING;
        return (v->string = string(ps)) ? 0 : -1;
    case 't': v->type = JSON_TRUE; return literal(ps, "true");
    case 'f': v->type = JSON_FALSE; return literal(ps, "false");
    case 'n': v->type = JSON_NULL; return literal(ps, "null");
    default: return number(ps, v);
    }
}

static void release(json_value *v)
{
    free(v->string);
    for (int i = 0; i < v->n; i++) {
        release(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
}

json_value *json_parse(const char *text, size_t len, char *err, size_t errlen)
{
    parser ps = {text, text + len, text, 0, err, errlen, 0};
    json_value *v = calloc(1, sizeof *v);
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (!value(&ps, v)) {
        skip_space(&ps);
        if (ps.p == ps.end)
            return v;
        bad(&ps, "text after the value");
    }
    json_free(v);
    return NULL;
}

void json_free(json_value *v)
{
    if (v) {
        release(v);
        free(v);
    }
}

static const json_value *member(const json_value *v, const char *name, size_t n)
{
    for (int i = 0; v && v->type == JSON_OBJECT && i < v->n; i++)
        if (strlen(v->keys[i]) == n && !memcmp(v->keys[i], name, n))
            return &v->items[i];
    return NULL;
}

const json_value *json_member(const json_value *v, const char *name)
{
    return member(v, name, strlen(name));
}

const json_value *json_get(const json_value *v, const char *path)
{
    while (v && *path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        v = member(v, path, n);
        path += n + (dot != NULL);
    }
    return v;
}

double json_num(const json_value *v, double fallback)
{
    return v && v->type == JSON_NUMBER ? v->number : fallback;
}

const char *json_str(const json_value *v, const char *fallback)
{
    return v && v->type == JSON_STRING ? v->string : fallback;
}
