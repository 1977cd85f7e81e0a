/* pool_row.h's max-pool row and its gradient in whole vectors: 16 windows a block on AVX-512,
 * 8 on AVX2, for rows of at least a block (a shorter row goes through pool_row.h). Included
 * by the AVX2 and AVX-512 builds of the direct convolution only (VEC_BYTES 32 or 64), inline
 * for them.
 *
 * Why: with pool_row.h's blocks of 8, as GCC vectorises them, the pooling took 17% of DAHL
 * 62x84x3's fused forward and the unpooling (with a memset per row) a quarter of its fused
 * backward on AVX-512; here a block is a few permutes and masked moves. Values are compared
 * and moved, never computed: the same bits. */
#ifndef FRUGAL_POOL_ROW_WIDE_H
#define FRUGAL_POOL_ROW_WIDE_H

#include <immintrin.h>
#include <stdint.h>

#if VEC_BYTES >= 64

#define POOL2_WIDE 16   /* windows per block */

/* 2j in lane j: window j's first column, of a block's 32. */
static inline __m512i pool2_wide_columns(void)
{
    return _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
}

/* maxpool2_row's windows (rows r0 and r1 of the convolution's output, w apart in the argmax
 * numbering, the first window's top left numbered at), ow >= POOL2_WIDE: the four corners of
 * 16 windows split out of the two rows by permutes, then maxpool2_window's comparisons in its
 * order (the first maximum wins; a NaN in the first corner stays), then the relu if asked
 * (relu_forward's: NaN passes). */
static inline void maxpool2_row_wide(const float *r0, const float *r1, float *y, int32_t *a,
                                     int ow, int w, int32_t at, int relu)
{
    const __m512i even = pool2_wide_columns();
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const __m512i right = _mm512_set1_epi32(1), below = _mm512_set1_epi32(w);
    const __m512i diagonal = _mm512_set1_epi32(w + 1);
    const __m512 zero = _mm512_setzero_ps();
    for (int ox = 0;; ox += POOL2_WIDE) {
        if (ox + POOL2_WIDE > ow)
            ox = ow - POOL2_WIDE;   /* the last block again from ow - 16: the same values */
        const float *p0 = r0 + 2 * ox, *p1 = r1 + 2 * ox;
        __m512 t0 = _mm512_loadu_ps(p0), t1 = _mm512_loadu_ps(p0 + 16);
        __m512 u0 = _mm512_loadu_ps(p1), u1 = _mm512_loadu_ps(p1 + 16);
        __m512 v = _mm512_permutex2var_ps(t0, even, t1);
        __m512 v01 = _mm512_permutex2var_ps(t0, odd, t1);
        __m512 v10 = _mm512_permutex2var_ps(u0, even, u1);
        __m512 v11 = _mm512_permutex2var_ps(u0, odd, u1);
        __m512i i00 = _mm512_add_epi32(even, _mm512_set1_epi32(at + 2 * ox)), b = i00;
        __mmask16 m = _mm512_cmp_ps_mask(v01, v, _CMP_GT_OQ);
        b = _mm512_mask_add_epi32(b, m, i00, right);
        v = _mm512_mask_mov_ps(v, m, v01);
        m = _mm512_cmp_ps_mask(v10, v, _CMP_GT_OQ);
        b = _mm512_mask_add_epi32(b, m, i00, below);
        v = _mm512_mask_mov_ps(v, m, v10);
        m = _mm512_cmp_ps_mask(v11, v, _CMP_GT_OQ);
        b = _mm512_mask_add_epi32(b, m, i00, diagonal);
        v = _mm512_mask_mov_ps(v, m, v11);
        if (relu)
            v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), zero);
        _mm512_storeu_ps(y + ox, v);
        _mm512_storeu_si512(a + ox, b);
        if (ox + POOL2_WIDE == ow)
            return;
    }
}

