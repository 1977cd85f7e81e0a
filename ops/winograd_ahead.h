/* Internal to the Winograd convolution (conv_winograd.c): the rows a block's transforms will
 * read or write in memory, brought into the cache while a block's GEMMs run. A forward's input
 * is read again by its backward long after, an argmax and a gradient arrive from far, and an
 * output's or dx's lines are fetched before they are written: the transforms stalled on them
 * (a third of the input transform's time and of the gradient transform's, a quarter of the
 * input adjoint's, in vgg-small's profile). The GEMMs run from L1 and L2 at the FMA peak and
 * leave the memory idle; prefetching a share of those rows before each point's product
 * overlaps the two (docs/kernels.md). */
#ifndef FRUGAL_WINOGRAD_AHEAD_H
#define FRUGAL_WINOGRAD_AHEAD_H

#include "ops/winograd_tiling.h"

#include <stddef.h>

/* Runs of bytes, in the order the transforms use them. Past AHEAD_RUNS runs the rest is left
 * to the hardware (a hint, not a need). Zero n and total to start. */
enum { AHEAD_RUNS = 64 };
typedef struct winograd_ahead {
    const char *at[AHEAD_RUNS];
    size_t bytes[AHEAD_RUNS];
    int n;
    size_t total;
} winograd_ahead;

/* Adds the rows of x (or of a tensor shaped as x: dx) that t's block reads (floats only: a
 * data set's bytes are left alone). */
void winograd_ahead_input_rows(winograd_ahead *a, const tiling *t, conv_input x);

/* Adds the rows of filters [f0, f1) that t's block reads or writes in arrays shaped as the
 * output: the output or its gradient, or pooled, the pooled values' and the argmax's, and a
 * relu's output where relu_y is not NULL. */
void winograd_ahead_output_rows(winograd_ahead *a, const tiling *t, const winograd_grad *arrays,
                                int f0, int f1);

/* Prefetches share `part` of `parts` of a's bytes (the T0 hint, every level: T1, L2 only, ran
 * no faster on Zen 5). */
void winograd_ahead_fetch(const winograd_ahead *a, int part, int parts);

#endif
