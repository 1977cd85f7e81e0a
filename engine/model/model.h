/* A CNN built from a job's layer list: shapes, parameters and their gradients. Activations and
 * the task graph belong to the trainer (engine/train/trainer.c); this file owns what persists across
 * batches. */
#ifndef FRUGAL_MODEL_H
#define FRUGAL_MODEL_H

#include "engine/model/layer.h"

#include <stdint.h>

typedef struct model {
    int nlayers;
    layer layers[CONFIG_MAX_LAYERS];
    int classes;
    double flops_per_sample;  /* forward + backward, for the automatic task grain */
    long nparams;             /* all layers' parameters */
} model;

/* The largest input a model takes, per sample, and the most classes (labels are bytes). */
#define MODEL_MAX_CLASSES 256

/* The model cfg describes for inputs of c x h x w and `classes` classes, in one walk over the
 * layers: each layer's shape rule (errors name its line in the job file), then its parameters.
 * With alloc 0 only the shapes are checked. Returns 0, or -1 with err set (m is then empty). */
int model_build(model *m, const char *path, const layer_config *layers, int nlayers, int c, int h,
                int w, int classes, int alloc, char *err, size_t errlen);
/* The parameters of a model built with alloc 0. Returns 0, or -1 with err set (m is then empty). */
int model_alloc(model *m, char *err, size_t errlen);
/* PyTorch's default initialisation from the seed: the same seed, the same weights. */
void model_init(model *m, uint64_t seed);
void model_free(model *m);

#endif
