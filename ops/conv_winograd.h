/* Winograd F(2x2, 3x3) convolution for 3x3 kernels at stride 1 (Lavin and Gray, "Fast
 * Algorithms for Convolutional Neural Networks", 2016). Each 2x2 block of outputs comes from
 * a 4x4 window of input: both are moved to a 16-point transform domain where the convolution
 * is 16 independent matrix products over channels (ops_sgemm), 16 multiplies per 4 outputs
 * instead of 36. All three passes use it: forward, input gradient (the adjoint transforms) and
 * filter gradient (the products summed over tiles). The transforms' coefficients are 0, +-1
 * and +-1/2, so the result differs from the direct convolution by a few float32 roundings
 * (tests/test_ops.c checks it against PyTorch float64). Same contracts as the conv2d_*
 * functions in conv.h, which choose it. */
#ifndef FRUGAL_CONV_WINOGRAD_H
#define FRUGAL_CONV_WINOGRAD_H

#include "ops/conv.h"

/* Whether g has the shape these functions compute: 3x3 kernel, stride 1. */
int conv_winograd_fits(const conv_geom *g);

int conv_winograd_forward(const conv_geom *g, conv_input x, const float *wt, const float *bias,
                          float *y, int n0, int n1, int f0, int f1);
int conv_winograd_backward_input(const conv_geom *g, const float *dy, const float *wt, float *dx,
                                 int n0, int n1);
int conv_winograd_backward_filter(const conv_geom *g, conv_input x, const float *dy, float *dwt,
                                  float *dbias, int n0, int n1, int f0, int f1, int accumulate);

#endif
