/* How a model is cut into tasks, decided once per run from the model and the job (never from
 * the number of workers, so results do not depend on the machine): the grain (samples per
 * task), filter groups per convolution, which convolutions run fused with their max-pool (and
 * the relu after it) or with the relu after them (on a device, any layer with the relu after
 * it), whether a first convolution reads the data set's bytes in place, and which activations
 * between layers are in channel lanes instead of NCHW. Each choice says why, and
 * the environment variables that forced one are named: summary.json records them. */
#ifndef FRUGAL_PLAN_H
#define FRUGAL_PLAN_H

#include "engine/job/config.h"
#include "engine/model/model.h"

#include <stdio.h>

typedef struct exec_plan {
    int batch, grain, nchunks;       /* chunk k of a batch: samples [k*batch/n, (k+1)*batch/n) */
    int groups[CONFIG_MAX_LAYERS];   /* tasks per chunk of each layer, split by filters */
    int fused[CONFIG_MAX_LAYERS];    /* layers after l (a conv; pinned, any) run in its tasks: 0;
                                      * 1, the max-pool or the relu l+1; 2, the max-pool and the
                                      * relu l+2 */
    int fused_pool[CONFIG_MAX_LAYERS];   /* the max-pool l+1 among them */
    int need_dx[CONFIG_MAX_LAYERS];  /* does a layer before l have parameters? */
    int dx_through_relu[CONFIG_MAX_LAYERS];   /* l's backward takes its input gradient through
                                      * the relu l-1 too (fused into the layer before it), whose
                                      * own backward is left out (plan_relu_left_to_next) */
    int in_lanes[CONFIG_MAX_LAYERS], out_lanes[CONFIG_MAX_LAYERS];   /* l's input, output in
                                      * channel lanes (ops/conv.h): between two layers that
                                      * take them, the first's output (after what is fused into
                                      * it) the second's input */
    char grain_why[96];              /* "job", "auto: ..." */
    char layout_why[96];             /* "auto: ..." or "FRUGAL_LAYOUT=nchw" */
    int bytes_input;                 /* a first convolution reads the data set's bytes */
    char input_why[96];              /* "auto: ..." or "FRUGAL_INPUT=bytes" */
    char conv_path[64];              /* "auto" or "FRUGAL_CONV=im2col" */
    char isa_why[64];                /* the kernel path and, if forced, by what */
    int devices;                     /* device workers */
    int deterministic;               /* tasks pinned per kind and chunk (see trainer_graph.c) */
    int by_energy;                   /* an energy policy weighs devices in joules (devices.h) */
    int pinned;                      /* devices = opencl: tasks a device can run run there, and
                                      * the CPU-only variants (the first layer reading bytes,
                                      * fused convolution and pooling) are off, a relu is fused
                                      * into the layer before it wherever it can be */
} exec_plan;

/* The grain alone (samples per task): the config's, or automatic (see plan.c). */
int plan_grain(const job_config *cfg, const model *m);
void plan_make(exec_plan *p, const job_config *cfg, const model *m, int devices);
/* The first and one-past-last sample of chunk k in a batch of `size` (<= the planned batch):
 * the full batch's chunks, cut at size (a short last batch uses the same parts). */
void plan_chunk(const exec_plan *p, int k, int size, int *s0, int *s1);
/* The layer whose tasks run layer l (a max-pool or relu fused with it), or -1. */
int plan_fused_into(const exec_plan *p, int l);
/* Whether the relu fused into layer l goes back through the input gradient of the layer after
 * it (dx_through_relu) instead of in l's backward. */
int plan_relu_left_to_next(const exec_plan *p, int l);
/* The plan as JSON members (no braces), for summary.json. */
void plan_write_json(const exec_plan *p, const model *m, FILE *f);

#endif
