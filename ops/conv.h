/* 2-D convolution, NCHW float32, direct, wide, Winograd or im2col + GEMM (conv_path),
 * optionally fused with the max-pool after it. Every function works on a sub-range of samples
 * [n0, n1) and, where it makes sense, of filters [f0, f1), so the engine can cut the work into
 * micro-tasks of any grain. */
#ifndef FRUGAL_CONV_H
#define FRUGAL_CONV_H

#include "ops/layers.h"

#include <stdint.h>

typedef struct conv_geom {
    int c, h, w;                /* input channels and size */
    int f, kh, kw, stride, pad; /* filters, kernel, stride, zero padding */
    int oh, ow;                 /* output size, derived */
    /* The activations' layout (0 after conv_geom_init: NCHW): with in_lanes the input and its
     * gradient, with out_lanes the output (or the pooled output, its argmax and the relu's
     * output) and its gradient, are in channel lanes, [n][c / 16][y][x][16]: a pixel's 16
     * channels side by side, a block of 16 channels where NCHW has their 16 planes. Only where
     * conv_lanes_layout says so; other calls fail (-1). */
    int in_lanes, out_lanes;
} conv_geom;

/* Fills g; returns -1 when the output would be empty or a parameter is out of range. */
int conv_geom_init(conv_geom *g, int c, int h, int w, int f, int kh, int kw, int stride, int pad);

/* Every function returns 0, or -1 when its scratch memory could not be allocated (nothing is
 * written then; or, a caller's mistake, when the path does not take g's layout:
 * conv_lanes_layout): a caller must not mistake a skipped kernel for a result. */

/* y[n, f0:f1] = W[f0:f1] * x[n] + b[f0:f1]  (x: N*C*H*W, W: F*C*KH*KW, b: F or NULL) */
int ops_conv2d_forward(const conv_geom *g, const float *x, const float *wt, const float *bias,
                    float *y, int n0, int n1, int f0, int f1);
/* dx[n] = conv_transpose(dy[n], W), overwriting dx for samples [n0, n1). */
int ops_conv2d_backward_input(const conv_geom *g, const float *dy, const float *wt, float *dx,
                           int n0, int n1);
/* The filter gradients of filters [f0, f1), summed over samples [n0, n1): dwt holds those
 * filters only (dwt[(f - f0) * C*KH*KW + ...]), db too (db[f - f0]; may be NULL); written when
 * accumulate is 0, added otherwise. Samples are summed in order, so the result is reproducible. */
int ops_conv2d_backward_filter(const conv_geom *g, const float *x, const float *dy, float *dwt,
                            float *dbias, int n0, int n1, int f0, int f1, int accumulate);

/* A convolution's input: floats (f: N*C*H*W), or bytes scaled as they are read (b[n]: sample
 * n's C*H*W bytes, anywhere in memory; f is NULL). relu_output: f is a relu's output, and the
 * input gradient (dx) goes back through that relu too: kept where f is positive, 0 elsewhere,
 * bit for bit relu_backward's. The relu's own backward is then left out, with its read of the
 * activation that this layer's backward reads anyway (engine/train/plan.c). */
typedef struct conv_input {
    const float *f;
    const uint8_t *const *b;
    float scale;
    int relu_output;
} conv_input;

/* conv2d_forward and conv2d_backward_filter from a conv_input. From bytes, a first layer reads
 * the data set in place, with a quarter of the memory traffic of floats: the direct path
 * converts while it pads, im2col into a buffer first. The results are the float functions' on
 * (float)b[n][i] * scale, bit for bit. */
int ops_conv2d_forward_in(const conv_geom *g, conv_input x, const float *wt, const float *bias,
                       float *y, int n0, int n1, int f0, int f1);
int ops_conv2d_backward_filter_in(const conv_geom *g, conv_input x, const float *dy, float *dwt,
                               float *dbias, int n0, int n1, int f0, int f1, int accumulate);
/* A convolution's whole backward pass on samples [n0, n1): conv2d_backward_filter_in's dW and db
 * of all filters (written), then, with dx (else NULL), conv2d_backward_input's. The same
 * results, bit for bit; the Winograd paths transform dy once for both. */
int ops_conv2d_backward(const conv_geom *g, conv_input x, const float *dy, const float *wt,
                    float *dwt, float *dbias, float *dx, int n0, int n1);

/* Convolution then max-pooling in one pass, for windows that do not overlap (size == stride) on
 * the direct path, or 2x2 windows on the Winograd paths: the convolution's output is pooled
 * while it is in cache and never stored; with relu, a relu follows the max-pool. y and argmax
 * are what conv2d_forward, ops_maxpool_forward (and relu_forward) give, bit for bit. Backward takes
 * the gradient of y, the argmax and, after a relu, y (relu_y; else NULL) and gives
 * conv2d_backward_filter's dW and db for (relu_backward's then) maxpool_backward's dx, bit for
 * bit, and with dx (else NULL; the Winograd paths only: conv_pool_fusable_with_input_gradient)
 * conv2d_backward_input's too. All filters. */
