/* The hosts of an allocation as batch systems write them: Slurm's compressed lists
 * ("node[01-04,07],gpu-a[1-2]") and OAR's node file (a host per line, once per core). Both come
 * from outside, so both are decoded strictly and fuzzed (tests/fuzz target `launch_files`). */
#ifndef FRUGAL_HOSTLIST_H
#define FRUGAL_HOSTLIST_H

#include <stddef.h>

#define HOSTLIST_MAX 4096       /* hosts in one list */
#define HOSTLIST_NAME 128       /* a host's name, with its end */

typedef struct hostlist {
    int n;
    char (*name)[HOSTLIST_NAME];   /* n names, each once, in the order first met */
    int *count;                    /* how many times each was listed (OAR: its cores) */
} hostlist;

/* Slurm's form: items apart by commas, each a name with bracketed ranges ("a[1-3,5]b[0-1]"),
 * ranges keeping the lower bound's leading zeros. 0, or -1 with err saying what and where. */
int hostlist_expand(hostlist *h, const char *text, char *err, size_t errlen);
/* An OAR node file's text: names, one per line; blank lines skipped. 0, or -1 with err naming
 * the line. */
int hostlist_parse_lines(hostlist *h, const char *text, size_t len, char *err, size_t errlen);
/* The index of name in the list, or -1. */
int hostlist_find(const hostlist *h, const char *name);
void hostlist_free(hostlist *h);

/* Whether a name is one a host may have (letters, digits, '-', '.', '_'; not empty). */
int hostlist_name_valid(const char *name);

#endif
