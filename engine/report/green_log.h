/* Where and when a run trained with what energy (docs/green.md): each round's participation
 * decision per machine (its grid's intensity, its renewable power and its power then, whether it
 * took part), every decision said with its figures, postponements, and the grams the run emitted
 * against what running at once would have. Written as green.csv (the timeline the report draws)
 * and summary.json's "green" section. Its own lock: the coordinator's threads and the run's
 * write to it. */
#ifndef FRUGAL_GREEN_LOG_H
#define FRUGAL_GREEN_LOG_H

#include "engine/job/config.h"

#include <pthread.h>
#include <stdio.h>

#define GREEN_MAX_MACHINES 66        /* a coordinator and its nodes, or a gossip peer's view */
#define GREEN_MAX_POINTS 16384       /* then every other point is dropped, and rounds thinned */
#define GREEN_MAX_EVENTS 200         /* the first ones kept; all are counted (and printed) */

typedef struct green_point {
    double run_s, trace_t;
    float g_per_kwh, renewable_w, watts;
    short machine;
    char on;
} green_point;

typedef struct green_machine {
    char name[64];
    long rounds_on, rounds_off;
    int on;                          /* its last decision; -1 none yet */
    double grams;                    /* its own last figure (nodes: as they report it) */
} green_machine;

typedef struct green_log {
    pthread_mutex_t lock;
    int used;                        /* anything recorded: the summary has a section */
    const char *policy;
    double start_clock;              /* clock_now_s() at the start */
    green_machine machines[GREEN_MAX_MACHINES];
    int nmachines;
    green_point *points;
    int npoints, stride;             /* a round's points kept when round % stride == 0 or a change */
    char events[GREEN_MAX_EVENTS][340];
    int nevents;
    long events_total;
    int postponements;
    double postponed_trace_s, postponed_s;
    double grams, grams_at_once;     /* the run's and running at once's (-1: not known) */
    char stopped[200];               /* "" or why the job stopped early (a budget spent) */
    const job_config *cfg;           /* the settings behind the decisions */
    double deadline, trace_start, trace_speed;   /* trace time (< 0: none), its clock */
} green_log;

void green_log_init(green_log *g, const char *policy);
void green_log_free(green_log *g);
/* The machine's index (added the first time its name is seen; -1 past GREEN_MAX_MACHINES). */
int green_log_machine(green_log *g, const char *name);
/* Round `round`'s decision for a machine; its decision before (-1: none). */
int green_log_round(green_log *g, unsigned long long round, double trace_t, int machine,
                     double g_per_kwh, double renewable_w, double watts, int on);
/* A decision's line, printed to out (may be NULL) and kept. */
void green_log_event(green_log *g, FILE *out, double trace_t, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void green_log_postponed(green_log *g, double trace_s, double wall_s);
/* green.csv, atomically. */
int green_log_write_csv(green_log *g, const char *path, char *err, size_t errlen);
/* `"green": {...}` members (no braces). */
void green_log_json(FILE *f, green_log *g);

#endif
