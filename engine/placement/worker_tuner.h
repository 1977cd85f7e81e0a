/* How many CPU workers to keep active, learned while training.
 *
 * The engine measures windows of training (seconds, joules, samples) at the current worker count
 * and hands them here. The tuner first explores: each count is measured once, in an order that
 * wastes little (all workers, then halving down to one, then the untried neighbours of the best
 * so far). Then it exploits the count the policy prefers (policy.h), keeps updating that
 * count's figures, and explores again when they drift from what was learned (other load on the
 * machine, a thermal limit) or when the engine says they no longer hold (tuner_forget). What
 * it learned can be saved and loaded, so a later run of the same workload on the same machine
 * starts from it. */
#ifndef FRUGAL_WORKER_TUNER_H
#define FRUGAL_WORKER_TUNER_H

#include "engine/placement/policy.h"

#include <stdio.h>

#define TUNER_MAX_WORKERS 256
#define TUNER_DRIFT 0.3          /* a window this far from the learned figures is a drift... */
#define TUNER_DRIFT_WINDOWS 3    /* ...and this many in a row start a new exploration */

typedef struct worker_tuner {
    policy_limits limits;
    int max_workers;
    int current;                 /* the count being measured or used */
    int exploring;
    int drifted;                 /* windows in a row away from the learned figures */
    int explorations;            /* started so far (the first included) */
    option_figures opt[TUNER_MAX_WORKERS];   /* [k - 1]: k workers */
} worker_tuner;

/* Starts exploring from max_workers (1 .. TUNER_MAX_WORKERS). */
void worker_tuner_init(worker_tuner *t, const policy_limits *l, int max_workers);
/* A window measured at t->current workers. Returns the count to use from now on, with why it
 * changed or what an exploration found (else ""). */
int worker_tuner_observe(worker_tuner *t, double seconds, double joules, long samples, char *why,
                  size_t whylen);
/* The count the policy prefers among those measured (t->current when none is). */
int worker_tuner_best(const worker_tuner *t);
/* Forgets every figure and explores again from t->current: what was measured no longer describes
 * the machine (the devices were parked, say). */
void worker_tuner_forget(worker_tuner *t);

/* Lines "KEY WORKERS S_PER_SAMPLE WATTS SAMPLES": save replaces KEY's lines in what `in` holds
 * (may be NULL) and writes the result to out; load reads KEY's lines as measured figures, ending
 * the exploration when every count it would try is known. Load returns the lines it used. */
int worker_tuner_save(const worker_tuner *t, const char *key, FILE *in, FILE *out);
int worker_tuner_load(worker_tuner *t, const char *key, FILE *in);

#endif
