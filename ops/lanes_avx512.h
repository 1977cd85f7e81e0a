/* Sixteen floats to an AVX-512 register, one per channel or filter ("lanes"), and the 16 x 16
 * transposes that move them in and out of NCHW rows: what the channel-lanes Winograd
 * transforms (winograd_lanes_impl.h) and the few-channel convolution (conv_lanes_avx512.c)
 * share. Included by AVX-512 builds only. */
#ifndef FRUGAL_LANES_AVX512_H
#define FRUGAL_LANES_AVX512_H

#include <immintrin.h>
#include <stdint.h>
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

/* v through a relu (relu_forward's: NaN passes). */
static inline v16 relu_lanes(v16 v)
{
    __mmask16 negative = _mm512_cmp_ps_mask((__m512)v, _mm512_setzero_ps(), _CMP_LT_OQ);
    return (v16)_mm512_maskz_mov_ps((__mmask16)~negative, (__m512)v);
}

/* A 2x2 window of 16 filters, v00 v01 on its first row, v10 v11 on the second, pooled as
 * maxpool2_window does it (the first of equal values kept, through the relu if asked); its
 * argmax into *at, numbered from i00 (per lane) on rows ow apart. */
INLINE __m512 pool2_lanes(__m512 v00, __m512 v01, __m512 v10, __m512 v11, __m512i i00, int ow,
                          int relu, __m512i *at)
{
    const __m512 next[3] = {v01, v10, v11};
    const int step[3] = {1, ow, ow + 1};
    __m512 best = v00;
    *at = i00;
#pragma GCC unroll 3
    for (int k = 0; k < 3; k++) {
        __mmask16 gt = _mm512_cmp_ps_mask(next[k], best, _CMP_GT_OQ);
        *at = _mm512_mask_add_epi32(*at, gt, i00, _mm512_set1_epi32(step[k]));
        best = _mm512_mask_mov_ps(best, gt, next[k]);
    }
    return relu ? (__m512)relu_lanes((v16)best) : best;
}

/* n pixels of 16 lanes from in to line, through the relu whose output lies at relu (else
 * NULL; relu_backward's: a value passes where the output is above 0). */
static inline void lanes_copy(const float *in, const float *relu, int n, float *line)
{
    if (!relu) {
        memcpy(line, in, sizeof(float) * LANES * (size_t)n);
        return;
    }
    for (size_t i = 0; i < (size_t)LANES * n; i += LANES) {
        __mmask16 up = _mm512_cmp_ps_mask(_mm512_loadu_ps(relu + i), _mm512_setzero_ps(),
                                          _CMP_GT_OQ);
        _mm512_storeu_ps(line + i, _mm512_maskz_loadu_ps(up, in + i));
    }
}

/* Values [x, x + 16) of the first n rows at row0 + k * plane (zeros for the others, and past
 * the rows' width w), through the relu whose output rows lie at relu0 + k * plane where relu0
 * is not NULL (relu_backward's: a value passes where the output is above 0), transposed into
 * line[16 x'] for x' in [x, x + 16). */
static inline void rows_to_lanes(const float *row0, const float *relu0, size_t plane, int n,
                                 int x, int w, float *line)
{
    __mmask16 keep = first_n(w - x);
    __m512 r[LANES];
    for (int k = 0; k < LANES; k++) {
        int in = k < n && keep;
        r[k] = in ? _mm512_maskz_loadu_ps(keep, row0 + k * plane + x) : _mm512_setzero_ps();
        if (relu0 && in) {
            __m512 out = _mm512_maskz_loadu_ps(keep, relu0 + k * plane + x);
            r[k] = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(out, _mm512_setzero_ps(), _CMP_GT_OQ),
                                       r[k]);
        }
    }
    transpose16(r);
#pragma GCC unroll 16
    for (int q = 0; q < LANES; q++)
        _mm512_storeu_ps(line + (size_t)LANES * (x + q), r[q]);
}

/* What the Winograd transforms by lanes (winograd_lanes_impl.h) take from the ISA: vectors of
 * VL of a pixel's 16 lanes (here all of them: a transform's loop over a pixel's vectors runs
 * once), their pooling, and the moves between lanes and rows. lanes_avx2.h gives the same on
 * 8 lanes. */
enum { VL = LANES };
typedef v16 vl;
typedef int32_t vli __attribute__((vector_size(64)));
#define LANES_ISA(name) name##_avx512

