/* When a run trains (docs/green.md): before each epoch, [job] postpone = on waits while this
 * machine's grid is over the green threshold, no node is green, and the deadline leaves room
 * for the work left (the forecast says when it turns green); participation = budget stops the
 * job, after any batch, before it would overspend (keeping room for the epoch's test pass). After each epoch, what running at once would have
 * emitted is counted (the epoch's joules at the intensity of the time it would have run), and
 * the run's decisions are in its green log (summary.json, green.csv). */
#ifndef FRUGAL_RUN_GREEN_H
#define FRUGAL_RUN_GREEN_H

#include "engine/cluster/coordinator.h"
#include "engine/job/config.h"
#include "engine/job/energy_run.h"
#include "engine/report/green_log.h"

#include <stdatomic.h>
#include <stdio.h>

typedef struct run_green {
    green_log log;
    const job_config *cfg;
    energy_run *er;
    coordinator *cluster;        /* NULL: one machine */
    FILE *out;
    double start, deadline;      /* trace time; deadline < 0: none */
    double postponed;            /* trace seconds waited so far */
    double epoch_at, epoch_s;    /* the epoch's trace start; the last epoch's seconds (0: none) */
    double grams_before;         /* every machine's grams at the epoch's start */
    int epochs_begun;
    long ref_batches;            /* a budget's pace a batch is measured from this batch of the */
    double ref_grams, ref_own;   /*   epoch (-1: not yet): every machine's grams then, this one's */
    double pace_grams, pace_clock;   /* and a second from there in the first epoch on */
    double per_batch;            /* the last pace a batch measured over enough batches (0: none) */
    double start_clock;          /* clock_now_s() at the start: the run's pace of grams */
    int spent;                   /* the budget was found spent */
    long test_batches;           /* an epoch's test pass, in batches */
    double test_grams;           /* the last one's grams; < 0: none yet */
    int here;                    /* this machine in the log */
    int rounds_elsewhere;        /* a coordinator or a gossip peer logs the rounds */
} run_green;

/* cluster: the coordinator, or NULL; gossip: this is a gossip peer (it logs its own rounds). */
void run_green_begin(run_green *g, const job_config *cfg, energy_run *er, coordinator *cluster,
                     int gossip, long test_images, FILE *out);
/* Before epoch e: 0 to train it (maybe after a wait), -1 when a signal came while waiting. */
int run_green_before_epoch(run_green *g, int e, const _Atomic int *stop);
/* While a pass runs (after each batch submitted, `batches` of the epoch so far): 1 when
 * participation = budget and the grams spent, with a margin of the batches in flight, reach
 * the budget (said in the log): the run should stop here. */
int run_green_budget_spent(run_green *g, long batches);
/* After an epoch whose training took `seconds` and `joules` on this machine, and its test pass
 * test_grams. */
void run_green_after_epoch(run_green *g, double seconds, double joules, double test_grams);
void run_green_end(run_green *g);

#endif
