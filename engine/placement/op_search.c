#include "engine/placement/op_search.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define DRIFT 0.3                /* a window this far from the kept figures is a drift... */
#define DRIFT_WINDOWS 3          /* ...and this many in a row search again */

static double rung_value(const op_search *s, double fraction)
{
    double v = s->top * fraction;
    return v < s->floor ? s->floor : v;
}

/* The rung of value v, added if new; -1 when the ladder is full. */
static int rung(op_search *s, double v)
{
    for (int i = 0; i < s->n; i++)
        if (fabs(s->value[i] - v) <= 1e-6 * s->top)
            return i;
    if (s->n == OP_SEARCH_RUNGS)
        return -1;
    s->value[s->n] = v;
    s->fig[s->n] = (option_figures){0};
    s->windows[s->n] = 0;
    return s->n++;
}

void op_search_start(op_search *s, const policy_limits *l, double top, double floor)
{
    int searches = s->searches;
    memset(s, 0, sizeof *s);
    s->limits = *l;
    s->top = top, s->floor = floor < top ? floor : top;
    s->searching = 1;
    s->searches = searches + 1;
    s->current = rung(s, top);
}

double op_search_value(const op_search *s) { return s->value[s->current]; }

int op_search_best(const op_search *s)
{
    int i = policy_choose(&s->limits, s->fig, s->n);
    return i < 0 ? s->current : i;
}

int op_search_fine_ladder(double top, double floor, double *values)
{
    op_search s = {.top = top, .floor = floor < top ? floor : top};
    for (double f = 1; f >= OP_SEARCH_LOWEST - 1e-9; f -= OP_SEARCH_STEP / 2)
        rung(&s, rung_value(&s, f));
    memcpy(values, s.value, sizeof(double) * (size_t)s.n);
    return s.n;
}

/* The next rung to measure: the coarse ladder top down, then the best's neighbours; -1 when
 * the search is over. */
static int next_rung(op_search *s)
{
    for (double f = 1; f >= OP_SEARCH_LOWEST - 1e-9; f -= OP_SEARCH_STEP) {
        int i = rung(s, rung_value(s, f));
        if (i >= 0 && s->windows[i] < OP_SEARCH_WINDOWS)
            return i;
    }
    double best = s->value[op_search_best(s)] / s->top;
    for (int side = -1; side <= 1; side += 2) {
        double f = best + side * OP_SEARCH_STEP / 2;
        if (f > 1 + 1e-9 || f < OP_SEARCH_LOWEST - 1e-9)
            continue;
        int i = rung(s, rung_value(s, f));
        if (i >= 0 && s->windows[i] < OP_SEARCH_WINDOWS)
            return i;
    }
    return -1;
}

static int far(double now, double kept) { return fabs(now - kept) > DRIFT * kept; }

/* While kept: windows far from the figures it was kept on (left as they were, so that a slow
 * drift adds up too) DRIFT_WINDOWS times in a row start a new search. Returns 1 when that
 * changes the value. */
static int keep(op_search *s, double sps, double watts, char *why, size_t n)
{
    const option_figures *o = &s->fig[s->current];
    s->drifted = far(sps, o->s_per_sample) || far(watts, o->watts) ? s->drifted + 1 : 0;
    if (s->drifted < DRIFT_WINDOWS)
        return 0;
    double was = s->value[s->current];
    op_search_start(s, &s->limits, s->top, s->floor);
    snprintf(why, n, "at %.4g the work now measures %.3g ms/sample at %.1f W, away from what "
             "was kept: searching again from %.4g", was, 1e3 * sps, watts, s->top);
    return fabs(was - s->top) > 1e-9;
}

int op_search_observe(op_search *s, double seconds, double joules, long samples, char *why, size_t n)
{
    why[0] = 0;
    if (samples <= 0 || seconds <= 0)
        return 0;
    double sps = seconds / (double)samples, watts = joules / seconds;
    if (!s->searching)
        return keep(s, sps, watts, why, n);
    int was = s->current;
    s->windows[was]++;
    policy_record(&s->fig[was], sps, watts, samples, 1.0 / s->windows[was]);
    int next = next_rung(s);
    if (next >= 0) {
        s->current = next;
        if (next != was)
            snprintf(why, n, "searching: %.4g measured %.3g ms/sample at %.1f W (%.3g J/sample); "
                     "trying %.4g", s->value[was], 1e3 * s->fig[was].s_per_sample,
                     s->fig[was].watts, s->fig[was].watts * s->fig[was].s_per_sample, s->value[next]);
        return next != was;
    }
    s->searching = 0;
    s->current = op_search_best(s);
    const option_figures *b = &s->fig[s->current];
    snprintf(why, n, "policy %s keeps %.4g of %d measured (%.3g ms/sample, %.1f W, %.3g "
             "J/sample)", policy_name(s->limits.policy), s->value[s->current], s->n,
             1e3 * b->s_per_sample, b->watts, b->watts * b->s_per_sample);
    return s->current != was;
}