/* unpool2_row's gradient (gy through the relu whose output is ry, if ry is not NULL) spread
 * over the rows d0 and d1, ow >= POOL2_WIDE: each window's gradient and argmax copied to the
 * lanes of its two columns by permutes, kept where the argmax names that place. Columns
 * [2 * ow, wp) of both rows, past the last window, are zeroed too (as a memset per row, 2
 * floats a call, they were a tenth of the backward's unpooling). */
static inline void unpool2_row_wide(const float *gy, const float *ry, const int32_t *a,
                                    float *d0, float *d1, int ow, int w, int32_t corner, int wp)
{
    const __m512i low = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    const __m512i high = _mm512_add_epi32(low, _mm512_set1_epi32(8));
    const __m512i top = _mm512_set_epi32(1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0);
    const __m512i bottom = _mm512_add_epi32(top, _mm512_set1_epi32(w));
    const __m512 zero = _mm512_setzero_ps();
    for (int ox = 0;; ox += POOL2_WIDE) {
        if (ox + POOL2_WIDE > ow)
            ox = ow - POOL2_WIDE;
        __m512 g = _mm512_loadu_ps(gy + ox);   /* loaded whatever ry is, as unpool2_block */
        if (ry)
            g = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_loadu_ps(ry + ox), zero,
                                                       _CMP_GT_OQ), g);
        __m512i first = _mm512_add_epi32(pool2_wide_columns(), _mm512_set1_epi32(corner + 2 * ox));
        __m512i k = _mm512_sub_epi32(_mm512_loadu_si512(a + ox), first);   /* place in window */
        __m512 g0 = _mm512_permutexvar_ps(low, g), g1 = _mm512_permutexvar_ps(high, g);
        __m512i k0 = _mm512_permutexvar_epi32(low, k), k1 = _mm512_permutexvar_epi32(high, k);
        float *e0 = d0 + 2 * ox, *e1 = d1 + 2 * ox;
        _mm512_storeu_ps(e0, _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(k0, top), g0));
        _mm512_storeu_ps(e0 + 16, _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(k1, top), g1));
        _mm512_storeu_ps(e1, _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(k0, bottom), g0));
        _mm512_storeu_ps(e1 + 16, _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(k1, bottom), g1));
        if (ox + POOL2_WIDE == ow)
            break;
    }
    for (int c = 2 * ow; c < wp; c += 16) {
        __mmask16 m = (__mmask16)(wp - c >= 16 ? 0xffff : (1u << (wp - c)) - 1);
        _mm512_mask_storeu_ps(d0 + c, m, zero);
        _mm512_mask_storeu_ps(d1 + c, m, zero);
    }
}

#else   /* AVX2: 8 windows a block, from two vectors of each row */

#define POOL2_WIDE 8

/* Columns 0, 2, .., 14 (odd 0: even ones; 1: odd ones) of the 16 at p: a shuffle within
 * 128-bit lanes, then the lanes' 64-bit halves put in order. */
static inline __m256 pool2_wide_split(const float *p, int odd)
{
    __m256 lo = _mm256_loadu_ps(p), hi = _mm256_loadu_ps(p + 8);
    __m256 s = odd ? _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1))
                   : _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_castpd_ps(
        _mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
}

/* b and v where keep says so, else a and u (keep a comparison's mask). */
static inline void pool2_wide_take(__m256 keep, __m256i b, __m256 v, __m256i *a, __m256 *u)
{
    *a = _mm256_castps_si256(
        _mm256_blendv_ps(_mm256_castsi256_ps(*a), _mm256_castsi256_ps(b), keep));
    *u = _mm256_blendv_ps(*u, v, keep);
}

