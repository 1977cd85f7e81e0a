#include "common/json.h"

#include <math.h>

void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

void json_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

void json_number_field(FILE *f, const char *name, double v, int first)
{
    fprintf(f, "%s\"%s\": ", first ? "" : ", ", name);
    json_number(f, v);
}

void json_fixed(FILE *f, double v, int decimals)
{
    if (isfinite(v))
        fprintf(f, "%.*f", decimals, v);
    else
        fputs("null", f);
}

void json_fixed_field(FILE *f, const char *name, double v, int decimals)
{
    fprintf(f, ", \"%s\": ", name);
    json_fixed(f, v, decimals);
}
