/* Small helpers for the text formats frugal reads (job files, scenarios, profiles, settings). */
#ifndef FRUGAL_COMMON_TEXT_H
#define FRUGAL_COMMON_TEXT_H

/* s without its leading and trailing white space (the end is cut in place). */
char *text_trim(char *s);

#endif
