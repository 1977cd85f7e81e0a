/* lanes_avx512.h's lanes for the Winograd transforms by lanes (winograd_lanes_impl.h) on AVX2:
 * the same layout, a pixel's 16 channels side by side, taken 8 lanes to a register (VL), so
 * that a transform runs its arithmetic twice per pixel, on each half. (Vectors of 16 floats
 * written for AVX2 lived on the stack: GCC keeps vector types wider than the ISA's registers
 * in memory.) The 16 x 16 moves between rows and lanes are four 8 x 8 transposes. Included by
 * AVX2 builds only. */
#ifndef FRUGAL_LANES_AVX2_H
#define FRUGAL_LANES_AVX2_H

#include "ops/vec_avx2.h"

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

enum { LANES = 16, VL = 8 };

typedef float vl __attribute__((vector_size(32)));
typedef int32_t vli __attribute__((vector_size(32)));
#define LANES_ISA(name) name##_avx2

#define INLINE static inline __attribute__((always_inline))

/* v through a relu (relu_forward's: NaN passes). */
static inline vl relu_lanes(vl v)
{
    return (vl)_mm256_andnot_ps(_mm256_cmp_ps((__m256)v, _mm256_setzero_ps(), _CMP_LT_OQ),
                                (__m256)v);
}

/* v where gate is above 0 (relu_backward's), else 0. */
static inline __m256 gated(__m256 v, __m256 gate)
{
    return _mm256_and_ps(v, _mm256_cmp_ps(gate, _mm256_setzero_ps(), _CMP_GT_OQ));
}

/* n pixels of 16 lanes from in to line, through the relu whose output lies at relu (else
 * NULL; relu_backward's: a value passes where the output is above 0). */
static inline void lanes_copy(const float *in, const float *relu, int n, float *line)
{
    if (!relu) {
        memcpy(line, in, sizeof(float) * LANES * (size_t)n);
        return;
    }
    for (size_t i = 0; i < (size_t)LANES * n; i += VL)
        _mm256_storeu_ps(line + i, gated(_mm256_loadu_ps(in + i), _mm256_loadu_ps(relu + i)));
}

/* Values [x, x + 16) of the first n rows at row0 + k * plane (zeros for the others, and past
 * the rows' width w), through the relu whose output rows lie at relu0 + k * plane where relu0
 * is not NULL, transposed into line[16 x'] for x' in [x, x + 16): by blocks of 8 rows x 8
 * columns. */
static inline void rows_to_lanes(const float *row0, const float *relu0, size_t plane, int n,
                                 int x, int w, float *line)
{
    for (int c = 0; c < LANES; c += 8) {   /* columns x + c .. */
        for (int k0 = 0; k0 < LANES; k0 += 8) {   /* rows k0 .. */
            __m256 r[8];
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) {
                size_t at = (size_t)(k0 + k) * plane + (size_t)(x + c);
                int in = k0 + k < n && w - x - c > 0;
                r[k] = in ? load_upto8(row0 + at, w - x - c) : _mm256_setzero_ps();
                if (relu0 && in)
                    r[k] = gated(r[k], load_upto8(relu0 + at, w - x - c));
            }
            transpose8x8(r);
#pragma GCC unroll 8
            for (int q = 0; q < 8; q++)
                _mm256_storeu_ps(line + (size_t)LANES * (x + c + q) + k0, r[q]);
        }
    }
}

/* A 2x2 window of 8 filters, v00 v01 on its first row, v10 v11 on the second, pooled as
 * maxpool2_window does it (the first of equal values kept, through the relu if asked); its
 * argmax into *at, numbered from i00 (per lane) on rows ow apart. */
