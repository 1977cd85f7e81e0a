#include "energy/carbon.h"

#include "common/input_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void carbon_init(carbon_source *cs, double fixed_g_per_kwh, const char *path)
{
    memset(cs, 0, sizeof *cs);
    cs->value = fixed_g_per_kwh;
    cs->read_at = -1;
    snprintf(cs->path, sizeof cs->path, "%s", path ? path : "");
}

/* The file, at most CARBON_FILE_MAX bytes (NUL-ended, malloc'd): a regular file only, so that a
 * FIFO or a device cannot hold the reader. NULL with why. */
static char *read_file(const char *path, char *why, size_t whylen)
{
    struct stat st;
    int fd = input_open_fd(path, &st);
    if (fd < 0) {
        snprintf(why, whylen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *text = NULL;
    if (!S_ISREG(st.st_mode))
        snprintf(why, whylen, "%s: not a regular file", path);
    else if (st.st_size > CARBON_FILE_MAX)
        snprintf(why, whylen, "%s: %lld bytes, more than a carbon file's %d", path,
                 (long long)st.st_size, CARBON_FILE_MAX);
    else if (!(text = malloc((size_t)st.st_size + 1)))
        snprintf(why, whylen, "%s: out of memory", path);
    ssize_t got = text ? read(fd, text, (size_t)st.st_size) : -1;
    close(fd);
    if (text && got < 0) {
        snprintf(why, whylen, "%s: %s", path, strerror(errno));
        free(text);
        return NULL;
    }
    if (text)
        text[got] = 0;
    return text;
}

/* The file's figure: the first line that is not blank or a comment, whatever its length. 0, or
 * -1 with why. */
static int read_figure(const char *path, double *out, char *why, size_t whylen)
{
    char *text = read_file(path, why, whylen);
    if (!text)
        return -1;
    int lineno = 0, rc = -1;
    snprintf(why, whylen, "%s: no figure in it (expected grams of CO2e per kWh)", path);
    for (char *line = text, *next; line; line = next) {
        lineno++;
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        char *p = line + strspn(line, " \t\r"), *end;
        if (*p == '#' || !*p)
            continue;
        double v = strtod(p, &end);
        end += strspn(end, " \t\r");
        int shown = (int)strcspn(p, "\r");
        if (end == p || *end || !(v >= 0 && v <= CARBON_MAX))
            snprintf(why, whylen, "%s:%d: '%.*s' is not a figure in 0..%g g CO2e per kWh", path,
                     lineno, shown < 40 ? shown : 40, p, CARBON_MAX);
        else
            *out = v, rc = 0;
        break;
    }
    free(text);
    return rc;
}

double carbon_grams(const carbon_source *cs, double total_j)
{
    return cs->grams + (total_j - cs->mark_j) / 3.6e6 * cs->value;
}

int carbon_update(carbon_source *cs, double now, double total_j, char *why, size_t whylen)
{
    cs->grams = carbon_grams(cs, total_j);   /* the stretch since the last call */
    cs->mark_j = total_j;
    if (!cs->path[0] || (cs->read_at >= 0 && now - cs->read_at < CARBON_REREAD_S))
        return 0;
    cs->read_at = now;
    double v;
    if (read_figure(cs->path, &v, why, whylen) == 0) {
        cs->value = v, cs->failing = 0;
        return 0;
    }
    int first = !cs->failing;
    cs->failing = 1;
    return first;
}
