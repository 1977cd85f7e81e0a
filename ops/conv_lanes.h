/* The direct convolution of a network's first layers (few channels, filters by 16) on AVX-512,
 * vectorised along filters: 16 filters to a register, each input value broadcast against
 * them, where conv_direct_impl.h vectorises along output pixels, 4 filters at a time, and
 * pools and scatters gradients through memory. The same contracts as conv_direct_forward_*
 * and conv_direct_backward_filter_* (conv_direct.h); conv.c's direct path takes it on
 * machines with AVX-512 for 3x3 stride-1 layers of up to CONV_LANES_MAX_CHANNELS channels
 * and filters in multiples of CONV_LANES_FILTERS (by the layer's shape alone).
 *
 * Forward gives the direct kernel's bits (the same sums in the same order); forward pools 2x2
 * windows only (others go to the direct kernel, with the same bits). The filter gradient sums
 * samples, rows and columns in order, one order with a pool or without, so the fused pass
 * (any non-overlapping windows, through the argmax) gives the separate passes' bits; its
 * rounding differs from the direct kernel's. */
#ifndef FRUGAL_CONV_LANES_H
#define FRUGAL_CONV_LANES_H

#include "ops/conv.h"
#include "ops/layers.h"

#include <stdint.h>

enum { CONV_LANES_MAX_CHANNELS = 4, CONV_LANES_FILTERS = 16 };

int conv_lanes_forward(const conv_geom *g, conv_input x, const float *wt, const float *bias,
                       float *y, int n0, int n1, int f0, int f1, const pool_geom *pool,
                       int32_t *argmax, int relu);
int conv_lanes_backward_filter(const conv_geom *g, conv_input x, const float *dy, float *dwt,
                               float *dbias, int n0, int n1, int f0, int f1, int accumulate,
                               const pool_geom *pool, const int32_t *argmax,
                               const float *relu_y);

#endif
