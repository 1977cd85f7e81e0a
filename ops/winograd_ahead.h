/* Internal to the Winograd convolution (conv_winograd.c): the activations a block's transforms
 * will read, brought into the cache while the block before runs its GEMMs. A forward's input
 * is read again by its backward long after, and a gradient arrives from the layer after's
 * backward: both from memory, where the transforms stalled on them (a third of the input
 * transform's time and of the gradient transform's in vgg-small's profile). The GEMMs run from
 * the cache at the FMA peak and leave the memory idle; prefetching the next block's rows
 * there, a share before each point's product, overlaps the two. */
#ifndef FRUGAL_WINOGRAD_AHEAD_H
#define FRUGAL_WINOGRAD_AHEAD_H

#include "ops/winograd_tiling.h"

#include <stddef.h>

/* Runs of bytes, in the order the transforms read them. Past AHEAD_RUNS runs the rest is left
 * to the hardware (a hint, not a need). */
enum { AHEAD_RUNS = 64 };
typedef struct winograd_ahead {
    const char *at[AHEAD_RUNS];
    size_t bytes[AHEAD_RUNS];
    int n;
    size_t total;
} winograd_ahead;

/* The input rows that the tiles of t's block read from x (floats: bytes are left alone). */
void winograd_ahead_input(winograd_ahead *a, const tiling *t, conv_input x);

/* The output gradient's rows (pooled: the pooled gradient's and its argmax's; through a relu:
 * also its output's) that t's block reads for filters [f0, f1). */
void winograd_ahead_gradient(winograd_ahead *a, const tiling *t, const winograd_grad *dy,
                             int f0, int f1);

/* Share `part` of `parts` of a's bytes, into the second-level cache. */
void winograd_ahead_fetch(const winograd_ahead *a, int part, int parts);

#endif
