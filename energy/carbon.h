/* The grid's carbon intensity (grams of CO2e per kWh): a fixed figure, a file that another
 * program rewrites as the grid changes (a follow-the-sun schedule, a grid operator's feed), or a
 * trace replayed (energy/grid_trace.h) with, maybe, the renewable power the machine has of its
 * own: joules that power covers count no grams. The file holds one number; lines starting with
 * '#' are comments. It is re-read at most every CARBON_REREAD_S seconds, so a change takes
 * effect within that long. */
#ifndef FRUGAL_ENERGY_CARBON_H
#define FRUGAL_ENERGY_CARBON_H

#include "energy/grid_trace.h"

#include <stddef.h>

#define CARBON_REREAD_S 5.0
#define CARBON_MAX 5000.0
#define CARBON_FILE_MAX (64 * 1024)   /* bytes: a figure and its comments */

typedef struct carbon_source {
    double value;                    /* the figure in use */
    char path[512];                  /* "": fixed */
    double read_at;                  /* when the file was last read; < 0: never */
    int failing;                     /* the last read failed (said once until it works again) */
    double grams, mark_j;            /* CO2e of the joules up to the meter total mark_j */
    grid_trace trace, renewable;     /* replayed (n = 0: none) */
    grid_replay replay;
    double renewable_w;              /* the renewable power now (0 without its trace) */
    double mark_t;                   /* the `now` of the last update; < 0: none yet */
} carbon_source;

void carbon_init(carbon_source *cs, double fixed_g_per_kwh, const char *path);
/* The figure at time now (seconds, any clock that only goes forward), with total_j the energy
 * meter's total then: the joules since the last call are counted at the figure in force until
 * now, before the file is re-read. When the file cannot be read or holds no number in
 * 0..CARBON_MAX, the last figure stays and, the first time, why is set (naming the file and
 * line) and 1 returned; otherwise 0. */
int carbon_update(carbon_source *cs, double now, double total_j, char *why, size_t whylen);
/* Follows traces instead (either path may be NULL): replayed from trace time `start` at `speed`
 * trace seconds a second, from the process's first call (every source of a process on one
 * clock). 0, or -1 with err naming the file and line. */
int carbon_follow_traces(carbon_source *cs, const char *carbon_path, const char *renewable_path,
                         double start, double speed, char *err, size_t errlen);
int carbon_follows_traces(const carbon_source *cs);
/* The trace time now (seconds since the epoch, UTC, for dated traces; the real time when no
 * trace is followed), and trace seconds a second (1 when none is). */
double carbon_trace_now(const carbon_source *cs);
double carbon_trace_speed(const carbon_source *cs);
void carbon_free(carbon_source *cs);
/* Grams of CO2e from meter total 0 to total_j, each stretch of joules at the
 * figure in force when it was spent. */
double carbon_grams(const carbon_source *cs, double total_j);

#endif
