/* AVX2+FMA micro-kernel, 6 x 16: twelve ymm accumulators hide the FMA latency. Compiled with
 * -mavx2 -mfma (Makefile); only called after ops/cpu.c found the CPU supports it. */
#include "ops/gemm.h"

#include <immintrin.h>

enum { MR = 6, NR = 16 };

static void kernel_avx2(int kc, const float *A, int sa, const float *B, int sb, float *C, int ldc,
                        float alpha, int add)
{
    __m256 c[MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++)
        c[i][0] = c[i][1] = _mm256_setzero_ps();
    for (int k = 0; k < kc; k++) {
        __m256 b0 = _mm256_loadu_ps(B), b1 = _mm256_loadu_ps(B + 8);
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) {
            __m256 a = _mm256_broadcast_ss(A + i);
            c[i][0] = _mm256_fmadd_ps(a, b0, c[i][0]);
            c[i][1] = _mm256_fmadd_ps(a, b1, c[i][1]);
        }
        A += sa;
        B += sb;
    }
    __m256 al = _mm256_set1_ps(alpha);
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) {
        float *row = C + (long)i * ldc;
        __m256 c0 = add ? _mm256_loadu_ps(row) : _mm256_setzero_ps();
        __m256 c1 = add ? _mm256_loadu_ps(row + 8) : _mm256_setzero_ps();
        _mm256_storeu_ps(row, _mm256_fmadd_ps(al, c[i][0], c0));
        _mm256_storeu_ps(row + 8, _mm256_fmadd_ps(al, c[i][1], c1));
    }
}

const gemm_arch gemm_arch_avx2 = {MR, NR, 96, 256, 2048, kernel_avx2};
