/* The dense layers' row kernels (ops/dense_rows.h), included by dense_rows_{avx2,avx512}.c with
 * ISA set to the suffix of the functions to define and VEC_BYTES to the vector width the file is
 * compiled for. Dot products: two vectors per row in flight, eight independent sums hide the
 * FMA latency that one sum per row would wait on; each input vector loaded feeds four rows (and
 * each weight vector two samples, on AVX-512). The weight gradient: a vector of each row's sums
 * in a register over the samples. */
#include "ops/dense_rows.h"

#include <immintrin.h>
#include <math.h>
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

/* a b + c rounded once, whatever the optimisation level (GCC contracts a * b + c only from
 * -O2 on, and the sanitizer builds use -O1): GEMM's kernels use FMA, and dense_rows_outer
 * must give their bits. */
static inline vf fused(vf a, vf b, vf c)
{
#if VEC_BYTES >= 64
    return (vf)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#else
    return (vf)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#endif
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

#if VEC_BYTES >= 64
/* dense_rows_dot4 for two samples x and x + ldx at once, and rows <= 4 rows, each weight
 * vector loaded once for both samples (half the weight traffic from L2), each sample's sums in
 * dense_rows_dot4's (and dense_rows_dot's) order: the same bits as calls of those. 16 sums and
 * 6 vectors in registers: AVX-512's 32 only. */
void NAME(dense_rows_dot4x2, ISA)(const float *x, size_t ldx, const float *w, size_t ldw,
                                  int rows, int n, float *acc, float *acc2)
{
    const float *r[4], *y = x + ldx;
    for (int k = 0; k < 4; k++)   /* fewer than 4 rows: the last one again, its sums dropped */
        r[k] = w + (size_t)(k < rows ? k : rows - 1) * ldw;
    vf a[4] = {0}, b[4] = {0}, c[4] = {0}, d[4] = {0};
    int i = 0;
    for (; i + 2 * VL <= n; i += 2 * VL) {
        vf x0 = load(x + i), x1 = load(x + i + VL), y0 = load(y + i), y1 = load(y + i + VL);
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            vf w0 = load(r[k] + i), w1 = load(r[k] + i + VL);
            __asm__("" : "+v"(w0), "+v"(w1));   /* in registers: GCC would load them twice */
            a[k] += x0 * w0;
            b[k] += x1 * w1;
            c[k] += y0 * w0;
            d[k] += y1 * w1;
        }
    }
    for (int k = 0; k < rows; k++) {
        float s = sum(a[k] + b[k]), t = sum(c[k] + d[k]);
        for (int j = i; j < n; j++)
            s += x[j] * r[k][j], t += y[j] * r[k][j];
        acc[k] += s;
        acc2[k] += t;
    }
}
#endif

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

/* dense_rows_outer's vectors for a constant number of rows (always inlined: the tests on rows
 * then cost nothing, and the sums stay in registers). */
static inline __attribute__((always_inline)) int outer_vectors(
    const float *x, size_t ldx, const float *dy, int ldy, int ns, float *dw, size_t ldw,
    const int rows, int n, int add)
{
    int i = 0;
    for (; i + VL <= n; i += VL) {
        vf acc[8];
#pragma GCC unroll 8
        for (int r = 0; r < rows; r++)
            acc[r] = (vf){0};
        for (int s = 0; s < ns; s++) {
            vf xv = load(x + (size_t)s * ldx + i);
            const float *d = dy + (size_t)s * ldy;
#pragma GCC unroll 8
            for (int r = 0; r < rows; r++)
                acc[r] = fused((vf){0} + d[r], xv, acc[r]);
        }
#pragma GCC unroll 8
        for (int r = 0; r < rows; r++) {
            float *p = dw + (size_t)r * ldw + i;
            vf v = add ? load(p) + acc[r] : acc[r];
            memcpy(p, &v, sizeof v);
        }
    }
    return i;
}

/* dw_r = (add ? dw_r : 0) + the sum over samples s < ns of dy[s ldy + r] x_s (x_s = x + s ldx)
 * for rows r < rows <= 8 (row stride ldw) and n inputs: each input vector is loaded once for
 * all the rows, and a row's sums stay in registers over the samples (GEMM packed the inputs
 * and ran its 8-row tiles twice for 10 rows). Samples summed in order, as GEMM does. */
void NAME(dense_rows_outer, ISA)(const float *x, size_t ldx, const float *dy, int ldy, int ns,
                                 float *dw, size_t ldw, int rows, int n, int add)
{
    int i;
    switch (rows) {
#define ROWS(k)                                                                             \
    case k:                                                                                 \
        i = outer_vectors(x, ldx, dy, ldy, ns, dw, ldw, k, n, add);                         \
        break;
        ROWS(1) ROWS(2) ROWS(3) ROWS(4) ROWS(5) ROWS(6) ROWS(7)
#undef ROWS
    default:
        i = outer_vectors(x, ldx, dy, ldy, ns, dw, ldw, 8, n, add);
    }
    for (; i < n; i++)
        for (int r = 0; r < rows; r++) {
            float a = 0;
            for (int s = 0; s < ns; s++)
                a = fmaf(dy[(size_t)s * ldy + r], x[(size_t)s * ldx + i], a);
            dw[(size_t)r * ldw + i] = (add ? dw[(size_t)r * ldw + i] : 0.0f) + a;
        }
}
