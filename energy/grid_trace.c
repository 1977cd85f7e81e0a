#include "energy/grid_trace.h"

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

double grid_trace_time(const char *text)
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

static int grow(grid_trace *tr, long *cap)
{
    long c = *cap ? *cap * 2 : 1024;
    double **arrays[3] = {&tr->t, &tr->value, &tr->forecast};
    for (int i = 0; i < 3; i++) {
        if (i == 2 && !tr->forecast && tr->n)
            break;
        double *p = realloc(*arrays[i], sizeof(double) * (size_t)c);
        if (!p)
            return -1;
        *arrays[i] = p;
    }
    *cap = c;
    return 0;
}

static double quantity_max(grid_quantity q) { return q == GRID_CARBON ? CARBON_MAX : GRID_WATTS_MAX; }

static const char *out_of_range(grid_quantity q)
{
    return q == GRID_CARBON ? "a carbon intensity outside 0..5000 g/kWh"
                            : "a renewable power outside 0..1e9 W";
}

/* A number running to the end of its field: 0, or -1. */
static int field_number(const char *text, grid_quantity q, double *out)
{
    char *end;
    *out = strtod(text, &end);
    end += strspn(end, " \t");
    return end != text && !*end && isfinite(*out) && *out >= 0 && *out <= quantity_max(q) ? 0 : -1;
}

/* One line: 0 (a point added, or nothing on it), 1 (a header), -1 with err. */
static int parse_line(grid_trace *tr, long *cap, char *line, grid_quantity q, const char *path,
                      long no, char *err, size_t errlen)
{
    line[strcspn(line, "\r\n#")] = 0;
    char *value = strchr(line, ',');
    if (!value)
        return line[strspn(line, " \t")] ? fail(err, errlen, path, no, "not TIME,VALUE") : 0;
    *value++ = 0;
    char *forecast = strchr(value, ',');
    if (forecast)
        *forecast++ = 0;
    char *end;
    double v, f = 0, t = grid_trace_time(line);
    if (t < 0) {
        t = strtod(line, &end);
        if (end == line || *end)
            return no == 1 ? 1 : fail(err, errlen, path, no, "a time that is neither YYYY-MM-DD HH:MM[:SS] nor seconds");
    }
    if (field_number(value, q, &v) || (forecast && field_number(forecast, q, &f)))
        return no == 1 ? 1 : fail(err, errlen, path, no, out_of_range(q));
    if (tr->n && t <= tr->t[tr->n - 1])
        return fail(err, errlen, path, no, "a time not after the line before's");
    if (tr->n && !tr->forecast != !forecast)
        return fail(err, errlen, path, no, "a forecast on some lines only (TIME,VALUE,FORECAST on "
                                           "every line, or on none)");
    if (!tr->n && !forecast)   /* the first point decides whether there are forecasts */
        free(tr->forecast), tr->forecast = NULL;
    if (tr->n == *cap && grow(tr, cap))
        return fail(err, errlen, path, no, "out of memory");
    tr->t[tr->n] = t, tr->value[tr->n] = v;
    if (tr->forecast)
        tr->forecast[tr->n] = f;
    tr->n++;
    return 0;
}

int grid_trace_load(grid_trace *tr, const char *path, grid_quantity q, char *err, size_t errlen)
{
    memset(tr, 0, sizeof *tr);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char line[512];
    long no = 0, cap = 0;
    int rc = grow(tr, &cap) ? fail(err, errlen, path, 0, "out of memory") : 0;
    while (!rc && fgets(line, sizeof line, f))
        rc = parse_line(tr, &cap, line, q, path, ++no, err, errlen) < 0 ? -1 : 0;
    fclose(f);
    if (!rc && tr->n == 0)
        rc = fail(err, errlen, path, no, "no TIME,VALUE line");
    if (rc)
        grid_trace_free(tr);
    return rc;
}

void grid_trace_free(grid_trace *tr)
{
    free(tr->t);
    free(tr->value);
    free(tr->forecast);
    memset(tr, 0, sizeof *tr);
}

/* The last point at or before t (0 before the first). */
static long point_at(const grid_trace *tr, double t)
{
    long lo = 0, hi = tr->n - 1;
    if (t <= tr->t[0])
        return 0;
    while (lo < hi) {
        long mid = (lo + hi + 1) / 2;
        if (tr->t[mid] <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

double grid_trace_at(const grid_trace *tr, double t) { return tr->value[point_at(tr, t)]; }

static double ahead_of(const grid_trace *tr, long i) { return tr->forecast ? tr->forecast[i] : tr->value[i]; }

double grid_trace_ahead(const grid_trace *tr, double t) { return ahead_of(tr, point_at(tr, t)); }

/* The time-weighted mean of the values (or of the forecast) over [t0, t1]. */
static double mean_of(const grid_trace *tr, double t0, double t1, int forecast)
{
    const double *v = forecast && tr->forecast ? tr->forecast : tr->value;
    if (t1 <= t0)
        return v[point_at(tr, t0)];
    double sum = 0;
    long first = point_at(tr, t0);
    for (long i = first; ; i++) {
        double from = i == first ? t0 : tr->t[i];
        double to = i + 1 < tr->n && tr->t[i + 1] < t1 ? tr->t[i + 1] : t1;
        sum += (to - from) * v[i];
        if (to >= t1)
            break;
    }
    return sum / (t1 - t0);
}

double grid_trace_mean_ahead(const grid_trace *tr, double t0, double t1) { return mean_of(tr, t0, t1, 1); }

double grid_trace_mean(const grid_trace *tr, double t0, double t1) { return mean_of(tr, t0, t1, 0); }

typedef struct span { double value, seconds; } span;

static int by_value(const void *a, const void *b)
{
    double x = ((const span *)a)->value, y = ((const span *)b)->value;
    return (x > y) - (x < y);
}

double grid_trace_quantile_ahead(const grid_trace *tr, double t0, double t1, double q)
{
    long first = point_at(tr, t0), last = t1 > t0 ? point_at(tr, t1) : first;
    span *s = malloc(sizeof *s * (size_t)(last - first + 1));
    if (!s)
        return grid_trace_ahead(tr, t0);
    long n = 0;
    double total = 0;
    for (long i = first; i <= last; i++) {
        double from = i == first ? t0 : tr->t[i], to = i < last ? tr->t[i + 1] : t1;
        s[n++] = (span){ahead_of(tr, i), to > from ? to - from : 0};
        total += s[n - 1].seconds;
    }
    qsort(s, (size_t)n, sizeof *s, by_value);
    double upto = 0, v = s[n - 1].value;
    for (long i = 0; i < n; i++) {
        upto += s[i].seconds;
        if (upto >= q * total) {
            v = s[i].value;
            break;
        }
    }
    free(s);
    return v;
}

double grid_trace_next_at_most(const grid_trace *tr, double t, double limit, double until)
{
    long first = point_at(tr, t);
    for (long i = first; i < tr->n; i++) {
        double from = i == first ? t : tr->t[i];
        if (from > until)
            return -1;
        if (ahead_of(tr, i) <= limit)
            return from;
    }
    return -1;
}

double grid_replay_time(const grid_replay *r, double clock_now)
{
    return r->start + r->speed * (clock_now - r->origin);
}

double grid_replay_wall(const grid_replay *r, double trace_seconds)
{
    return r->speed > 0 ? trace_seconds / r->speed : trace_seconds;
}
