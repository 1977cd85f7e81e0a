/* Small helpers for the text formats frugal reads (job files, scenarios, profiles, settings). */
#ifndef FRUGAL_COMMON_TEXT_H
#define FRUGAL_COMMON_TEXT_H

#include <stdio.h>

/* s without its leading and trailing white space (the end is cut in place). */
char *text_trim(char *s);
/* s as one word for a POSIX shell: as it is when it needs no quotes, else in '...' */
void text_shell_word(FILE *f, const char *s);
/* prefix, the message and a newline on stderr (a command's error); returns status, the exit
 * status it calls for. */
int text_error(int status, const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
