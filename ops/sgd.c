#include "ops/layers.h"

void sgd_update(float *w, const float *g, float *v, float lr, float momentum, float wd, long i0,
                long i1)
{
    if (momentum == 0.0f) {   /* as PyTorch, no velocity: a third less memory traffic */
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
