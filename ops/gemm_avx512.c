/* AVX-512 micro-kernel, 8 x 32: 16 zmm accumulators, two 16-wide B vectors per k step. 8 rows
 * divide the 32 to 128 filters and channels of Winograd's products, which 12 left with a
 * partial tile (vgg-small and wide-28 train 3% to 5% faster than with 12 x 32; large SGEMMs
 * run as fast, ./build.sh bench ops). A last 16 columns (16 channels, a chunk of 16 samples)
 * take the tile's half, 8 x 16: through the whole tile, half its multiply-adds were on zeros
 * (cifar-shaped's 16 -> 32 layer's backward took 1.4 times as long). Compiled with AVX-512
 * flags (Makefile); only called where ops/cpu.c allows it. */
#include "ops/gemm.h"

#include <immintrin.h>

enum { MR = 8, NR = 32 };

/* The tile's first `halves` 16-column halves (a constant: 2, or 1 for a half tile), with A's
 * rows si apart: a constant 1 (packed panels, A transposed) where it is inlined, so that those
 * broadcasts keep one pointer (with si a variable everywhere, square SGEMMs of 256 to 1024 ran
 * 2-3% slower); or the rows of A itself. Each value's sum in the same order either way. */
static inline __attribute__((always_inline)) void tile_avx512(int halves, int kc, const float *A,
                                                              long sa, long si, const float *B,
                                                              long sb, float *C, int ldc,
                                                              float alpha, int add)
{
    __m512 c[MR][2];
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++)
        c[i][0] = c[i][1] = _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int k = 0; k < kc; k++) {
        _mm_prefetch((const char *)(B + 8 * sb), _MM_HINT_T0);
        if (si == 1)
            _mm_prefetch((const char *)(A + 8 * sa), _MM_HINT_T0);
        __m512 b[2];
#pragma GCC unroll 2
        for (int h = 0; h < halves; h++)
            b[h] = _mm512_loadu_ps(B + 16 * h);
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++) {
            __m512 a = _mm512_set1_ps(A[i * si]);
#pragma GCC unroll 2
            for (int h = 0; h < halves; h++)
                c[i][h] = _mm512_fmadd_ps(a, b[h], c[i][h]);
        }
        A += sa;
        B += sb;
    }
    __m512 al = _mm512_set1_ps(alpha);
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 2
        for (int h = 0; h < halves; h++) {
            float *at = C + (long)i * ldc + 16 * h;
            __m512 old = add ? _mm512_loadu_ps(at) : _mm512_setzero_ps();
            _mm512_storeu_ps(at, _mm512_fmadd_ps(al, c[i][h], old));
        }
}

static void kernel_avx512(int kc, const float *A, int sa, int si, const float *B, int sb, float *C,
                          int ldc, float alpha, int add)
{
    if (si == 1)
        tile_avx512(2, kc, A, sa, 1, B, sb, C, ldc, alpha, add);
    else
        tile_avx512(2, kc, A, sa, si, B, sb, C, ldc, alpha, add);
}

/* gemm.h's half kernel: the tile's first 16 columns. */
static void half_avx512(int kc, const float *A, int sa, int si, const float *B, int sb, float *C,
                        int ldc, float alpha, int add)
{
    if (si == 1)
        tile_avx512(1, kc, A, sa, 1, B, sb, C, ldc, alpha, add);
    else
        tile_avx512(1, kc, A, sa, si, B, sb, C, ldc, alpha, add);
}

const gemm_arch gemm_arch_avx512 = {MR, NR, 96, 256, 4096, kernel_avx512, gemm_transpose_avx2,
                                    NULL, half_avx512};
