/* The common 2x2, stride-2 max-pool: a window, a row of windows, and a row's gradient spread
 * back over its two input rows. Inline, so that each file including it compiles it for its own
 * instruction set: pool.c for the baseline, the fused pooling of the direct convolution (AVX2,
 * AVX-512) and of the Winograd output transforms (SSE, AVX2). */
#ifndef FRUGAL_POOL_ROW_H
#define FRUGAL_POOL_ROW_H

#include <stdint.h>

#define POOL2_BLOCK 8   /* outputs per vectorised block: one AVX vector, two SSE */

/* One 2x2 window: v00 v01 on its first row, v10 v11 on the second, w apart in the argmax
 * numbering, i00 numbering v00. The first maximum wins, as in PyTorch; branch-free, so that
 * loops of it vectorise. With relu, the maximum goes through a relu (relu_forward's: NaN
 * passes); the argmax stays the window's, as a relu after the pool leaves it. */
static inline void maxpool2_window(float v00, float v01, float v10, float v11, int32_t i00,
                                   int w, int relu, float *y, int32_t *a)
{
    float v = v00;
    int32_t b = i00;
    b = v01 > v ? i00 + 1 : b;
    v = v01 > v ? v01 : v;
    b = v10 > v ? i00 + w : b;
    v = v10 > v ? v10 : v;
    b = v11 > v ? i00 + w + 1 : b;
    v = v11 > v ? v11 : v;
    *y = relu && v < 0.0f ? 0.0f : v;
    *a = b;
}

/* POOL2_BLOCK outputs of 2x2 windows (rows r0 and r1, w apart in the argmax numbering; the first
 * window's top left is numbered at). A constant trip count, so that it is all vector code: a
 * scalar remainder compiled to branches on the comparisons, mispredicted half the time, and
 * cost more than the vectors on short rows. */
static inline void maxpool2_block(const float *r0, const float *r1, float *y, int32_t *a, int w,
                                  int32_t at, int relu)
{
#pragma omp simd
    for (int ox = 0; ox < POOL2_BLOCK; ox++)
        maxpool2_window(r0[2 * ox], r0[2 * ox + 1], r1[2 * ox], r1[2 * ox + 1], at + 2 * ox, w,
                        relu, y + ox, a + ox);
}

/* One output row of ow windows (through a relu if asked). A last, partial block is done again
 * from ow - POOL2_BLOCK (the same windows give the same results), or, in a row shorter than a
 * block, through a copy. */
static inline void maxpool2_row(const float *r0, const float *r1, float *y, int32_t *a, int ow,
                                int w, int32_t at, int relu)
{
    if (ow < POOL2_BLOCK) {
        float t0[2 * POOL2_BLOCK] = {0}, t1[2 * POOL2_BLOCK] = {0}, ty[POOL2_BLOCK];
        int32_t ta[POOL2_BLOCK];
        for (int i = 0; i < 2 * ow; i++)
            t0[i] = r0[i], t1[i] = r1[i];
        maxpool2_block(t0, t1, ty, ta, w, at, relu);
        for (int i = 0; i < ow; i++)
            y[i] = ty[i], a[i] = ta[i];
        return;
    }
    for (int ox = 0;; ox += POOL2_BLOCK) {
        if (ox + POOL2_BLOCK > ow)
            ox = ow - POOL2_BLOCK;
        maxpool2_block(r0 + 2 * ox, r1 + 2 * ox, y + ox, a + ox, w, at + 2 * ox, relu);
        if (ox + POOL2_BLOCK == ow)
            return;
    }
}

/* The gradient of POOL2_BLOCK windows, spread back over their two input rows d0 and d1: each
 * window's gy goes to the one of its four places that argmax a names (corner numbers the first
 * window's top left), zeros to the other three. With a relu after the pool, ry is its output
 * (the pooled one) and a window's gradient passes where ry > 0, as relu_backward's (else ry is
 * NULL). Branch-free, like maxpool2_block. */
static inline void unpool2_block(const float *gy, const float *ry, const int32_t *a, float *d0,
                                 float *d1, int w, int32_t corner)
{
    float g[POOL2_BLOCK];
    if (ry) {   /* gy loaded whatever ry is: as a load masked by the test, GCC's waited for ry's
                 * (dy_band took 5.3% of wide-28's time, 3.7% with plain loads) */
#pragma omp simd
        for (int ox = 0; ox < POOL2_BLOCK; ox++) {
            float v = gy[ox];
            g[ox] = ry[ox] > 0.0f ? v : 0.0f;
        }
    } else {
        for (int ox = 0; ox < POOL2_BLOCK; ox++)
            g[ox] = gy[ox];
    }
#pragma omp simd
    for (int ox = 0; ox < POOL2_BLOCK; ox++) {
        int32_t k = a[ox] - corner - 2 * ox;
        d0[2 * ox] = k == 0 ? g[ox] : 0.0f;
        d0[2 * ox + 1] = k == 1 ? g[ox] : 0.0f;
        d1[2 * ox] = k == w ? g[ox] : 0.0f;
        d1[2 * ox + 1] = k == w + 1 ? g[ox] : 0.0f;
    }
}

/* One row of ow windows, as maxpool2_row goes over them (ry: as unpool2_block's). */
static inline void unpool2_row(const float *gy, const float *ry, const int32_t *a, float *d0,
                               float *d1, int ow, int w, int32_t corner)
{
    if (ow < POOL2_BLOCK) {
        float tg[POOL2_BLOCK] = {0}, tr[POOL2_BLOCK] = {0}, t0[2 * POOL2_BLOCK], t1[2 * POOL2_BLOCK];
        int32_t ta[POOL2_BLOCK] = {0};
        for (int i = 0; i < ow; i++)
            tg[i] = gy[i], tr[i] = ry ? ry[i] : 0.0f, ta[i] = a[i];
        unpool2_block(tg, ry ? tr : NULL, ta, t0, t1, w, corner);
        for (int i = 0; i < 2 * ow; i++)
            d0[i] = t0[i], d1[i] = t1[i];
        return;
    }
    for (int ox = 0;; ox += POOL2_BLOCK) {
        if (ox + POOL2_BLOCK > ow)
            ox = ow - POOL2_BLOCK;
        unpool2_block(gy + ox, ry ? ry + ox : NULL, a + ox, d0 + 2 * ox, d1 + 2 * ox, w,
                      corner + 2 * ox);
        if (ox + POOL2_BLOCK == ow)
            return;
    }
}

#endif
