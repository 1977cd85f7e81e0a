/* Winograd convolution for 3x3 kernels at stride 1 (Lavin and Gray, "Fast Algorithms for
 * Convolutional Neural Networks", 2016), F(m x m, 3x3) for m = 2 or 4. Each m x m block of
 * outputs comes from an (m + 2)^2 window of input: both are moved to a transform domain of
 * (m + 2)^2 points where the convolution is one matrix product over channels per point
 * (ops_sgemm): 16 multiplies per 4 outputs instead of 36 (m = 2), or 36 per 16 instead of 144
 * (m = 4). All three passes use it: forward, input gradient (the adjoint transforms) and filter
 * gradient (the products summed over tiles). F(2x2)'s coefficients are 0, +-1 and +-1/2, so
 * its result differs from the direct convolution by a few float32 roundings; F(4x4)'s reach 8
 * and 1/24, and its error is several times larger (tests/test_ops.c checks both against
 * PyTorch float64). Same contracts as the conv2d_* functions in conv.h, which choose it. */
#ifndef FRUGAL_CONV_WINOGRAD_H
#define FRUGAL_CONV_WINOGRAD_H

#include "ops/conv.h"

#include <stdint.h>

/* Whether g has the shape these functions compute: 3x3 kernel, stride 1. */
int conv_winograd_fits(const conv_geom *g);

/* The multiplies of F(4x4) per sample and pair of channel and filter: its whole 6 x 6 tiles,
 * wasted outputs past the edge too; where the transforms by lanes take the layer (channels
 * and filters by 16, on AVX2 or AVX-512), an output side of 4k + 1 or 4k + 2 ends in a tile of
 * F(2)'s 4 points instead of 6 (half tiles: winograd_tiling.h), within F(4)'s float32 error. */
int conv_winograd4_points(const conv_geom *g);

/* Whether F(4x4) takes g (all its filters) by lanes: channels and filters by 16 on AVX2 or
 * AVX-512, unless conv_winograd_allow_lanes(0), with which tests compare the variants by
 * columns. */
int conv_winograd4_by_lanes(const conv_geom *g);
void conv_winograd_allow_lanes(int allowed);

/* m: the tile's side, 2 or 4. With a pool (else NULL), forward is fused with the 2x2 stride-2
 * max-pool after the convolution, as conv2d_forward_maxpool is: it writes the pooled output
 * and its argmax, bit for bit what it and maxpool_forward give. With relu, a relu after them
 * too (relu_forward's, on what is stored). */
int conv_winograd_forward(const conv_geom *g, int m, conv_input x, const float *wt,
                          const float *bias, float *y, int n0, int n1, int f0, int f1,
                          const pool_geom *pool, int32_t *argmax, int relu);
int conv_winograd_backward_input(const conv_geom *g, int m, const float *dy, const float *wt,
                                 float *dx, int n0, int n1);
/* The filter gradient of filters [f0, f1) and, with dx (else NULL; all filters only), the
 * input gradient too: conv2d_backward_filter's and conv2d_backward_input's results, bit for
 * bit, with dy transformed once for both. With a pool (else NULL), dy is the gradient of the
 * 2x2 stride-2 max-pool after the convolution, and argmax its forward's: the results are
 * bit for bit those of the gradient maxpool_backward gives. With relu_y (else NULL), the
 * output of a relu after them, that dy goes through first (relu_backward's). */
int conv_winograd_backward(const conv_geom *g, int m, conv_input x, const float *dy,
                           const float *wt, float *dwt, float *dbias, float *dx, int n0, int n1,
                           int f0, int f1, int accumulate, const pool_geom *pool,
                           const int32_t *argmax, const float *relu_y);

#endif
