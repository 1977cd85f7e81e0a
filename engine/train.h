/* Training a model on the runtime: each batch becomes a task graph of per-chunk tasks (a chunk is
 * a run of samples) for every layer, forward and backward, with no barrier between layers, and
 * per-chunk partial gradients reduced in a fixed order, so the same seed gives the same weights
 * whatever the number of workers. */
#ifndef FRUGAL_TRAIN_H
#define FRUGAL_TRAIN_H

#include "engine/config.h"
#include "engine/dataset.h"
#include "engine/model.h"
#include "runtime/runtime.h"

typedef struct epoch_result {
    double train_loss, train_acc;
    double test_loss, test_acc;      /* NaN without a test set */
    double seconds, images_per_s;
    double task_share;               /* share of worker time inside task bodies */
    long samples;
} epoch_result;

typedef struct trainer trainer;

/* Called on the submitting thread between batches: samples whose loss is computed so far. */
typedef void (*progress_fn)(void *ctx, int epoch, long done, long total, double seconds);

/* The grain (samples per task): the config's, or enough samples for ~1 MFLOP of work. */
int train_grain(const job_config *cfg, const model *m);

trainer *trainer_create(const job_config *cfg, model *m, rt_runtime *rt, const dataset *train,
                        const dataset *test, char *err, size_t errlen);
/* One pass over the training set in the order shuffled from (seed, epoch), then the test set.
 * Returns 0, or -1 with err set (a task failed, e.g. a loss that is not finite). */
int trainer_epoch(trainer *t, int epoch, epoch_result *out, char *err, size_t errlen);
void trainer_on_progress(trainer *t, progress_fn fn, void *ctx);
/* A forward pass over d (images shaped as in training): mean loss, accuracy, and each sample's
 * predicted class in predictions (if not NULL, d->n entries). */
int trainer_evaluate(trainer *t, const dataset *d, int *predictions, double *loss, double *acc,
                     char *err, size_t errlen);
void trainer_destroy(trainer *t);

#endif
