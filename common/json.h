/* The little JSON writing that traces and run summaries need. */
#ifndef FRUGAL_JSON_H
#define FRUGAL_JSON_H

#include <stdio.h>

void json_string(FILE *f, const char *s);   /* quoted and escaped */
void json_number(FILE *f, double v);        /* null when not finite: JSON has no NaN */
/* `, "name": value` (no comma when first). */
void json_number_field(FILE *f, const char *name, double v, int first);
/* With `decimals` digits after the point (null when not finite); the field always after a
 * comma. */
void json_fixed(FILE *f, double v, int decimals);
void json_fixed_field(FILE *f, const char *name, double v, int decimals);

#endif
