/* The common 2x2, stride-2 max-pool row, inline so that each file including it compiles it for
 * its own instruction set: pool.c for the baseline, the direct convolution's fused pooling for
 * AVX2 and AVX-512. */
#ifndef FRUGAL_POOL_ROW_H
#define FRUGAL_POOL_ROW_H

#include <stdint.h>

/* The common 2x2 window with stride 2, one output row: branch-free so that it vectorises. */
static inline void maxpool2_row(const float *r0, const float *r1, float *y, int32_t *a, int ow, int w,
                         int32_t at)
{
#pragma omp simd
    for (int ox = 0; ox < ow; ox++) {
        float v = r0[2 * ox], u;
        int32_t b = at + 2 * ox;
        u = r0[2 * ox + 1];
        b = u > v ? at + 2 * ox + 1 : b;
        v = u > v ? u : v;
        u = r1[2 * ox];
        b = u > v ? at + w + 2 * ox : b;
        v = u > v ? u : v;
        u = r1[2 * ox + 1];
        b = u > v ? at + w + 2 * ox + 1 : b;
        v = u > v ? u : v;
        y[ox] = v;
        a[ox] = b;
    }
}

#endif
