/* A grid's figures over time: its carbon intensity (grams of CO2e per kWh) or the renewable power
 * a machine has (watts of its own solar panels or wind share). CSV lines "TIME,VALUE[,FORECAST]"
 * (a header line is skipped; '#' starts a comment), TIME either "YYYY-MM-DD HH:MM[:SS]" (UTC) or
 * seconds; FORECAST, where the file gives one on every line, is what was forecast for that time
 * and is what reading ahead sees (otherwise the trace is its own forecast). A value holds from
 * its time until the next one's; before the first, the first; after the last, the last.
 *
 * What `frugal simulate` counts a site's joules at, what a machine replays while it trains
 * ([energy] carbon_trace, renewable_trace: at trace_speed times real time from trace_start), and
 * what participation and postponement read ahead. ../shared/data/grid/ holds real ones;
 * tools/grid_renewable.sh makes a watts trace from a production file. */
#ifndef FRUGAL_ENERGY_GRID_TRACE_H
#define FRUGAL_ENERGY_GRID_TRACE_H

#include <stddef.h>

#define GRID_TRACE_MAX_BYTES (64 << 20)
#define GRID_WATTS_MAX 1e9

typedef enum grid_quantity { GRID_CARBON, GRID_RENEWABLE_WATTS } grid_quantity;

typedef struct grid_trace {
    double *t;                   /* seconds (since the epoch for dated lines), increasing */
    double *value;
    double *forecast;            /* NULL: none given */
    long n;
} grid_trace;

/* 0, or -1 with err naming the file and line (a time out of order, a value outside the
 * quantity's range: 0..CARBON_MAX g/kWh or 0..GRID_WATTS_MAX W, a line that is neither). */
int grid_trace_load(grid_trace *tr, const char *path, grid_quantity q, char *err, size_t errlen);
void grid_trace_free(grid_trace *tr);
/* The value in force at time t, and what was forecast for t. */
double grid_trace_at(const grid_trace *tr, double t);
double grid_trace_ahead(const grid_trace *tr, double t);
/* The time-weighted mean over [t0, t1] of the values, and of the forecast. */
double grid_trace_mean(const grid_trace *tr, double t0, double t1);
double grid_trace_mean_ahead(const grid_trace *tr, double t0, double t1);
/* The value under which the forecast stays for a share q (0..1) of [t0, t1]. */
double grid_trace_quantile_ahead(const grid_trace *tr, double t0, double t1, double q);
/* The first time in [t, until] whose forecast is at most limit; -1 when none is. */
double grid_trace_next_at_most(const grid_trace *tr, double t, double limit, double until);
/* "YYYY-MM-DD HH:MM[:SS]" (or with a 'T') as seconds since the epoch, UTC; -1 when it is not one. */
double grid_trace_time(const char *text);

/* A trace replayed: trace time = start + speed x (clock - origin), origin a clock_now_s(). */
typedef struct grid_replay {
    double start, speed, origin;
} grid_replay;
double grid_replay_time(const grid_replay *r, double clock_now);
/* Seconds of the clock that `trace_seconds` of trace time take. */
double grid_replay_wall(const grid_replay *r, double trace_seconds);

#endif
