/* The coordinator's allow file (`frugal train --allow FILE`): the machines admitted, one public
 * identity per line as `frugal keygen --identity` prints it ("frugal-id-1 ", 64 hex digits, a
 * name); '#' starts a comment line. The file is re-read when it changes, so that revoking a
 * machine is deleting its line; a file that cannot be read or parsed then keeps the list as it
 * was (and says why). */
#ifndef FRUGAL_ALLOW_LIST_H
#define FRUGAL_ALLOW_LIST_H

#include "netio/key.h"

#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#define ALLOW_MAX 1024
#define ALLOW_NAME 48

typedef struct allow_entry {
    unsigned char pk[NETIO_ID_PUBLIC_BYTES];
    char name[ALLOW_NAME];
} allow_entry;

typedef struct allow_list {
    char path[700];
    allow_entry *entries;
    int n;
    struct timespec mtime;       /* of the file read */
    off_t size;
    ino_t inode;
    double checked_at;           /* when it was last looked at (clock_now_s) */
} allow_list;

/* Reads the file. 0, or -1 with err naming the file and line. */
int allow_list_load(allow_list *a, const char *path, char *err, size_t errlen);
void allow_list_free(allow_list *a);
/* Looks at the file at most once a second; when it changed, reads it again (a failure said on
 * log, the list kept). Returns 1 when the list changed. */
int allow_list_refresh(allow_list *a, double now, FILE *log);
/* The name of pk, or NULL when it is not admitted. */
const char *allow_list_find(const allow_list *a, const unsigned char pk[NETIO_ID_PUBLIC_BYTES]);
/* Parses text (len bytes) into entries (ALLOW_MAX): how many, or -1 with err ("LINE: why";
 * fuzzed). */
int allow_list_parse(const char *text, size_t len, allow_entry *entries, char *err, size_t errlen);

#endif
