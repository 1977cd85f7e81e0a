/* Which machines take part in a round ([placement] participation), and whether a job should
 * wait for greener energy ([job] postpone): the decisions of docs/green.md, as functions of
 * figures, shared by the coordinator, gossip peers and `frugal simulate`.
 *
 *   always   every machine
 *   random   each machine drawn with probability random_share (a baseline to compare with)
 *   green    machines at or under green_g_per_kwh, or whose renewable power covers what they
 *            draw; when a deadline is set and those alone would miss it, the others make up
 *            the pace, fewest grams per sample first: one that must run a share f of the time
 *            left runs when its intensity is within the greenest f of its forecast until the
 *            deadline (without a forecast: at once)
 *   budget   budget_g spread over the samples left: machines join, fewest grams per sample
 *            first, while the grams per sample of those taking part stay within what is left
 *            of the budget per sample left; none once the next round would overspend it
 *   backup   every machine, and the round does not wait for the k slowest (the caller's)
 *
 * A member's grams per sample: its joules per sample (watts / images per second), less the share
 * its renewable power covers, at its grid's intensity. Members not measured yet count as cheap:
 * that is how they get measured. */
#ifndef FRUGAL_PARTICIPATION_H
#define FRUGAL_PARTICIPATION_H

#include "engine/job/participation_name.h"

#include <stddef.h>
#include <stdint.h>

struct grid_trace;
typedef struct participant {
    double img_per_s, watts;     /* while computing; 0: not measured yet */
    double g_per_kwh;            /* its grid's intensity now */
    double renewable_w;          /* the renewable power it has now */
    const struct grid_trace *forecast;   /* its grid's forecast, or NULL (unknown) */
    double at, until;            /* trace time now, and of the deadline, on its forecast */
} participant;

typedef struct participation_input {
    participation_policy policy;
    double green_g_per_kwh, budget_g, random_share;
    double left_s;               /* seconds until the deadline (past it: a little above 0); < 0:
                                    none */
    double samples_left;         /* samples the job has still to train */
    double grams_spent;          /* by every machine so far */
    double round_s;              /* how long the next round is expected to take */
    uint64_t seed, round;
} participation_input;

/* Why a member is in or out. */
typedef enum participation_why {
    WHY_ALWAYS, WHY_DRAWN, WHY_GREEN, WHY_SURPLUS, WHY_DEADLINE, WHY_WITHIN_BUDGET, WHY_KEPT,
    WHY_NOT_DRAWN, WHY_DIRTY, WHY_OVER_BUDGET, WHY_BUDGET_SPENT
} participation_why;
const char *participation_why_name(participation_why w);

/* Sets take[i] (1: takes part) and why[i] for n members; member 0 takes part whatever the policy
 * when keep_first (a star's coordinator: it always has a share). Returns how many take part. */
int participation_choose(const participation_input *in, const participant *m, int n,
                         int keep_first, int *take, participation_why *why);

/* backup (after Xu, Neglia and Sebastianelli's dynamic backup workers): how many of the slowest
 * of m models the next round does not wait for, from this round's arrivals (seconds from its
 * start; INFINITY: not come; sorted in place) and the coordinator's own share's end here_s:
 * the k that brings in the most models a second (the coordinator's counted), at most m / 2, a
 * model more kept unless waiting for it costs over 5% of that rate. */
int participation_backup_k(double *arrival_s, int m, double here_s);

/* A member's grams of CO2e per sample (0 when not measured). */
double participation_grams_per_sample(const participant *m);

/* Postponement: at trace time now, with `need_s` trace seconds of work left and the deadline at
 * deadline (trace time), the trace time to resume at: now when the intensity is green now or no
 * green time is forecast within the slack (deadline - need_s), else the first forecast green
 * time within it. `forecast` reads a machine's forecast (grid_trace_ahead). */
struct grid_trace;
double participation_resume_at(const struct grid_trace *forecast, double now, double threshold,
                               double deadline, double need_s);

#endif
