#include "energy/carbon_trace.h"

#include "energy/carbon.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Days from 1970-01-01 to the date (proleptic Gregorian; Howard Hinnant's days_from_civil). */
static long days_from_civil(long y, unsigned m, unsigned d)
{
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long)doe - 719468;
}

double carbon_trace_time(const char *text)
{
    int y, mo, d, h, mi, n = 0;
    double s = 0;
    char sep;
    if (sscanf(text, "%4d-%2d-%2d%c%2d:%2d%n", &y, &mo, &d, &sep, &h, &mi, &n) != 6 ||
        (sep != ' ' && sep != 'T'))
        return -1;
    if (text[n] == ':' && sscanf(text + n + 1, "%lf", &s) != 1)
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s >= 61)
        return -1;
    return (double)days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400.0 + h * 3600.0 + mi * 60.0 + s;
}

static int fail(char *err, size_t errlen, const char *path, long line, const char *what)
{
    snprintf(err, errlen, "%s:%ld: %s", path, line, what);
    return -1;
}

static int add(carbon_trace *tr, long *cap, double t, double v)
{
    if (tr->n == *cap) {
        long c = *cap ? *cap * 2 : 1024;
        double *nt = realloc(tr->t, sizeof(double) * (size_t)c);
        if (nt)
            tr->t = nt;
        double *nv = nt ? realloc(tr->value, sizeof(double) * (size_t)c) : NULL;
        if (!nv)
            return -1;
        tr->value = nv, *cap = c;
    }
    tr->t[tr->n] = t, tr->value[tr->n++] = v;
    return 0;
}

/* One line: 0 (a point added, or nothing on it), 1 (a header), -1 with err. */
static int parse_line(carbon_trace *tr, long *cap, char *line, const char *path, long no, char *err,
                      size_t errlen)
{
    line[strcspn(line, "\r\n#")] = 0;
    char *comma = strrchr(line, ',');
    if (!comma)
        return line[strspn(line, " \t")] ? fail(err, errlen, path, no, "not TIME,VALUE") : 0;
    *comma = 0;
    char *end;
    double v = strtod(comma + 1, &end), t = carbon_trace_time(line);
    if (t < 0) {
        t = strtod(line, &end);
        if (end == line || *end)
            return no == 1 ? 1 : fail(err, errlen, path, no, "a time that is neither YYYY-MM-DD HH:MM[:SS] nor seconds");
    }
    if (!isfinite(v) || v < 0 || v > CARBON_MAX)
        return no == 1 ? 1 : fail(err, errlen, path, no, "a carbon intensity outside 0..5000 g/kWh");
    if (tr->n && t <= tr->t[tr->n - 1])
        return fail(err, errlen, path, no, "a time not after the line before's");
    return add(tr, cap, t, v) ? fail(err, errlen, path, no, "out of memory") : 0;
}

int carbon_trace_load(carbon_trace *tr, const char *path, char *err, size_t errlen)
{
    memset(tr, 0, sizeof *tr);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char line[512];
    long no = 0, cap = 0;
    int rc = 0;
    while (!rc && fgets(line, sizeof line, f))
        rc = parse_line(tr, &cap, line, path, ++no, err, errlen) < 0 ? -1 : 0;
    fclose(f);
    if (!rc && tr->n == 0)
        rc = fail(err, errlen, path, no, "no TIME,VALUE line");
    if (rc)
        carbon_trace_free(tr);
    return rc;
}

void carbon_trace_free(carbon_trace *tr)
{
    free(tr->t);
    free(tr->value);
    memset(tr, 0, sizeof *tr);
}

double carbon_trace_at(const carbon_trace *tr, double t)
{
    long lo = 0, hi = tr->n - 1;   /* the last point at or before t */
    if (t <= tr->t[0])
        return tr->value[0];
    while (lo < hi) {
        long mid = (lo + hi + 1) / 2;
        if (tr->t[mid] <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    return tr->value[lo];
}
