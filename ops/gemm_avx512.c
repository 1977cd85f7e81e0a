/* AVX-512 micro-kernel, 8 x 32: 16 zmm accumulators, two 16-wide B vectors per k step. 8 rows
 * divide the 32 to 128 filters and channels of Winograd's products, which 12 left with a
 * partial tile (vgg-small and wide-28 train 3% to 5% faster than with 12 x 32; large SGEMMs
 * run as fast, ./build.sh bench ops). Compiled with AVX-512 flags (Makefile); only called
 * where ops/cpu.c allows it. */
#include "ops/gemm.h"

#include <immintrin.h>

enum { MR = 8, NR = 32 };

/* The tile, with A's rows si apart: a constant 1 (packed panels, A transposed) where it is
 * inlined, so that those broadcasts keep one pointer (with si a variable everywhere, square
 * SGEMMs of 256 to 1024 ran 2-3% slower); or the rows of A itself. */
static inline __attribute__((always_inline)) void tile_avx512(int kc, const float *A, long sa,
                                                              long si, const float *B, long sb,
                                                              float *C, int ldc, float alpha,
                                                              int add)
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
        __m512 b0 = _mm512_loadu_ps(B), b1 = _mm512_loadu_ps(B + 16);
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++) {
            __m512 a = _mm512_set1_ps(A[i * si]);
            c[i][0] = _mm512_fmadd_ps(a, b0, c[i][0]);
            c[i][1] = _mm512_fmadd_ps(a, b1, c[i][1]);
        }
        A += sa;
        B += sb;
    }
    __m512 al = _mm512_set1_ps(alpha);
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
        float *row = C + (long)i * ldc;
        __m512 c0 = add ? _mm512_loadu_ps(row) : _mm512_setzero_ps();
        __m512 c1 = add ? _mm512_loadu_ps(row + 16) : _mm512_setzero_ps();
        _mm512_storeu_ps(row, _mm512_fmadd_ps(al, c[i][0], c0));
        _mm512_storeu_ps(row + 16, _mm512_fmadd_ps(al, c[i][1], c1));
    }
}

static void kernel_avx512(int kc, const float *A, int sa, int si, const float *B, int sb, float *C,
                          int ldc, float alpha, int add)
{
    if (si == 1)
        tile_avx512(kc, A, sa, 1, B, sb, C, ldc, alpha, add);
    else
        tile_avx512(kc, A, sa, si, B, sb, C, ldc, alpha, add);
}

const gemm_arch gemm_arch_avx512 = {MR, NR, 96, 256, 4096, kernel_avx512, gemm_transpose_avx2,
                                    NULL};
