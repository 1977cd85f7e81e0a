#include "ops/gemm.h"
#include "ops/layers.h"


void dense_forward(int in, int out, const float *x, const float *wt, const float *bias, float *y,
                   int n0, int n1)
{
    float *yn = y + (size_t)n0 * out;
    for (int n = n0; n < n1; n++)
        for (int o = 0; o < out; o++)
            y[(size_t)n * out + o] = bias ? bias[o] : 0.0f;
    ops_sgemm(0, 1, n1 - n0, out, in, 1.0f, x + (size_t)n0 * in, in, wt, in, 1.0f, yn, out);
}

void dense_backward_input(int in, int out, const float *dy, const float *wt, float *dx, int n0,
                          int n1)
{
    ops_sgemm(0, 0, n1 - n0, in, out, 1.0f, dy + (size_t)n0 * out, out, wt, in, 0.0f,
              dx + (size_t)n0 * in, in);
}

void dense_backward_weights(int in, int out, const float *x, const float *dy, float *dwt,
                            float *dbias, int n0, int n1, int accumulate)
{
    ops_sgemm(1, 0, out, in, n1 - n0, 1.0f, dy + (size_t)n0 * out, out, x + (size_t)n0 * in, in,
              accumulate ? 1.0f : 0.0f, dwt, in);
    if (!dbias)
        return;
    for (int o = 0; o < out; o++) {
        float s = accumulate ? dbias[o] : 0.0f;
        for (int n = n0; n < n1; n++)   /* in sample order: reproducible */
            s += dy[(size_t)n * out + o];
        dbias[o] = s;
    }
}
