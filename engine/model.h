/* A CNN built from a job's layer list: shapes, parameters and their gradients. Activations and
 * the task graph belong to the trainer (train.c); this file owns what persists across batches. */
#ifndef FRUGAL_MODEL_H
#define FRUGAL_MODEL_H

#include "engine/config.h"
#include "ops/conv.h"
#include "ops/layers.h"

#include <stdint.h>

typedef struct layer {
    layer_type type;
    int in_c, in_h, in_w, out_c, out_h, out_w;   /* per sample; after flatten: c = length */
    long in_size, out_size;                        /* floats per sample */
    conv_geom conv;
    pool_geom pool;
    long nparams;           /* weights then bias, contiguous in params */
    long nweights;
    float *params, *grad, *velocity;
} layer;

typedef struct model {
    int nlayers;
    layer layers[CONFIG_MAX_LAYERS];
    int classes;
    long flops_per_sample;  /* forward + backward, for the automatic task grain */
    long nparams;           /* all layers' parameters */
} model;

/* Shapes from the config for inputs c x h x w (config_check_shapes must have passed). */
int model_build(model *m, const job_config *cfg, int c, int h, int w, int classes, char *err,
                size_t errlen);
/* PyTorch's default initialisation from the seed: the same seed, the same weights. */
void model_init(model *m, uint64_t seed);
void model_free(model *m);

#endif
