#include "common/text.h"

#include <ctype.h>
#include <stdarg.h>
#include <string.h>

char *text_trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = 0;
    return s;
}

void text_shell_word(FILE *f, const char *s)
{
    if (s[0] && !s[strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./=:,+-@%")]) {
        fputs(s, f);
        return;
    }
    fputc('\'', f);
    for (const char *c = s; *c; c++)
        if (*c == '\'')
            fputs("'\\''", f);
        else
            fputc(*c, f);
    fputc('\'', f);
}

int text_error(int status, const char *prefix, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(prefix, stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return status;
}
