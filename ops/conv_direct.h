/* Direct convolutions for stride 1, no im2col. conv_direct_*: vectorised along output pixels,
 * no packing; it wins where im2col + GEMM loses, on layers with few filters (DAHL's 4) whose
 * GEMMs are too thin to fill a register tile. conv_wide_* (conv_wide_impl.h): vectorised along
 * filters, for many channels and filters. One source of each compiled once per ISA. Same
 * contracts as the conv2d_* functions in conv.h (return values included), which choose among
 * them; with a pool (else NULL), forward pools its output and backward-filter takes the pooled
 * gradient (through the relu after the pool where relu_y, the pooled output, is not NULL);
 * with relu, forward's output (pooled or not) goes through a relu, and without a pool
 * backward-filter's gradient goes through it where relu_y, the relu's output, is not NULL; as
 * the fused functions of conv.h do. */
#ifndef FRUGAL_CONV_DIRECT_H
#define FRUGAL_CONV_DIRECT_H

#include "ops/conv.h"
#include "ops/layers.h"

#include <stdint.h>

#define CONV_DIRECT_DECLARE(isa)                                                              \
    int conv_direct_forward_##isa(const conv_geom *g, conv_input x, const float *wt,          \
                                   const float *bias, float *y, int n0, int n1, int f0,      \
                                   int f1, const pool_geom *pool, int32_t *argmax,           \
                                   int relu);                                                \
    int conv_direct_backward_input_##isa(const conv_geom *g, const float *dy,               \
                                          const float *wt, float *dx, int n0, int n1);       \
    int conv_direct_backward_filter_##isa(const conv_geom *g, conv_input x,                   \
                                           const float *dy, float *dwt, float *dbias, int n0, \
                                           int n1, int f0, int f1, int accumulate,            \
                                           const pool_geom *pool, const int32_t *argmax,       \
                                           const float *relu_y);                               \
    int conv_wide_forward_##isa(const conv_geom *g, conv_input x, const float *wt,            \
                                 const float *bias, float *y, int n0, int n1, int f0, int f1); \
    int conv_wide_backward_input_##isa(const conv_geom *g, const float *dy, const float *wt, \
                                        float *dx, int n0, int n1);                          \
    int conv_wide_backward_filter_##isa(const conv_geom *g, conv_input x, const float *dy,   \
                                         float *dwt, float *dbias, int n0, int n1, int f0,   \
                                         int f1, int accumulate);

CONV_DIRECT_DECLARE(portable)
CONV_DIRECT_DECLARE(avx2)
CONV_DIRECT_DECLARE(avx512)

#endif