/* As the AVX-512 maxpool2_row_wide, 8 windows a block. */
static inline void maxpool2_row_wide(const float *r0, const float *r1, float *y, int32_t *a,
                                     int ow, int w, int32_t at, int relu)
{
    const __m256i even = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const __m256i right = _mm256_set1_epi32(1), below = _mm256_set1_epi32(w);
    const __m256i diagonal = _mm256_set1_epi32(w + 1);
    const __m256 zero = _mm256_setzero_ps();
    for (int ox = 0;; ox += POOL2_WIDE) {
        if (ox + POOL2_WIDE > ow)
            ox = ow - POOL2_WIDE;   /* the last block again from ow - 8: the same values */
        const float *p0 = r0 + 2 * ox, *p1 = r1 + 2 * ox;
        __m256 v = pool2_wide_split(p0, 0), v01 = pool2_wide_split(p0, 1);
        __m256 v10 = pool2_wide_split(p1, 0), v11 = pool2_wide_split(p1, 1);
        __m256i i00 = _mm256_add_epi32(even, _mm256_set1_epi32(at + 2 * ox)), b = i00;
        pool2_wide_take(_mm256_cmp_ps(v01, v, _CMP_GT_OQ), _mm256_add_epi32(i00, right), v01,
                        &b, &v);
        pool2_wide_take(_mm256_cmp_ps(v10, v, _CMP_GT_OQ), _mm256_add_epi32(i00, below), v10,
                        &b, &v);
        pool2_wide_take(_mm256_cmp_ps(v11, v, _CMP_GT_OQ), _mm256_add_epi32(i00, diagonal),
                        v11, &b, &v);
        if (relu)   /* relu_forward's: NaN passes */
            v = _mm256_andnot_ps(_mm256_cmp_ps(v, zero, _CMP_LT_OQ), v);
        _mm256_storeu_ps(y + ox, v);
        _mm256_storeu_si256((__m256i *)(a + ox), b);
        if (ox + POOL2_WIDE == ow)
            return;
    }
}

/* As the AVX-512 unpool2_row_wide, 8 windows a block: each window's gradient and place in
 * its window copied to the lanes of its two columns (4 windows a vector), kept where the
 * place is that column's. */
static inline void unpool2_row_wide(const float *gy, const float *ry, const int32_t *a,
                                    float *d0, float *d1, int ow, int w, int32_t corner, int wp)
{
    const __m256i low = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
    const __m256i high = _mm256_add_epi32(low, _mm256_set1_epi32(4));
    const __m256i top = _mm256_setr_epi32(0, 1, 0, 1, 0, 1, 0, 1);
    const __m256i bottom = _mm256_add_epi32(top, _mm256_set1_epi32(w));
    const __m256i columns = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const __m256 zero = _mm256_setzero_ps();
    for (int ox = 0;; ox += POOL2_WIDE) {
        if (ox + POOL2_WIDE > ow)
            ox = ow - POOL2_WIDE;
        __m256 g = _mm256_loadu_ps(gy + ox);   /* loaded whatever ry is, as unpool2_block */
        if (ry)
            g = _mm256_and_ps(_mm256_cmp_ps(_mm256_loadu_ps(ry + ox), zero, _CMP_GT_OQ), g);
        __m256i first = _mm256_add_epi32(columns, _mm256_set1_epi32(corner + 2 * ox));
        __m256i k = _mm256_sub_epi32(_mm256_loadu_si256((const __m256i *)(a + ox)), first);
        __m256 g0 = _mm256_permutevar8x32_ps(g, low), g1 = _mm256_permutevar8x32_ps(g, high);
        __m256i k0 = _mm256_permutevar8x32_epi32(k, low);
        __m256i k1 = _mm256_permutevar8x32_epi32(k, high);
        float *e0 = d0 + 2 * ox, *e1 = d1 + 2 * ox;
        _mm256_storeu_ps(e0, _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(k0, top)), g0));
        _mm256_storeu_ps(e0 + 8,
                         _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(k1, top)), g1));
        _mm256_storeu_ps(e1,
                         _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(k0, bottom)), g0));
        _mm256_storeu_ps(e1 + 8,
                         _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(k1, bottom)), g1));
        if (ox + POOL2_WIDE == ow)
            break;
    }
    for (int c = 2 * ow; c < wp; c++)   /* the columns past the last window */
        d0[c] = d1[c] = 0.0f;
}

#endif

#endif
