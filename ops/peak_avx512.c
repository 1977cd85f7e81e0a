#include "ops/peak.h"

#include <immintrin.h>

double peak_loop_avx512(long n, float *sink)
{
    __m512 acc[12];
    const __m512 m = _mm512_set1_ps(0.9999f), a = _mm512_set1_ps(1e-7f);
    for (int c = 0; c < 12; c++)
        acc[c] = _mm512_setzero_ps();
    for (long i = 0; i < n; i++)
#pragma GCC unroll 12
        for (int c = 0; c < 12; c++)
            acc[c] = _mm512_fmadd_ps(acc[c], m, a);
    __m512 s = acc[0];
    for (int c = 1; c < 12; c++)
        s = _mm512_add_ps(s, acc[c]);
    *sink = _mm512_reduce_add_ps(s);
    return 2.0 * 16 * 12 * (double)n;
}
