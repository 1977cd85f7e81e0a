/* AVX-512 micro-kernel, 12 x 32: 24 zmm accumulators, two 16-wide B vectors per k step.
 * Compiled with AVX-512 flags (Makefile); only called where ops/cpu.c allows it. */
#include "ops/gemm.h"

#include <immintrin.h>

enum { MR = 12, NR = 32 };

static void kernel_avx512(int kc, const float *A, const float *B, float *C, int ldc, float alpha)
{
    __m512 c[MR][2];
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++)
        c[i][0] = c[i][1] = _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int k = 0; k < kc; k++) {
        _mm_prefetch((const char *)(B + 8 * NR), _MM_HINT_T0);
        _mm_prefetch((const char *)(A + 8 * MR), _MM_HINT_T0);
        __m512 b0 = _mm512_load_ps(B), b1 = _mm512_load_ps(B + 16);
#pragma GCC unroll 12
        for (int i = 0; i < MR; i++) {
            __m512 a = _mm512_set1_ps(A[i]);
            c[i][0] = _mm512_fmadd_ps(a, b0, c[i][0]);
            c[i][1] = _mm512_fmadd_ps(a, b1, c[i][1]);
        }
        A += MR;
        B += NR;
    }
    __m512 al = _mm512_set1_ps(alpha);
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) {
        float *row = C + (long)i * ldc;
        _mm512_storeu_ps(row, _mm512_fmadd_ps(al, c[i][0], _mm512_loadu_ps(row)));
        _mm512_storeu_ps(row + 16, _mm512_fmadd_ps(al, c[i][1], _mm512_loadu_ps(row + 16)));
    }
}

const gemm_arch gemm_arch_avx512 = {MR, NR, 96, 256, 4096, kernel_avx512};
