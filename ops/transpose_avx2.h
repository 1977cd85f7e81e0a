/* The 8 x 8 transpose of floats in AVX registers, for the AVX2 builds that move values between
 * rows and columns (gemm_avx2.c's transposing copy, lanes_avx2.h's rows and lanes). */
#ifndef FRUGAL_TRANSPOSE_AVX2_H
#define FRUGAL_TRANSPOSE_AVX2_H

#include <immintrin.h>

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
