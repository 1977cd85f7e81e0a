/* What the AVX2 builds share on 8 floats a register: the first n of them (masks, loads and
 * stores of a row's last values) and the 8 x 8 transpose (gemm_avx2.c's transposing copy,
 * winograd_f4_avx2.c's transforms by columns, lanes_avx2.h's rows and lanes). */
#ifndef FRUGAL_VEC_AVX2_H
#define FRUGAL_VEC_AVX2_H

#include <immintrin.h>

/* Lanes [0, n) set: a mask for the first n of 8 values. */
static inline __m256i first_n8(int n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* p[0 .. n), zeros after, of 8 floats (the last few, at a row's end, by a masked load). */
static inline __m256 load_upto8(const float *p, int n)
{
    if (n >= 8)
        return _mm256_loadu_ps(p);
    return n <= 0 ? _mm256_setzero_ps() : _mm256_maskload_ps(p, first_n8(n));
}

/* p[0 .. min(n, 8)) = v's first values (nothing when n <= 0). */
static inline void store_upto8(float *p, __m256 v, int n)
{
    if (n >= 8)
        _mm256_storeu_ps(p, v);
    else if (n > 0)
        _mm256_maskstore_ps(p, first_n8(n), v);
}

/* r[i][j] becomes r[j][i]: pairs interleaved, then quads, then the 128-bit halves exchanged. */
static inline __attribute__((always_inline)) void transpose8x8(__m256 r[8])
{
    __m256 t[8], s[8];
#pragma GCC unroll 4
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
#pragma GCC unroll 2
    for (int i = 0; i < 8; i += 4) {
        s[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        s[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        s[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        s[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(s[i], s[4 + i], 0x20);
        r[4 + i] = _mm256_permute2f128_ps(s[i], s[4 + i], 0x31);
    }
}

#endif
