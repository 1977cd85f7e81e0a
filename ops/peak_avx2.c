#include "ops/peak.h"

#include <immintrin.h>

/* Ten independent FMA chains: enough to cover 2 ports x 4-5 cycles of latency. */
double peak_loop_avx2(long n, float *sink)
{
    __m256 acc[10];
    const __m256 m = _mm256_set1_ps(0.9999f), a = _mm256_set1_ps(1e-7f);
    for (int c = 0; c < 10; c++)
        acc[c] = _mm256_setzero_ps();
    for (long i = 0; i < n; i++)
#pragma GCC unroll 10
        for (int c = 0; c < 10; c++)
            acc[c] = _mm256_fmadd_ps(acc[c], m, a);
    __m256 s = acc[0];
    for (int c = 1; c < 10; c++)
        s = _mm256_add_ps(s, acc[c]);
    *sink = _mm256_cvtss_f32(s);
    return 2.0 * 8 * 10 * (double)n;
}
