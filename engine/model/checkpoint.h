/* Checkpoints: the model's parameters and optimizer state, where in the run they were taken, and
 * the run's log (the engine's record of every epoch so far, opaque here), written atomically
 * (temporary file, fsync, rename, fsync of the folder), so a crash leaves the previous
 * checkpoint or the new one, never a torn file. A CRC guards against corruption, and a
 * checkpoint is read as if a stranger wrote it: every field is checked before it is used. The
 * input shape and every layer's configuration are stored too: a checkpoint alone describes its
 * model. */
#ifndef FRUGAL_CHECKPOINT_H
#define FRUGAL_CHECKPOINT_H

#include "engine/model/model.h"

#include <stddef.h>
#include <stdint.h>

#define CHECKPOINT_MAX_EPOCHS 1000000
#define CHECKPOINT_MAX_LOG (64u << 20)

typedef struct checkpoint_state {
    int epoch;        /* epochs completed */
    int batch;        /* batches of the next epoch completed (0: taken at an epoch's end) */
    char *log;        /* the run's log, log_len bytes (plus a 0); the caller frees it */
    size_t log_len;
} checkpoint_state;

int checkpoint_save(const model *m, const checkpoint_state *st, const char *path, char *err,
                    size_t errlen);
/* Restores into m, which must have the same layers and shapes (a model built from the job). */
int checkpoint_load(model *m, checkpoint_state *st, const char *path, char *err, size_t errlen);
/* Builds m from the layers and input shape stored in the checkpoint, then restores it. */
int checkpoint_open_model(model *m, checkpoint_state *st, const char *path, char *err,
                          size_t errlen);
/* The decoder under both, on a checkpoint's bytes; `name` names it in errors. A bad checkpoint
 * leaves m as it was (build 0) or empty (build 1). */
int checkpoint_decode(const uint8_t *buf, size_t len, const char *name, model *m, int build,
                      checkpoint_state *st, char *err, size_t errlen);

#endif
