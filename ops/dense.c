/* Dense layers. Chunks of many samples go through GEMM; a few samples (the engine's grain on large
 * inputs is often one) go through dot products and axpys over the weight rows, which are
 * contiguous (out x in): packing a 10 x 95,000 weight matrix for a single row of GEMM costs more
 * than the multiplication. Few outputs (a classifier's 10) take dot products forward and
 * dense_rows_outer for the weight gradient whatever the chunk: GEMM's tiles would be mostly
 * padding. */
#include "ops/cpu.h"
#include "ops/dense_rows.h"
#include "ops/gemm.h"
#include "ops/layers.h"
#include "ops/scratch.h"

/* Forward with few outputs (a classifier's 10) also takes dot products, in tiles of the input
 * dimension so that each sample and each weight row is read from memory once: GEMM's register
 * tiles would be mostly padding. */
enum { GEMM_MIN_SAMPLES = 8, GEMM_MIN_OUTPUTS = 32, TILE = 2048 };

/* The portable build of the forward's dot products (baseline SSE): acc[r] += x . w_r for 4
 * weight rows at once, x loaded once, 4 independent sums hiding the add latency. */
static void dot4_portable(const float *x, const float *w, size_t ldw, int n, float *acc)
{
    const float *w0 = w, *w1 = w + ldw, *w2 = w + 2 * ldw, *w3 = w + 3 * ldw;
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
    for (int i = 0; i < n; i++) {
        float xi = x[i];
        s0 += xi * w0[i];
        s1 += xi * w1[i];
        s2 += xi * w2[i];
        s3 += xi * w3[i];
    }
    acc[0] += s0, acc[1] += s1, acc[2] += s2, acc[3] += s3;
}

