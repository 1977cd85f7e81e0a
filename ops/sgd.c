#include "ops/layers.h"

#include <string.h>

void sgd_update(float *w, const float *g, float *v, float lr, float momentum, float wd, long i0,
                long i1)
{
    if (momentum == 0.0f) {   /* as PyTorch, no velocity: 3 streams instead of 5 */
#pragma omp simd
        for (long i = i0; i < i1; i++)
            w[i] -= lr * (g[i] + wd * w[i]);
        return;
    }
#pragma omp simd
    for (long i = i0; i < i1; i++) {
        float d = g[i] + wd * w[i];
        v[i] = momentum * v[i] + d;
        w[i] -= lr * v[i];
    }
}

void sgd_update_parts(float *w, const float *const *parts, int nparts, float *v, float lr,
                      float momentum, float wd, long n)
{
    enum { BLOCK = 512 };   /* a block's sum stays in L1 */
    float g[BLOCK];
    for (long i0 = 0; i0 < n; i0 += BLOCK) {
        long m = n - i0 < BLOCK ? n - i0 : BLOCK;
        memcpy(g, parts[0] + i0, sizeof(float) * (size_t)m);
        for (int j = 1; j < nparts; j++) {
            const float *p = parts[j] + i0;
#pragma omp simd
            for (long i = 0; i < m; i++)
                g[i] += p[i];
        }
        sgd_update(w + i0, g, v ? v + i0 : NULL, lr, momentum, wd, 0, m);
    }
}
