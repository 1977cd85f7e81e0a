/* The other CNN kernels: ReLU, max-pooling, dense, fused softmax + cross-entropy, SGD and
 * PyTorch-style initialisation. Ranges are over samples [n0, n1) or elements [i0, i1). */
#ifndef FRUGAL_LAYERS_H
#define FRUGAL_LAYERS_H

#include <stddef.h>
#include <stdint.h>

void ops_relu_forward(const float *x, float *y, long i0, long i1);
/* dx = dy where the forward output was positive (y may alias x's output buffer). */
void ops_relu_backward(const float *y, const float *dy, float *dx, long i0, long i1);

typedef struct pool_geom { int c, h, w, size, stride, oh, ow; } pool_geom;
int pool_geom_init(pool_geom *g, int c, int h, int w, int size, int stride);
/* y = window max; argmax keeps the winning input offset within the sample, for backward. */
void ops_maxpool_forward(const pool_geom *g, const float *x, float *y, int32_t *argmax, int n0, int n1);
/* One row of outputs: windows over the input rows from `in` (row stride `stride`); argmax gets
 * indices into a plane of the pool's width, counted from `at` (the window row's first element),
 * as maxpool_forward numbers them. With relu, each output goes through a relu (argmax unchanged).
 * The fused convolution pools its output with it. */
void ops_maxpool_row(const pool_geom *g, const float *in, size_t stride, float *y, int32_t *argmax,
                     int32_t at, int relu);
/* dx (overwritten for [n0, n1)) gets dy routed back to the winners. */
void ops_maxpool_backward(const pool_geom *g, const float *dy, const int32_t *argmax, float *dx,
                      int n0, int n1);

/* y[n] = W x[n] + b, with W as out x in (PyTorch's Linear layout). The dense functions return
 * 0, or -1 when GEMM could not allocate its packing buffers (nothing is written then). */
int dense_forward(int in, int out, const float *x, const float *wt, const float *bias, float *y,
                   int n0, int n1);
int dense_backward_input(int in, int out, const float *dy, const float *wt, float *dx, int n0,
                          int n1);
/* dW, db: sum over samples [n0, n1), written (accumulate 0) or added. */
int dense_backward_weights(int in, int out, const float *x, const float *dy, float *dwt,
                           float *dbias, int n0, int n1, int accumulate);

/* Softmax + cross-entropy over classes, stable (max subtracted). For samples [n0, n1): returns
 * the summed loss, adds correct argmax predictions to *correct (if not NULL), and writes
 * dlogits = (softmax - onehot) * scale (if dlogits not NULL; scale is 1/batch for a mean loss).
 * A label outside [0, classes) makes it return NaN. */
double ops_softmax_xent(int classes, const float *logits, const uint8_t *labels, float *dlogits,
                    float scale, int n0, int n1, int *correct);

/* PyTorch SGD: g += wd * w; v = momentum * v + g; w -= lr * v (v starts at zero). Without
 * momentum, w -= lr * g and v is left as it is (PyTorch keeps none). */
void sgd_update(float *w, const float *g, float *v, float lr, float momentum, float wd, long i0,
                long i1);
/* sgd_update of n values with g the sum of nparts partial gradients, added in the order given
 * (((parts[0] + parts[1]) + parts[2]) ...): the bits of summing them into g first, without g
 * written out and read back. v may be NULL without momentum. */
void sgd_update_parts(float *w, const float *const *parts, int nparts, float *v, float lr,
                      float momentum, float wd, long n);

/* A small, seeded, reproducible generator (xoshiro128**) for initialisation and shuffling. */
typedef struct ops_rng { uint32_t s[4]; } ops_rng;
void ops_rng_seed(ops_rng *r, uint64_t seed);
uint32_t ops_rng_next(ops_rng *r);
float ops_rng_uniform(ops_rng *r);   /* [0, 1) */
/* PyTorch's default for Conv2d and Linear: weights and bias uniform in +-1/sqrt(fan_in). */
void init_kaiming_uniform(ops_rng *r, float *w, long n, int fan_in);

#endif