static float dot_portable(const float *a, const float *b, int n)
{
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* y += x w^T for samples [n0, n1) on baseline SSE: a tile of a sample's inputs against every
 * row, rows in fours. */
static void forward_portable(int in, int out, const float *x, const float *wt, float *y, int n0,
                             int n1)
{
    for (int i0 = 0; i0 < in; i0 += TILE) {
        int len = in - i0 < TILE ? in - i0 : TILE;
        for (int n = n0; n < n1; n++) {
            const float *xn = x + (size_t)n * in + i0;
            float *yn = y + (size_t)n * out;
            int o = 0;
            for (; o + 4 <= out; o += 4)
                dot4_portable(xn, wt + (size_t)o * in + i0, (size_t)in, len, yn + o);
            for (; o < out; o++)
                yn[o] += dot_portable(xn, wt + (size_t)o * in + i0, len);
        }
    }
}

static void axpy_portable(float alpha, const float *x, float *y, int n)
{
#pragma omp simd
    for (int i = 0; i < n; i++)
        y[i] += alpha * x[i];
}

/* Each kernel on the widest path this CPU runs (ops/cpu.h). */
static void axpy(float alpha, const float *x, float *y, int n)
{
    ops_isa isa = ops_isa_active();
    if (isa == OPS_ISA_AVX512)
        dense_rows_axpy_avx512(alpha, x, y, n);
    else if (isa == OPS_ISA_AVX2)
        dense_rows_axpy_avx2(alpha, x, y, n);
    else
        axpy_portable(alpha, x, y, n);
}

/* y^T = W x^T, then y: GEMM as x W^T would pack the weights transposed for every chunk (2 MB
 * for vgg-small's 2048 -> 256, as long as the products), where W x^T reads them in place and
 * packs the chunk instead. The same products summed in the same order, the same bits. */
static int forward_gemm(int in, int out, const float *x, const float *wt, const float *bias,
                        float *y, int n)
{
    float *yt = ops_scratch(SCRATCH_PARTIALS, (size_t)out * (size_t)n);
    if (!yt)
        return -1;
    for (int o = 0; o < out; o++)
        for (int s = 0; s < n; s++)
            yt[(size_t)o * n + s] = bias ? bias[o] : 0.0f;
    if (ops_sgemm(0, 1, out, n, in, 1.0f, wt, in, x, in, 1.0f, yt, n))
        return -1;
    ops_transpose(yt, n, out, n, y, out);
    return 0;
}

int dense_forward(int in, int out, const float *x, const float *wt, const float *bias, float *y,
                  int n0, int n1)
{
    if (n1 - n0 >= GEMM_MIN_SAMPLES && out >= GEMM_MIN_OUTPUTS)
        return forward_gemm(in, out, x + (size_t)n0 * in, wt, bias, y + (size_t)n0 * out,
                            n1 - n0);
    for (int n = n0; n < n1; n++)
        for (int o = 0; o < out; o++)
            y[(size_t)n * out + o] = bias ? bias[o] : 0.0f;
    const float *xs = x + (size_t)n0 * in;
    float *ys = y + (size_t)n0 * out;
    ops_isa isa = ops_isa_active();
    if (isa == OPS_ISA_AVX512)
        dense_rows_forward_avx512(xs, (size_t)in, n1 - n0, wt, (size_t)in, out, in, ys, out);
    else if (isa == OPS_ISA_AVX2)
        dense_rows_forward_avx2(xs, (size_t)in, n1 - n0, wt, (size_t)in, out, in, ys, out);
    else
        forward_portable(in, out, x, wt, y, n0, n1);
    return 0;
}

int dense_backward_input(int in, int out, const float *dy, const float *wt, float *dx, int n0,
                         int n1)
{
    if (n1 - n0 < GEMM_MIN_SAMPLES) {
        for (int n = n0; n < n1; n++) {
            float *d = dx + (size_t)n * in;
            for (int i = 0; i < in; i++)
                d[i] = 0;
            for (int o = 0; o < out; o++)
                axpy(dy[(size_t)n * out + o], wt + (size_t)o * in, d, in);
        }
        return 0;
    }
    return ops_sgemm(0, 0, n1 - n0, in, out, 1.0f, dy + (size_t)n0 * out, out, wt, in, 0.0f,
                     dx + (size_t)n0 * in, in);
}

/* The weight gradient of few outputs (a classifier's 10) on AVX2 and AVX-512: rows in even
 * groups of at most 8, each input vector loaded once for a group's rows. */
static void outer_rows(int in, int out, const float *x, const float *dy, float *dwt, int ns,
                       int accumulate)
{
    int groups = (out + 7) / 8, per = (out + groups - 1) / groups;
    for (int o = 0; o < out; o += per) {
        int rows = out - o < per ? out - o : per;
        if (ops_isa_active() == OPS_ISA_AVX512)
            dense_rows_outer_avx512(x, (size_t)in, dy + o, out, ns, dwt + (size_t)o * in,
                                    (size_t)in, rows, in, accumulate);
        else
            dense_rows_outer_avx2(x, (size_t)in, dy + o, out, ns, dwt + (size_t)o * in,
                                  (size_t)in, rows, in, accumulate);
    }
}

int dense_backward_weights(int in, int out, const float *x, const float *dy, float *dwt,
                           float *dbias, int n0, int n1, int accumulate)
{
    if (out < GEMM_MIN_OUTPUTS && ops_isa_active() >= OPS_ISA_AVX2) {
        outer_rows(in, out, x + (size_t)n0 * in, dy + (size_t)n0 * out, dwt, n1 - n0,
                   accumulate);
    } else if (n1 - n0 < GEMM_MIN_SAMPLES) {
        for (int o = 0; o < out; o++) {   /* samples in order: reproducible */
            float *row = dwt + (size_t)o * in;
            if (!accumulate)
                for (int i = 0; i < in; i++)
                    row[i] = 0;
            for (int n = n0; n < n1; n++)
                axpy(dy[(size_t)n * out + o], x + (size_t)n * in, row, in);
        }
    } else if (ops_sgemm(1, 0, out, in, n1 - n0, 1.0f, dy + (size_t)n0 * out, out,
                         x + (size_t)n0 * in, in, accumulate ? 1.0f : 0.0f, dwt, in)) {
        return -1;
    }
    if (!dbias)
        return 0;
    for (int o = 0; o < out; o++) {
        float s = accumulate ? dbias[o] : 0.0f;
        for (int n = n0; n < n1; n++)   /* in sample order: reproducible */
            s += dy[(size_t)n * out + o];
        dbias[o] = s;
    }
    return 0;
}
