/* What the channel-lanes transforms share (winograd_f4_lanes_avx512.c, forward;
 * winograd_f4_lanes_backward_avx512.c): 16 channels (filters) to an AVX-512 register, moved in
 * and out of NCHW rows by 16 x 16 transposes. Included by AVX-512 builds only. */
#ifndef FRUGAL_WINOGRAD_LANES_IMPL_H
#define FRUGAL_WINOGRAD_LANES_IMPL_H

#include "ops/winograd_tiling.h"

#include <immintrin.h>
#include <string.h>

enum { LANES = 16 };

typedef float v16 __attribute__((vector_size(64)));

static inline v16 load16(const float *p)
{
    v16 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store16(float *p, v16 v) { memcpy(p, &v, sizeof v); }

#define INLINE static inline __attribute__((always_inline))

/* A transpose's first two rounds on n registers (n a multiple of 4), within 128-bit lanes:
 * afterwards lane l of out[4g + m] holds value 4l + m of in[4g] .. in[4g + 3]. */
INLINE void transpose_within_lanes(const __m512 *in, __m512 *out, int n)
{
    __m512 t[16];
#pragma GCC unroll 16
    for (int i = 0; i < n; i += 2) {
        t[i] = _mm512_unpacklo_ps(in[i], in[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(in[i], in[i + 1]);
    }
#pragma GCC unroll 16
    for (int i = 0; i < n; i += 4) {
        __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
        __m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
        out[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        out[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        out[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        out[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
}

/* The 16 x 16 transpose: r[i][j] becomes r[j][i]. Within 128-bit lanes, then the lanes
 * exchanged by two rounds of shuffles. */
INLINE void transpose16(__m512 r[16])
{
    __m512 t[16];
    transpose_within_lanes(r, r, 16);
#pragma GCC unroll 16
    for (int k = 0; k < 4; k++) {
        __m512 a = r[k], b = r[4 + k], c = r[8 + k], d = r[12 + k];
        __m512 ab0 = _mm512_shuffle_f32x4(a, b, 0x88), ab1 = _mm512_shuffle_f32x4(a, b, 0xdd);
        __m512 cd0 = _mm512_shuffle_f32x4(c, d, 0x88), cd1 = _mm512_shuffle_f32x4(c, d, 0xdd);
        t[k] = _mm512_shuffle_f32x4(ab0, cd0, 0x88);
        t[8 + k] = _mm512_shuffle_f32x4(ab0, cd0, 0xdd);
        t[4 + k] = _mm512_shuffle_f32x4(ab1, cd1, 0x88);
        t[12 + k] = _mm512_shuffle_f32x4(ab1, cd1, 0xdd);
    }
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++)
        r[i] = t[i];
}

/* keep for the n <= 16 first values of a register (none for n <= 0). */
static inline __mmask16 first_n(int n)
{
    return n <= 0 ? 0 : n >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1);
}

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
