/* Layer types. Everything frugal knows about a type lives in its own file (engine/model/layer_*.c,
 * after darknet's src/NAME_layer.c): its job-file keys and their defaults, its shape rule and
 * parameter count, and its task bodies. Checkpoints store a layer as its layer_config, whose
 * fields the type's keys name; the trainer (engine/train/trainer_graph.c) builds every type's tasks the same
 * way from the roles its accesses play (layer_task.at).
 *
 * A task body finds its data through its accesses only (rt_ptr); the layer it works on is
 * described by a `layer`, which holds shapes, never data. */
#ifndef FRUGAL_LAYER_H
#define FRUGAL_LAYER_H

#include "engine/model/layer_config.h"
#include "ops/conv.h"
#include "ops/layers.h"
#include "runtime/runtime.h"

#include <stddef.h>

#define PIXEL_SCALE (1.0f / 255.0f)   /* bytes 0..255 to inputs 0..1 */

typedef struct layer_class layer_class;
struct layer_place;

/* A layer of a model: its type, its configuration, and the shapes that follow from its input. */
typedef struct layer {
    const layer_class *cls;
    layer_config cfg;
    int in_c, in_h, in_w, out_c, out_h, out_w;   /* per sample; flat: c = length, h = w = 1 */
    int flat;                                    /* its output is a vector (flatten, dense) */
    long in_size, out_size;                      /* floats per sample, below 2^31 */
    conv_geom conv;
    pool_geom pool;
    long nweights, nparams;                      /* weights then bias, contiguous */
    double flops;                                /* per sample, forward and backward */
    float *params, *grad, *velocity;
} layer;

/* Where a layer stands in its model, for shape rules that depend on it. */
typedef struct layer_place {
    int index, count;              /* position, and the model's number of layers */
    int in_flat;                   /* the input is a vector (after flatten or dense) */
    const layer *prev;             /* NULL for the first */
    int classes;                   /* of the data */
} layer_place;

/* What the backward task of a layer reads besides the output gradient. */
enum { READS_INPUT = 1, READS_OUTPUT = 2, READS_AUX = 4 };

struct layer_class {
    const char *name;              /* its [section] in job files */
    layer_type type;
    const key_spec *keys;          /* ends with a NULL name */
    void (*defaults)(layer_config *lc);
    /* After the job file: a default that depends on other keys, or what is missing (NULL if
     * nothing). */
    const char *(*complete)(layer_config *lc);
    /* The shape rule: from l->cfg and l->in_*, fills the output shape, geometry and parameter
     * counts; a reason in why when the layer cannot be where it is. */
    int (*plan)(layer *l, const struct layer_place *at, char *why, size_t n);
    rt_kind *forward, *backward;   /* NULL: no task (flatten is a view of its input) */
    int backward_reads;
    size_t aux_bytes;              /* per output value, kept from forward to backward (argmax) */

    /* What the model, the plan and the trainer ask of a type, instead of naming it. */
    int view;                      /* its output is its input reshaped: no buffer, no gradient */
    int loss;                      /* computes the loss: the model's last layer */
    int reads_bytes;               /* first in a model, may read the data set's bytes in place */
    int max_pool;                  /* takes a window's maximum (commutes with `monotone` ones) */
    int monotone;                  /* f(max(x)) = max(f(x)), also for the gradient: before a
                                      max-pool it runs after it, on a quarter of the data */
    int gates_by_output;           /* backward keeps the gradient where its output is positive
                                      and zeroes it elsewhere (a relu) */
    int gates_input_gradient;      /* its fused backward can do that for a gates_by_output layer
                                      whose output is its input, as it writes its input gradient
                                      (layer_task.dx_through_relu) */
    /* The kernel path of a pass (a conv_pass), for layers with a choice of kernels; NULL: none. */
    conv_strategy (*kernel_path)(const layer *l, int pass);
    /* The share of a pass's multiply-adds its kernel executes (Winograd's fewer, its wasted
     * outputs included: conv_executed_share); NULL: all of them. */
    double (*executed_share)(const layer *l, int pass);
    /* Tasks per chunk, its units (filters, outputs) split between them: the configured number
     * (0: auto). NULL: one. */
    int (*groups)(const layer *l, int configured, int grain);
    /* Whether the max-pool after it (next) may run inside its tasks (with its input gradient
     * when need_dx). NULL: never. */
    int (*fuses_pool)(const layer *l, const layer *next, int need_dx);
    /* Its tasks when fused so, and the input gradient as a task of its own (split by groups). */
    rt_kind *fused_forward, *fused_backward, *backward_input;
    /* Whether a relu right after it may run inside its tasks (with its input gradient when
     * need_dx; before a max-pool the relu runs after the pool instead, fused_forward's). NULL:
     * never. */
    int (*fuses_relu)(const layer *l, int need_dx);
    rt_kind *relu_fused_forward, *relu_fused_backward;
    /* Whether its tasks can take their input (CONV_LANES_INPUT) or give their output
     * (CONV_LANES_OUTPUT) in channel lanes (ops/conv.h), with the input gradient when need_dx,
     * in `groups` tasks a chunk, with the max-pool pool in them (else NULL). NULL: NCHW only. */
    int (*lanes_layout)(const layer *l, int which, int need_dx, int groups, const layer *pool);
};

const layer_class *layer_class_of(layer_type t);
const layer_class *layer_class_named(const char *name);
const char *layer_name(layer_type t);

/* The arguments of every layer task: the layer, the chunk, and which access plays which role
 * (an index into the task's accesses, or -1). A chunk's activation written by a convolution in
 * filter groups has a part per group; a task reading it names every part, and `in` is the first,
 * which starts where the chunk starts. */
typedef struct layer_task {
    const layer *l;
    int n;                          /* samples in the chunk */
    int f0, f1;                     /* convolutions: the filters this task computes */
    float scale;                    /* the loss: 1 / samples in the batch (a mean loss) */
    signed char bytes_input;        /* the input is the data set's bytes, through `samples` */
    signed char want_dx;            /* backward: the input gradient too */
    signed char relu;               /* a fused convolution: a relu after its max-pool */
    signed char dx_through_relu;    /* backward: the input gradient through the relu before */
    signed char in_lanes, out_lanes;   /* the input, the output in channel lanes (ops/conv.h) */
    struct { signed char in, out, aux, params, dy, dx, part, samples, labels, stats; } at;
} layer_task;

/* What the loss of a chunk comes to (written by softmax_xent's task). */
typedef struct chunk_stats {
    double loss;                    /* summed over the chunk's samples */
    int correct, samples;
} chunk_stats;

/* A kernel's failure (out of scratch memory) as a task failure. */
int layer_kernel_status(const rt_ctx *ctx, int rc);

/* Overflow-checked size arithmetic for shape rules: a * b, and whether it stays at most max. */
int layer_size_mul(long a, long b, long max, long *out);

/* The largest tensor one sample may have: kernels index a sample's values with 32-bit ints. */
#define LAYER_MAX_VALUES 0x7fffffffL

extern const layer_class layer_conv, layer_relu, layer_maxpool, layer_flatten, layer_dense,
    layer_softmax_xent;

#endif
