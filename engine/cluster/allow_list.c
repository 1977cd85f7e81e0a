#include "engine/cluster/allow_list.h"

#include "common/input_file.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define ALLOW_FILE_MAX (1 << 20)

/* One line (no newline): 0 blank or comment, 1 an entry into e, or -1 with why. */
static int parse_line(const char *line, size_t len, allow_entry *e, const char **why)
{
    while (len && (*line == ' ' || *line == '\t'))
        line++, len--;
    while (len && (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\r'))
        len--;
    if (!len || *line == '#')
        return 0;
    size_t prefix = strlen(IDENTITY_PUBLIC_PREFIX), hex = 2 * NETIO_ID_PUBLIC_BYTES, got = 0;
    if (len < prefix + hex || memcmp(line, IDENTITY_PUBLIC_PREFIX, prefix) ||
        sodium_hex2bin(e->pk, sizeof e->pk, line + prefix, hex, NULL, &got, NULL) || got != sizeof e->pk ||
        (len > prefix + hex && line[prefix + hex] != ' ' && line[prefix + hex] != '\t')) {
        *why = "expected \"frugal-id-1 \", 64 hex digits and a name (frugal keygen --identity prints it)";
        return -1;
    }
    const char *name = line + prefix + hex;
    size_t n = len - prefix - hex;
    while (n && (*name == ' ' || *name == '\t'))
        name++, n--;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)name[i] < 0x20 || (unsigned char)name[i] > 0x7e) {
            *why = "a name with a control or non-ASCII character";
            return -1;
        }
    if (n >= ALLOW_NAME) {
        *why = "a name longer than 47 characters";
        return -1;
    }
    if (n)
        memcpy(e->name, name, n), e->name[n] = 0;
    else   /* unnamed: its key's first digits */
        memcpy(e->name, line + prefix, 8), e->name[8] = 0;
    return 1;
}

int allow_list_parse(const char *text, size_t len, allow_entry *entries, char *err, size_t errlen)
{
    int n = 0, lineno = 0;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at), *why = NULL;
        size_t end = nl ? (size_t)(nl - text) : len;
        lineno++;
        allow_entry e;
        int rc = parse_line(text + at, end - at, &e, &why);
        if (rc > 0 && n == ALLOW_MAX)
            rc = -1, why = "more than 1024 machines";
        if (rc < 0) {
            snprintf(err, errlen, "line %d: %s", lineno, why);
            return -1;
        }
        if (rc > 0)
            entries[n++] = e;
        at = end + 1;
    }
    return n;
}

/* The file read and parsed into a, replacing its list. 0, or -1 with err. */
static int read_into(allow_list *a, char *err, size_t errlen)
{
    struct stat st;   /* first: a change while it is read is seen at the next refresh */
    if (stat(a->path, &st)) {
        snprintf(err, errlen, "allow file %s: %s", a->path, strerror(errno));
        return -1;
    }
    size_t len = 0;
    char *text = input_read_all(a->path, ALLOW_FILE_MAX, "allow file", &len, err, errlen);
    allow_entry *entries = text ? malloc(sizeof *entries * ALLOW_MAX) : NULL;
    char why[200] = "out of memory";
    int n = entries ? allow_list_parse(text, len, entries, why, sizeof why) : -1, read = text != NULL;
    free(text);
    if (n < 0) {
        if (read)   /* else err says why already */
            snprintf(err, errlen, "allow file %s: %s", a->path, why);
        free(entries);
        return -1;
    }
    free(a->entries);
    a->entries = entries, a->n = n;
    a->mtime = st.st_mtim, a->size = st.st_size, a->inode = st.st_ino;
    return 0;
}

int allow_list_load(allow_list *a, const char *path, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    snprintf(a->path, sizeof a->path, "%s", path);
    return read_into(a, err, errlen);
}

void allow_list_free(allow_list *a)
{
    free(a->entries);
    a->entries = NULL, a->n = 0;
}

int allow_list_refresh(allow_list *a, double now, FILE *log)
{
    if (now - a->checked_at < 1)
        return 0;
    a->checked_at = now;
    struct stat st;
    int same = !stat(a->path, &st) && st.st_mtim.tv_sec == a->mtime.tv_sec &&
               st.st_mtim.tv_nsec == a->mtime.tv_nsec && st.st_size == a->size &&
               st.st_ino == a->inode;
    if (same)
        return 0;
    char err[800];
    if (read_into(a, err, sizeof err)) {
        fprintf(log, "cluster: %s (the machines admitted stay as they were)\n", err);
        a->mtime = st.st_mtim, a->size = st.st_size, a->inode = st.st_ino;   /* said once */
        return 0;
    }
    fprintf(log, "cluster: allow file %s read again: %d machines admitted\n", a->path, a->n);
    return 1;
}

const char *allow_list_find(const allow_list *a, const unsigned char pk[NETIO_ID_PUBLIC_BYTES])
{
    for (int i = 0; i < a->n; i++)
        if (!sodium_memcmp(a->entries[i].pk, pk, NETIO_ID_PUBLIC_BYTES))
            return a->entries[i].name;
    return NULL;
}
