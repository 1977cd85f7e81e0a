/* The dense layers' row kernels (ops/dense_rows.h), included by dense_rows_{avx2,avx512}.c with
 * ISA set to the suffix of the functions to define and VEC_BYTES to the vector width the file is
 * compiled for. Two vectors per row in flight: eight independent sums hide the FMA latency that
 * one sum per row would wait on; each input vector loaded feeds four rows. */
#include "ops/dense_rows.h"

#include <string.h>

#define NAME2(a, b) a##_##b
#define NAME(a, b) NAME2(a, b)
#define VL (VEC_BYTES / 4)

typedef float vf __attribute__((vector_size(VEC_BYTES)));

static inline vf load(const float *p)
{
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline float sum(vf v)
{
    float s = 0;
    for (int i = 0; i < VL; i++)
        s += v[i];
    return s;
}

void NAME(dense_rows_dot4, ISA)(const float *x, const float *w, size_t ldw, int n, float *acc)
{
    const float *r[4] = {w, w + ldw, w + 2 * ldw, w + 3 * ldw};
    vf a[4] = {0}, b[4] = {0};
    int i = 0;
    for (; i + 2 * VL <= n; i += 2 * VL) {
        vf x0 = load(x + i), x1 = load(x + i + VL);
        /* unrolled: as a loop, GCC kept the sums on the stack, a store and a reload per FMA
         * (a fifth of the speed; perf annotate) */
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            a[k] += x0 * load(r[k] + i);
            b[k] += x1 * load(r[k] + i + VL);
        }
    }
    for (int k = 0; k < 4; k++) {
        float s = sum(a[k] + b[k]);
        for (int j = i; j < n; j++)
            s += x[j] * r[k][j];
        acc[k] += s;
    }
}

float NAME(dense_rows_dot, ISA)(const float *a, const float *b, int n)
{
    vf s0 = {0}, s1 = {0};
    int i = 0;
    for (; i + 2 * VL <= n; i += 2 * VL) {
        s0 += load(a + i) * load(b + i);
        s1 += load(a + i + VL) * load(b + i + VL);
    }
    float s = sum(s0 + s1);
    for (; i < n; i++)
        s += a[i] * b[i];
    return s;
}

void NAME(dense_rows_axpy, ISA)(float alpha, const float *x, float *y, int n)
{
    vf al = (vf){0} + alpha;
    int i = 0;
    for (; i + VL <= n; i += VL) {
        vf v = load(y + i) + al * load(x + i);
        memcpy(y + i, &v, sizeof v);
    }
    for (; i < n; i++)
        y[i] += alpha * x[i];
}
