/* A grid's carbon intensity over time (grams of CO2e per kWh): the time series a grid operator
 * publishes, as CSV lines "TIME,VALUE" (a header line is skipped; '#' starts a comment), TIME
 * either "YYYY-MM-DD HH:MM[:SS]" (UTC) or seconds. A value holds from its time until the next
 * one's; before the first, the first; after the last, the last. What `frugal simulate` counts
 * a site's joules at, and what a schedule reads ahead (../shared/data/grid/ holds real ones). */
#ifndef FRUGAL_ENERGY_CARBON_TRACE_H
#define FRUGAL_ENERGY_CARBON_TRACE_H

#include <stddef.h>

#define CARBON_TRACE_MAX_BYTES (64 << 20)

typedef struct carbon_trace {
    double *t;                   /* seconds (since the epoch for dated lines), increasing */
    double *value;
    long n;
} carbon_trace;

/* 0, or -1 with err naming the file and line (a time out of order, a value outside 0..CARBON_MAX,
 * a line that is neither). */
int carbon_trace_load(carbon_trace *tr, const char *path, char *err, size_t errlen);
void carbon_trace_free(carbon_trace *tr);
/* The intensity in force at time t. */
double carbon_trace_at(const carbon_trace *tr, double t);
/* "YYYY-MM-DD HH:MM[:SS]" (or with a 'T') as seconds since the epoch, UTC; -1 when it is not one. */
double carbon_trace_time(const char *text);

#endif