INLINE vl pool2_vl(vl v00, vl v01, vl v10, vl v11, vli i00, int ow, int relu, vli *at)
{
    const vl next[3] = {v01, v10, v11};
    const int step[3] = {1, ow, ow + 1};
    __m256 best = (__m256)v00;
    __m256i where = (__m256i)i00;
#pragma GCC unroll 3
    for (int k = 0; k < 3; k++) {
        __m256 gt = _mm256_cmp_ps((__m256)next[k], best, _CMP_GT_OQ);
        __m256i moved = _mm256_add_epi32((__m256i)i00, _mm256_set1_epi32(step[k]));
        where = _mm256_blendv_epi8(where, moved, _mm256_castps_si256(gt));
        best = _mm256_blendv_ps(best, (__m256)next[k], gt);
    }
    *at = (vli)where;
    return relu ? relu_lanes((vl)best) : (vl)best;
}

/* 16 pixels of 16 channels at line (16 floats apart), (base + 0) + line where base is not NULL
 * (else 0 + line), transposed back into the channels' rows, channel j's at out + j * plane:
 * the first n pixels stored. */
INLINE void lanes_sum_to_rows(const float *line, const float *base, float *out, size_t plane,
                              int n)
{
    for (int c = 0; c < LANES; c += 8) {   /* pixels c .. */
        __m256i keep = first_n8(n - c);
        for (int h = 0; h < LANES; h += VL) {   /* channels h .. */
            __m256 r[8];
#pragma GCC unroll 8
            for (int q = 0; q < 8; q++) {
                size_t at = (size_t)LANES * (c + q) + h;
                vl b = {0}, v;
                if (base) {
                    memcpy(&b, base + at, sizeof b);
                    b += (vl){0};
                }
                memcpy(&v, line + at, sizeof v);
                r[q] = (__m256)(b + v);
            }
            transpose8x8(r);
            if (n - c <= 0)
                continue;
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++)
                _mm256_maskstore_ps(out + (size_t)(h + j) * plane + c, keep, r[j]);
        }
    }
}

/* A tile's 4x4 outputs of 8 filters (out[a][k]: row a, column k) transposed to a filter a
 * register, into the filters' 4 rows at stage (filter j's row a at stage + (4 j + a) width):
 * rows 0 and 1, then 2 and 3, by an 8 x 8 transpose each. */
INLINE void stage_tile_vl(vl out[4][4], float *stage, int width)
{
#pragma GCC unroll 2
    for (int a0 = 0; a0 < 4; a0 += 2) {
        __m256 r[8];
#pragma GCC unroll 8
        for (int p = 0; p < 8; p++)
            r[p] = (__m256)out[a0 + p / 4][p % 4];
        transpose8x8(r);
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {
            float *row = stage + (size_t)(4 * j + a0) * width;
            _mm_storeu_ps(row, _mm256_castps256_ps128(r[j]));
            _mm_storeu_ps(row + width, _mm256_extractf128_ps(r[j], 1));
        }
    }
}

/* A tile's pooled windows w[i][j] of 8 filters and their argmaxes a[i][j] into stage, filter
 * j's 4 rows (values' 2, argmaxes' 2; row apart) from stage + 4 j row: 8 registers of 8
 * filters turned into 8 filters' 8 values, stored by pairs. */
INLINE void stage_pooled_vl(vl w[2][2], vli a[2][2], float *stage, int row)
{
    __m256 u[8] = {(__m256)w[0][0], (__m256)w[0][1], (__m256)w[1][0], (__m256)w[1][1],
                   (__m256)a[0][0], (__m256)a[0][1], (__m256)a[1][0], (__m256)a[1][1]};
    transpose8x8(u);   /* u[j]: filter j's 4 windows, then their 4 argmaxes */
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        float *f = stage + (size_t)j * 4 * row;
        __m128 v = _mm256_castps256_ps128(u[j]), at = _mm256_extractf128_ps(u[j], 1);
        _mm_storel_pi((__m64 *)f, v);
        _mm_storeh_pi((__m64 *)(f + row), v);
        _mm_storel_pi((__m64 *)(f + 2 * row), at);
        _mm_storeh_pi((__m64 *)(f + 3 * row), at);
    }
}

#endif
