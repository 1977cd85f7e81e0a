/* Points every few batches of training: the loss and accuracy over the batches since the last
 * point, at step = the global batch (the epochs before times their batches, plus this one's), in
 * OUTPUT/steps.csv (metrics.csv's companion) and TensorBoard ("loss/train_step",
 * "accuracy/train_step"), as the trainer tallies the batches. So a long epoch shows its progress
 * and a short run draws more than one point per epoch.
 *
 * Written as they come, they may run ahead of the checkpoint: a resumed run keeps the rows up
 * to the checkpoint's step, rewriting steps.csv atomically, and restarts TensorBoard there. */
#ifndef FRUGAL_STEP_LOG_H
#define FRUGAL_STEP_LOG_H

#include "engine/report/tensorboard.h"
#include "engine/train/trainer.h"

#include <stdio.h>

typedef struct step_log {
    FILE *f;
    tb_writer *tb;                 /* NULL: steps.csv only */
    int every;                     /* batches between points */
    long per_epoch;                /* batches in an epoch */
    double start_s;                /* the process's clock when it opened */
    int epoch;
    long pass_first, fed;          /* the trainer's pass followed, and its next batch to read */
    pass_result prev;              /* the pass's totals through the batch before `fed` */
    pass_result window;            /* what the batches since the last point add up to */
} step_log;

/* Batches between points for log_every (0: about 25 points an epoch). */
int step_log_every(int log_every, long per_epoch);
/* Opens path (steps.csv): afresh, or resumed after `steps` global batches (rows past them are
 * dropped, and TensorBoard restarts at the next). 0, or -1 with err. */
int step_log_open(step_log *s, const char *path, tb_writer *tb, int every, long per_epoch,
                  int resumed, long steps, char *err, size_t errlen);
/* A training pass of `epoch` begins. */
void step_log_epoch(step_log *s, int epoch);
/* Writes the points of the batches the trainer has tallied whole since the last call (from
 * the thread that runs the trainer). */
void step_log_follow(step_log *s, const trainer *t);
/* The pass stopped (a signal) after its last batch followed: a point for the batches since the
 * previous one, which the checkpoint counts and a resumed run will not see again. */
void step_log_stopped(step_log *s);
void step_log_close(step_log *s);

#endif
