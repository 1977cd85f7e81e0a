/* Checkpoints: the model's parameters and optimizer state after an epoch, written atomically
 * (temporary file, fsync, rename, fsync of the folder), so a crash leaves the previous
 * checkpoint or the new one, never a torn file. A CRC guards against corruption. The input shape
 * and every layer's geometry are stored too: a checkpoint alone describes its model. */
#ifndef FRUGAL_CHECKPOINT_H
#define FRUGAL_CHECKPOINT_H

#include "engine/model.h"

#include <stddef.h>

int checkpoint_save(const model *m, int epoch, const char *path, char *err, size_t errlen);
/* Restores into m, which must have the same layers and shapes; *epoch gets the epoch done. */
int checkpoint_load(model *m, int *epoch, const char *path, char *err, size_t errlen);
/* Builds m from the layers and input shape stored in the checkpoint, then restores it. */
int checkpoint_open_model(model *m, int *epoch, const char *path, char *err, size_t errlen);

#endif
