#include "energy/carbon.h"

#include "common/clock.h"
#include "common/input_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void carbon_init(carbon_source *cs, double fixed_g_per_kwh, const char *path)
{
    memset(cs, 0, sizeof *cs);
    cs->value = fixed_g_per_kwh;
    cs->read_at = -1, cs->mark_t = -1;
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

int carbon_follow_traces(carbon_source *cs, const char *carbon_path, const char *renewable_path,
                         double start, double speed, char *err, size_t errlen)
{
    if ((carbon_path && grid_trace_load(&cs->trace, carbon_path, GRID_CARBON, err, errlen)) ||
        (renewable_path &&
         grid_trace_load(&cs->renewable, renewable_path, GRID_RENEWABLE_WATTS, err, errlen))) {
        carbon_free(cs);
        return -1;
    }
    static double origin = -1;   /* one clock for every source of the process */
    if (origin < 0)
        origin = clock_now_s();
    cs->replay = (grid_replay){start, speed, origin};
    cs->path[0] = 0;   /* the trace, not a file, gives the figure */
    return 0;
}

int carbon_follows_traces(const carbon_source *cs) { return cs->trace.n || cs->renewable.n; }

double carbon_trace_now(const carbon_source *cs)
{
    if (!carbon_follows_traces(cs)) {   /* live: the real time */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    }
    return grid_replay_time(&cs->replay, clock_now_s());
}

double carbon_trace_speed(const carbon_source *cs)
{
    return carbon_follows_traces(cs) && cs->replay.speed > 0 ? cs->replay.speed : 1;
}

void carbon_free(carbon_source *cs)
{
    grid_trace_free(&cs->trace);
    grid_trace_free(&cs->renewable);
}

/* Traces: the stretch since the last call, less what the renewable power covered, at the
 * intensity in force; then the figures of now. */
static void follow(carbon_source *cs, double now, double total_j)
{
    double joules = total_j - cs->mark_j, covered = 0;
    if (cs->mark_t >= 0 && now > cs->mark_t)
        covered = cs->renewable_w * (now - cs->mark_t);
    cs->grams += (joules > covered ? joules - covered : 0) / 3.6e6 * cs->value;
    cs->mark_j = total_j, cs->mark_t = now;
    double t = carbon_trace_now(cs);
    if (cs->trace.n)
        cs->value = grid_trace_at(&cs->trace, t);
    if (cs->renewable.n)
        cs->renewable_w = grid_trace_at(&cs->renewable, t);
}

int carbon_update(carbon_source *cs, double now, double total_j, char *why, size_t whylen)
{
    if (carbon_follows_traces(cs)) {
        follow(cs, now, total_j);
        return 0;
    }
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