/* pool2_lanes on the transforms' types. */
INLINE vl pool2_vl(vl v00, vl v01, vl v10, vl v11, vli i00, int ow, int relu, vli *at)
{
    __m512i a;
    __m512 best = pool2_lanes((__m512)v00, (__m512)v01, (__m512)v10, (__m512)v11,
                              (__m512i)i00, ow, relu, &a);
    *at = (vli)a;
    return (vl)best;
}

/* 16 pixels of 16 channels at line (16 floats apart), (base + 0) + line where base is not NULL
 * (else 0 + line), transposed back into the channels' rows, channel j's at out + j * plane:
 * the first n pixels stored. */
INLINE void lanes_sum_to_rows(const float *line, const float *base, float *out, size_t plane,
                              int n)
{
    __m512 r[16];
#pragma GCC unroll 16
    for (int q = 0; q < LANES; q++) {
        v16 b = base ? load16(base + LANES * q) + (v16){0} : (v16){0};
        r[q] = (__m512)(b + load16(line + LANES * q));
    }
    transpose16(r);
    __mmask16 keep = first_n(n);
#pragma GCC unroll 16
    for (int j = 0; j < LANES; j++)
        _mm512_mask_storeu_ps(out + (size_t)j * plane, keep, r[j]);
}

/* A tile's 4x4 outputs of 16 filters (out[a][k]: row a, column k) transposed to a filter a
 * register, into the filters' 4 rows at stage (filter j's row a at stage + (4 j + a) width). */
INLINE void stage_tile_vl(vl out[4][4], float *stage, int width)
{
    __m512 r[16];
#pragma GCC unroll 16
    for (int a = 0; a < 4; a++)
#pragma GCC unroll 16
        for (int k = 0; k < 4; k++)
            r[4 * a + k] = (__m512)out[a][k];
    transpose16(r);
#pragma GCC unroll 16
    for (int j = 0; j < LANES; j++) {
        float *row = stage + (size_t)4 * j * width;
        _mm_storeu_ps(row, _mm512_castps512_ps128(r[j]));
        _mm_storeu_ps(row + width, _mm512_extractf32x4_ps(r[j], 1));
        _mm_storeu_ps(row + 2 * width, _mm512_extractf32x4_ps(r[j], 2));
        _mm_storeu_ps(row + 3 * width, _mm512_extractf32x4_ps(r[j], 3));
    }
}

/* A filter's 2x2 windows of a tile, values v and argmaxes a (row 0's pair, row 1's), into
 * its staged rows at f (rows row apart: values' two, then argmaxes'). */
static inline void store_pairs(float *f, int row, __m128 v, __m128 a)
{
    _mm_storel_pi((__m64 *)f, v);
    _mm_storeh_pi((__m64 *)(f + row), v);
    _mm_storel_pi((__m64 *)(f + 2 * row), a);
    _mm_storeh_pi((__m64 *)(f + 3 * row), a);
}

/* A tile's pooled windows w[i][j] of 16 filters and their argmaxes a[i][j] into stage, filter
 * j's 4 rows (values' 2, argmaxes' 2; row apart) from stage + 4 j row: 8 registers of 16
 * filters turned into 16 filters' 8 values (the windows', then the argmaxes', in u[4 + m]),
 * stored by pairs. */
INLINE void stage_pooled_vl(vl w[2][2], vli a[2][2], float *stage, int row)
{
    __m512 v[8] = {(__m512)w[0][0], (__m512)w[0][1], (__m512)w[1][0], (__m512)w[1][1],
                   (__m512)a[0][0], (__m512)a[0][1], (__m512)a[1][0], (__m512)a[1][1]}, u[8];
    transpose_within_lanes(v, u, 8);   /* lane l of u[m]: filter 4l + m's 4 windows */
#pragma GCC unroll 4
    for (int m = 0; m < 4; m++) {   /* the lanes by constants: immediates even at -O1 */
        float *f = stage + (size_t)m * 4 * row;
        store_pairs(f, row, _mm512_castps512_ps128(u[m]), _mm512_castps512_ps128(u[4 + m]));
        f += (size_t)16 * row;
        store_pairs(f, row, _mm512_extractf32x4_ps(u[m], 1), _mm512_extractf32x4_ps(u[4 + m], 1));
        f += (size_t)16 * row;
        store_pairs(f, row, _mm512_extractf32x4_ps(u[m], 2), _mm512_extractf32x4_ps(u[4 + m], 2));
        f += (size_t)16 * row;
        store_pairs(f, row, _mm512_extractf32x4_ps(u[m], 3), _mm512_extractf32x4_ps(u[4 + m], 3));
    }
}

#endif
