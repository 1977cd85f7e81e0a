/* What the channel-lanes transforms share (winograd_f4_lanes_avx512.c, forward;
 * winograd_f4_lanes_backward_avx512.c): 16 channels (filters) to an AVX-512 register, moved in
 * and out of NCHW rows by 16 x 16 transposes. Included by AVX-512 builds only. */
#ifndef FRUGAL_WINOGRAD_LANES_IMPL_H
#define FRUGAL_WINOGRAD_LANES_IMPL_H

#include "ops/lanes_avx512.h"
#include "ops/winograd_tiling.h"

#include <string.h>

/* The values keep picks from [j, j + 16) of row y of channel c of sample s (floats, or bytes
 * times the scale, as winograd_input_row converts them), zeros elsewhere. */
INLINE __m512 input_values(const conv_geom *g, conv_input x, int s, int c, int y, int j,
                                  __mmask16 keep)
{
    size_t at = ((size_t)c * g->h + (size_t)y) * g->w + (size_t)j;
    if (x.f)
        return _mm512_maskz_loadu_ps(keep, x.f + (size_t)s * g->c * g->h * g->w + at);
    __m512i b = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(keep, x.b[s] + at));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(b), _mm512_set1_ps(x.scale));
}

/* How many rows ahead the transforms prefetch the rows they read from 16 planes: the planes'
 * lines share cache sets (planes 4 KB apart on a 32 x 32 layer) and each is a stream of its
 * own, more than the hardware's prefetchers follow (docs/kernels.md: it helps when the host's
 * memory is contended). 1 and 2 measured alike, 4 and 8 slower. */
enum { ROWS_AHEAD = 2 };

/* Prefetches the line at p of 16 planes, plane bytes apart, into L1. */
INLINE void prefetch_planes(const char *p, size_t plane)
{
#pragma GCC unroll 16
    for (int k = 0; k < LANES; k++)
        _mm_prefetch(p + (size_t)k * plane, _MM_HINT_T0);
}

/* Prefetches what input_values reads of channels [c0, c0 + 16). */
static inline void prefetch_input(const conv_geom *g, conv_input x, int s, int c0, int y, int j)
{
    size_t plane = (size_t)g->h * g->w, at = ((size_t)c0 * g->h + (size_t)y) * g->w + (size_t)j;
    if (x.f)
        prefetch_planes((const char *)(x.f + (size_t)s * g->c * plane + at), sizeof(float) * plane);
    else
        prefetch_planes((const char *)(x.b[s] + at), plane);
}

/* line[16 x + k] = channel c0 + k of row y of sample s at padded column x, for x < row_len:
 * zeros in the padding and outside the image. */
static inline void lanes_row(const tiling *t, conv_input x, int s, int c0, int y, float *line)
{
    const conv_geom *g = t->g;
    int len = t->row_len, lo = g->pad, hi = g->pad + g->w < len ? g->pad + g->w : len;
    if (y < 0 || y >= g->h) {
        memset(line, 0, sizeof(float) * LANES * (size_t)len);
        return;
    }
    memset(line, 0, sizeof(float) * LANES * (size_t)lo);
    memset(line + (size_t)LANES * hi, 0, sizeof(float) * LANES * (size_t)(len - hi));
    for (int j = 0; j < hi - lo; j += LANES) {
        int n = hi - lo - j < LANES ? hi - lo - j : LANES;
        __mmask16 keep = first_n(n);
        __m512 r[16];
#pragma GCC unroll 16
        for (int k = 0; k < LANES; k++)
            r[k] = input_values(g, x, s, c0 + k, y, j, keep);
        if (y + ROWS_AHEAD < g->h)
            prefetch_input(g, x, s, c0, y + ROWS_AHEAD, j);
        transpose16(r);
        float *out = line + (size_t)LANES * (lo + j);
        if (n == LANES)
#pragma GCC unroll 16
            for (int q = 0; q < LANES; q++)
                _mm512_storeu_ps(out + LANES * q, r[q]);
        else
            for (int q = 0; q < n; q++)
                _mm512_storeu_ps(out + LANES * q, r[q]);
    }
}

#endif
