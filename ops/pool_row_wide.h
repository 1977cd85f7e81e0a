/* pool_row.h's max-pool row and its gradient on AVX-512, 16 windows a block, for rows of 16
 * windows or more (a row shorter than a block goes through pool_row.h). Included by the
 * AVX-512 build of the direct convolution only, inline for it.
 *
 * Why: with pool_row.h's blocks of 8, as GCC vectorises them, the pooling took 17% of DAHL
 * 62x84x3's fused forward and the unpooling (with a memset per row) a quarter of its fused
 * backward; here a block is a few permutes and masked moves for twice the windows. Values are
 * compared and moved, never computed: the same bits. */
#ifndef FRUGAL_POOL_ROW_WIDE_H
#define FRUGAL_POOL_ROW_WIDE_H

#include <immintrin.h>
#include <stdint.h>

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

#endif
