/* One machine's model under overlapped averaging ([cluster] overlap = on): the average of a
 * round reaches a machine while it trains the next round, and is applied after that one.
 *
 * Each machine (coordinator and nodes alike) keeps, beside the model W it trains:
 *   base    the global model as far as the averages it applied make it (G)
 *   start   W when its last round started
 * and the rounds whose own change is still in W without their average: `older` (its change is
 * start - base) and `last` (its change is W - start). The average of round q, applied, takes
 * the machine's own change of q out of W and puts the mean change of q in: W = G + the change
 * of its later round, if any. A machine that had no part in q just adds the mean change.
 * Averages are applied in round order, every one, from the round its parameters came at. */
#ifndef FRUGAL_LATE_MODEL_H
#define FRUGAL_LATE_MODEL_H

#include <stddef.h>
#include <stdint.h>

typedef struct late_model {
    long n;
    float *base, *start;
    uint64_t older, last;        /* rounds with their own change in W (0: none) */
    uint64_t synced;             /* the last round whose average is in base */
} late_model;

/* 0, or -1 out of memory. */
int late_open(late_model *m, long nparams);
void late_close(late_model *m);
/* Parameters w from the global model of round `synced` (its average the last in them). */
void late_reset(late_model *m, const float *w, uint64_t synced);
/* Round r starts from w. 0, or -1 with err when the machine already holds two rounds' changes
 * or r is not after them. */
int late_round_begin(late_model *m, const float *w, uint64_t r, char *err, size_t errlen);
/* The change in the round under way: w - start, into out (which may be w). */
void late_change(const late_model *m, const float *w, float *out);
/* The mean change of round q (`mean`) applied to w. 0, or -1 with err when q is not the round
 * after the last one applied. */
int late_apply(late_model *m, uint64_t q, const float *mean, float *w, char *err, size_t errlen);

#endif
