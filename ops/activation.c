#include "ops/layers.h"

void ops_relu_forward(const float *x, float *y, long i0, long i1)
{
    /* Written so that NaN passes through, as in PyTorch: a diverged run must not hide. */
#pragma omp simd
    for (long i = i0; i < i1; i++)
        y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

void ops_relu_backward(const float *y, const float *dy, float *dx, long i0, long i1)
{
    /* dy read whatever y is: a load under the condition would not vectorise. */
#pragma omp simd
    for (long i = i0; i < i1; i++) {
        float g = dy[i];
        dx[i] = y[i] > 0.0f ? g : 0.0f;
    }
}