int conv_pool_fusable(const conv_geom *g, const pool_geom *p);
int conv_pool_fusable_with_input_gradient(const conv_geom *g, const pool_geom *p);
int ops_conv2d_forward_maxpool(const conv_geom *g, conv_input x, const float *wt, const float *bias,
                            const pool_geom *p, int relu, float *y, int32_t *argmax, int n0,
                            int n1);
int ops_conv2d_backward_maxpool(const conv_geom *g, conv_input x, const pool_geom *p,
                             const float *relu_y, const float *dy, const int32_t *argmax,
                             const float *wt, float *dwt, float *dbias, float *dx, int n0, int n1,
                             int accumulate);

/* Convolution then a relu in one pass, on the Winograd paths, or the direct one without the
 * input gradient (conv_relu_fusable): each output row goes through the relu as it is stored,
 * and backward takes the relu's output y (relu_y) and the gradient of y, and masks each row
 * of it as it is read. Bit for bit conv2d_forward then relu_forward, and relu_backward then
 * conv2d_backward (dW and db of all filters, written; dx where not NULL). -1 on another path. */
int conv_relu_fusable(const conv_geom *g, int with_input_gradient);
int ops_conv2d_forward_relu(const conv_geom *g, conv_input x, const float *wt, const float *bias,
                            float *y, int n0, int n1);
int ops_conv2d_backward_relu(const conv_geom *g, conv_input x, const float *relu_y,
                             const float *dy, const float *wt, float *dwt, float *dbias,
                             float *dx, int n0, int n1);

/* Whether g's passes (fused with the max-pool pool, else NULL) take their input
 * (CONV_LANES_INPUT) or their output (CONV_LANES_OUTPUT) in channel lanes (in_lanes,
 * out_lanes), with filter ranges in multiples of 16, and the input gradient too where
 * with_input_gradient: the Winograd F(4x4) path on AVX-512 with channels and filters in
 * multiples of 16 (its transforms work on 16 channels a register, and in NCHW spend much of
 * their time moving 16 planes' rows in and out of lanes: docs/kernels.md), and the output of a
 * first layer on the lanes kernel (conv_lanes.h) without its input gradient; pooled, 2x2
 * windows only. By the shape, the path and the ISA at the call. */
enum { CONV_LANES_INPUT = 1, CONV_LANES_OUTPUT = 2 };
int conv_lanes_layout(const conv_geom *g, const pool_geom *pool, int which,
                      int with_input_gradient);

/* How the functions above compute, pass by pass: the direct convolution (vectorised along
 * pixels), the wide one (vectorised along filters; both stride 1 only), Winograd F(2x2, 3x3) or
 * F(4x4, 3x3) (3x3 stride 1; conv_winograd.h) or im2col + GEMM. AUTO takes im2col for strides
 * above 1; Winograd for 3x3 stride-1 layers with more than CONV_DIRECT_MAX_FILTERS filters and
 * 16 channels, F(4x4) where the output's sides are multiples of 4; elsewhere at stride 1, wide
 * where its sum is long and its vectors full (32 channels for the filter gradient, 64 for the
 * others), direct otherwise (measured: ./build.sh bench ops and bench train). The environment
 * variable FRUGAL_CONV=auto|direct|wide|im2col|winograd|winograd4 sets the starting strategy
 * (the Winograd ones: where the shape allows, auto elsewhere); tests and benchmarks set it. */
typedef enum conv_strategy {
    CONV_AUTO, CONV_DIRECT, CONV_WIDE, CONV_IM2COL, CONV_WINOGRAD, CONV_WINOGRAD4, CONV_STRATEGIES
} conv_strategy;
typedef enum conv_pass { CONV_FORWARD, CONV_BACKWARD_INPUT, CONV_BACKWARD_FILTER } conv_pass;
#define CONV_DIRECT_MAX_FILTERS 16
#define CONV_WIDE_MAX_TAPS 4096   /* kernels up to 64 x 64 */
void conv_set_strategy(conv_strategy s);
conv_strategy conv_path(const conv_geom *g, conv_pass pass);   /* DIRECT, WIDE or IM2COL */
const char *conv_path_name(conv_strategy s);
/* The share of a pass's multiply-adds (the direct convolution's) that strategy s executes on g:
 * Winograd's products, its tiles' wasted outputs past the edge included; 1 for the others. */
double conv_executed_share(const conv_geom *g, conv_strategy s);
/* Forward and filter gradient both direct: what fusion with a max-pool needs. */
int conv_uses_direct(const conv_geom *g);

#endif
