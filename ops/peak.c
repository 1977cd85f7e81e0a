#include "ops/peak.h"
#include "common/clock.h"

#include <time.h>

enum { CHAINS = 8, WIDTH = 4 };

/* SSE2 has no FMA: a multiply and an add per lane, in independent chains. */
double peak_loop_portable(long n, float *sink)
{
    float acc[CHAINS][WIDTH] = {{0}};
    const float m = 0.9999f, a = 1e-7f;
    for (long i = 0; i < n; i++)
        for (int c = 0; c < CHAINS; c++)
#pragma omp simd
            for (int l = 0; l < WIDTH; l++)
                acc[c][l] = acc[c][l] * m + a;
    float s = 0;
    for (int c = 0; c < CHAINS; c++)
        for (int l = 0; l < WIDTH; l++)
            s += acc[c][l];
    *sink = s;
    return 2.0 * CHAINS * WIDTH * (double)n;
}

double ops_peak_gflops(ops_isa isa, double seconds)
{
    double (*loop)(long, float *) = peak_loop_portable;
#if defined(__x86_64__)
    if (isa == OPS_ISA_AVX512)
        loop = peak_loop_avx512;
    else if (isa == OPS_ISA_AVX2)
        loop = peak_loop_avx2;
#endif
    float sink;
    loop(100000, &sink);   /* warm up: AVX units power up, clocks settle */
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        long n = seconds < 0.05 ? 1 << 12 : 1 << 16;
        double t0 = clock_now_s(), flops = 0, t;
        do {
            flops += loop(n, &sink);
            t = clock_now_s() - t0;
        } while (t < seconds / 5);
        if (flops / t > best)
            best = flops / t;
    }
    return best * 1e-9;
}
