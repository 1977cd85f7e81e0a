/* Slurm's compressed host lists and OAR's node files, decoded into distinct names. */
#include "engine/cli/hostlist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hostlist_name_valid(const char *name)
{
    size_t n = strlen(name);
    return n > 0 && n < HOSTLIST_NAME &&
           strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._") == n;
}

int hostlist_find(const hostlist *h, const char *name)
{
    for (int i = 0; i < h->n; i++)
        if (!strcmp(h->name[i], name))
            return i;
    return -1;
}

void hostlist_free(hostlist *h)
{
    free(h->name);
    free(h->count);
    *h = (hostlist){0};
}

/* Counts name once more, adding it when new. */
static int add(hostlist *h, const char *name, char *err, size_t errlen)
{
    if (!hostlist_name_valid(name)) {
        snprintf(err, errlen, "'%.60s' is not a host name (letters, digits, '-', '.', '_')", name);
        return -1;
    }
    int at = hostlist_find(h, name);
    if (at >= 0) {
        h->count[at]++;
        return 0;
    }
    if (h->n == HOSTLIST_MAX) {
        snprintf(err, errlen, "more than %d hosts", HOSTLIST_MAX);
        return -1;
    }
    if (!h->name) {
        h->name = malloc(HOSTLIST_MAX * sizeof *h->name);
        h->count = malloc(HOSTLIST_MAX * sizeof *h->count);
        if (!h->name || !h->count) {
            snprintf(err, errlen, "out of memory for a host list");
            return -1;
        }
    }
    snprintf(h->name[h->n], HOSTLIST_NAME, "%s", name);
    h->count[h->n++] = 1;
    return 0;
}

/* A bound of a range: digits only, at most 9 of them (its width, leading zeros kept). */
static int parse_bound(const char *s, size_t len, long *v, int *width)
{
    if (len == 0 || len > 9 || strspn(s, "0123456789") < len)
        return -1;
    *v = strtol(s, NULL, 10);
    *width = (int)len;
    return 0;
}

/* The names of item (no top-level comma in it) appended to prefix (plen long): the first
 * bracket's numbers, each followed by the rest expanded the same way. */
static int expand_item(hostlist *h, char *prefix, size_t plen, const char *item, char *err,
                       size_t errlen)
{
    const char *open = strchr(item, '[');
    if (!open) {
        if (plen + strlen(item) >= HOSTLIST_NAME) {
            snprintf(err, errlen, "a host name longer than %d characters", HOSTLIST_NAME - 1);
            return -1;
        }
        strcpy(prefix + plen, item);
        return add(h, prefix, err, errlen);
    }
    const char *close = strchr(open, ']');
    size_t lead = (size_t)(open - item);
    if (!close || memchr(open + 1, '[', (size_t)(close - open - 1)) || close == open + 1) {
        snprintf(err, errlen, "'%.60s': a '[' without its ']', or brackets inside brackets or empty",
                 item);
        return -1;
    }
    if (plen + lead >= HOSTLIST_NAME - 10) {
        snprintf(err, errlen, "a host name longer than %d characters", HOSTLIST_NAME - 1);
        return -1;
    }
    memcpy(prefix + plen, item, lead);
    for (const char *r = open + 1; r < close;) {   /* "1-3,5,07-09" */
        const char *end = memchr(r, ',', (size_t)(close - r));
        end = end ? end : close;
        const char *dash = memchr(r, '-', (size_t)(end - r));
        long lo, hi = 0;
        int width, hi_width = 0;
        if (parse_bound(r, (size_t)((dash ? dash : end) - r), &lo, &width) ||
            (dash && parse_bound(dash + 1, (size_t)(end - dash - 1), &hi, &hi_width)) ||
            (dash && (hi < lo || hi - lo >= HOSTLIST_MAX))) {
            snprintf(err, errlen, "'%.*s' is not a range of numbers (as 1-4 or 07)",
                     (int)(end - r) < 40 ? (int)(end - r) : 40, r);
            return -1;
        }
        for (long v = lo; v <= (dash ? hi : lo); v++) {
            int w = snprintf(prefix + plen + lead, 12, "%0*ld", width, v);
            if (expand_item(h, prefix, plen + lead + (size_t)w, close + 1, err, errlen))
                return -1;
        }
        r = end < close ? end + 1 : close;
    }
    return 0;
}

int hostlist_expand(hostlist *h, const char *text, char *err, size_t errlen)
{
    *h = (hostlist){0};
    size_t len = strlen(text);
    char *copy = malloc(len + 1), prefix[HOSTLIST_NAME + 16];
    if (!copy) {
        snprintf(err, errlen, "out of memory for a host list");
        return -1;
    }
    int rc = 0, depth = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len && !rc; i++) {   /* split at commas outside brackets */
        char c = i < len ? text[i] : ',';
        depth += c == '[' ? 1 : c == ']' ? -1 : 0;
        if (depth < 0 || depth > 1) {
            snprintf(err, errlen, "brackets that do not pair at character %zu", i + 1);
            rc = -1;
        } else if (c == ',' && depth == 0) {
            memcpy(copy, text + start, i - start);
            copy[i - start] = 0;
            if (i == start) {
                snprintf(err, errlen, "an empty name at character %zu", i + 1);
                rc = -1;
            } else {
                rc = expand_item(h, prefix, 0, copy, err, errlen);
            }
            start = i + 1;
        }
    }
    if (!rc && depth) {
        snprintf(err, errlen, "a '[' without its ']'");
        rc = -1;
    }
    free(copy);
    if (rc)
        hostlist_free(h);
    return rc;
}

int hostlist_parse_lines(hostlist *h, const char *text, size_t len, char *err, size_t errlen)
{
    *h = (hostlist){0};
    char name[HOSTLIST_NAME];
    int line = 1;
    for (size_t i = 0; i < len; line++) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - text) : len, a = i, b = end;
        while (a < b && (text[a] == ' ' || text[a] == '\t' || text[a] == '\r'))
            a++;
        while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\t' || text[b - 1] == '\r'))
            b--;
        i = end + 1;
        if (a == b)
            continue;
        char why[200];
        int fits = b - a < sizeof name;
        if (fits)
            memcpy(name, text + a, b - a), name[b - a] = 0;
        if (!fits || memchr(text + a, 0, b - a) || add(h, fits ? name : "", why, sizeof why)) {
            snprintf(err, errlen, "line %d: %s", line,
                     fits ? why : "a host name longer than 127 characters");
            hostlist_free(h);
            return -1;
        }
    }
    return 0;
}
