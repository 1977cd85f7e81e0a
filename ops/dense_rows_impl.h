/* The dense layers' row kernels (ops/dense_rows.h), included by dense_rows_{avx2,avx512}.c with
 * ISA set to the suffix of the functions to define and VEC_BYTES to the vector width the file is
 * compiled for. Forward: blocks of samples times rows, each input vector loaded once for the
 * block's rows and each weight vector once for its samples, a vector of sums per sample and row
 * in a register. The weight gradient: a vector of each row's sums in a register over the
 * samples. */
#include "ops/dense_rows.h"
#include "ops/vec_impl.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#define NAME2(a, b) a##_##b
#define NAME(a, b) NAME2(a, b)
#define VL (VEC_BYTES / 4)

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

/* Sums in registers: about 20 with AVX-512's 32 vector registers, 8 with AVX2's 16. */
#define MAX_SUMS (VEC_BYTES >= 64 ? 20 : 8)
#define MAX_ROWS 5     /* rows per block: one sample against ten rows ran 1.19 us against 1.31
                        * on 4,920 inputs, but 47 against 39 on 96,000 (ten weight streams from
                        * L3 at once) */
#define QUAD 4
#define MAX_OUT 32     /* outputs per dot_samples call */
#define TILE 1024      /* inputs per tile: a quad's tiles take 16 KB of L1 */

/* sums[s][r] += x_s . w_r over the whole vectors of [i0, i1), for ns samples (x_s = x + s ldx)
 * and rows rows (w_r = w + r ldw): constants where it is inlined, so that the sums stay in
 * registers. Each input vector is loaded once for all the rows, each weight vector once for all
 * the samples (a weight row is read from L2 once per ns samples). */
static inline __attribute__((always_inline)) void dot_block(
    const float *x, size_t ldx, const int ns, const float *w, size_t ldw, const int rows,
    int i0, int i1, vf *sums)
{
    vf a[QUAD][MAX_ROWS];
#pragma GCC unroll 4
    for (int s = 0; s < ns; s++)
#pragma GCC unroll 5
        for (int r = 0; r < rows; r++)
            a[s][r] = sums[s * MAX_OUT + r];
    for (int i = i0; i < i1; i += VL) {
        vf xv[QUAD];
#pragma GCC unroll 4
        for (int s = 0; s < ns; s++) {
            xv[s] = vload(x + s * ldx + i);
            __asm__("" : "+v"(xv[s]));   /* in a register: GCC would load it once per row */
        }
#pragma GCC unroll 5
        for (int r = 0; r < rows; r++) {
            vf wv = vload(w + r * ldw + i);
#pragma GCC unroll 4
            for (int s = 0; s < ns; s++)
                a[s][r] = fused(xv[s], wv, a[s][r]);
        }
    }
#pragma GCC unroll 4
    for (int s = 0; s < ns; s++)
#pragma GCC unroll 5
        for (int r = 0; r < rows; r++)
            sums[s * MAX_OUT + r] = a[s][r];
}

/* dot_block for ns = 1 or QUAD and a rows <= MAX_ROWS known at run time. */
static void dot_rows(const float *x, size_t ldx, int ns, const float *w, size_t ldw, int rows,
                     int i0, int i1, vf *sums)
{
    switch (ns * 16 + rows) {
#define CASE(n, k)                                                                          \
    case n * 16 + k:                                                                        \
        dot_block(x, ldx, n, w, ldw, k, i0, i1, sums);                                      \
        break;
        CASE(1, 1) CASE(1, 2) CASE(1, 3) CASE(1, 4) CASE(1, 5)
        CASE(QUAD, 1) CASE(QUAD, 2) CASE(QUAD, 3) CASE(QUAD, 4) CASE(QUAD, 5)
#undef CASE
    }
}

/* The rows of a group for ns samples: MAX_SUMS / ns at most, in even groups. */
static int group_rows(int ns, int out)
{
    int most = MAX_SUMS / ns < MAX_ROWS ? MAX_SUMS / ns : MAX_ROWS;
    int groups = (out + most - 1) / most;
    return (out + groups - 1) / groups;
}

/* y[s ldy + r] += x_s . w_r for samples s < ns (1 or QUAD) and rows r < out <= MAX_OUT: in
 * tiles of the inputs, so that the samples' tiles stay in L1 while the rows stream past them; a
 * sum's vector carried from tile to tile, then added up and the tail (n % VL) added. */
static void dot_samples(const float *x, size_t ldx, int ns, const float *w, size_t ldw, int out,
                        int n, float *y, int ldy)
{
    vf sums[QUAD * MAX_OUT] = {0};
    int whole = n / VL * VL, per = group_rows(ns, out);
    for (int i0 = 0; i0 < whole; i0 += TILE) {
        int i1 = whole - i0 < TILE ? whole : i0 + TILE;
        for (int o = 0; o < out; o += per)
            dot_rows(x, ldx, ns, w + o * ldw, ldw, out - o < per ? out - o : per, i0, i1,
                     sums + o);
    }
    for (int s = 0; s < ns; s++)
        for (int r = 0; r < out; r++) {
            float t = sum(sums[s * MAX_OUT + r]);
            for (int j = whole; j < n; j++)
                t = fmaf(x[s * ldx + j], w[r * ldw + j], t);
            y[s * ldy + r] += t;
        }
}

void NAME(dense_rows_forward, ISA)(const float *x, size_t ldx, int ns, const float *w,
                                   size_t ldw, int out, int n, float *y, int ldy)
{
    for (int o = 0; o < out; o += MAX_OUT) {
        int rows = out - o < MAX_OUT ? out - o : MAX_OUT, s = 0;
        for (; s + QUAD <= ns; s += QUAD)
            dot_samples(x + s * ldx, ldx, QUAD, w + o * ldw, ldw, rows, n, y + s * ldy + o, ldy);
        for (; s < ns; s++)
            dot_samples(x + s * ldx, ldx, 1, w + o * ldw, ldw, rows, n, y + s * ldy + o, ldy);
    }
}

void NAME(dense_rows_axpy, ISA)(float alpha, const float *x, float *y, int n)
{
    vf al = vsplat(alpha);
    int i = 0;
    for (; i + VL <= n; i += VL) {
        vf v = vload(y + i) + al * vload(x + i);
        memcpy(y + i, &v, sizeof v);
    }
    for (; i < n; i++)
        y[i] += alpha * x[i];
}

/* dense_rows_outer's sums for nv <= 2 neighbouring vectors from input i on, a constant number
 * of rows: each dy value broadcast once for the nv vectors (one broadcast per FMA left the loop
 * waiting on loads: 131 GFLOP/s on DAHL 62x84x3's 10 x 4,920), the sums in registers. */
static inline __attribute__((always_inline)) void outer_block(
    const float *x, size_t ldx, const float *dy, int ldy, int ns, float *dw, size_t ldw,
    const int rows, const int nv, int i, int add)
{
    vf acc[8][2];
#pragma GCC unroll 8
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < nv; v++)
            acc[r][v] = (vf){0};
    for (int s = 0; s < ns; s++) {
        vf xv[2];
        for (int v = 0; v < nv; v++)
            xv[v] = vload(x + (size_t)s * ldx + i + v * VL);
        const float *d = dy + (size_t)s * ldy;
#pragma GCC unroll 8
        for (int r = 0; r < rows; r++) {
            vf dv = vsplat(d[r]);
            for (int v = 0; v < nv; v++)
                acc[r][v] = fused(dv, xv[v], acc[r][v]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < nv; v++) {
            float *p = dw + (size_t)r * ldw + i + v * VL;
            vf sum = add ? vload(p) + acc[r][v] : acc[r][v];
            memcpy(p, &sum, sizeof sum);
        }
}

/* outer_block over the whole vectors of n inputs, two at a time where AVX-512's registers hold
 * their sums; returns the inputs done. */
static inline __attribute__((always_inline)) int outer_vectors(
    const float *x, size_t ldx, const float *dy, int ldy, int ns, float *dw, size_t ldw,
    const int rows, int n, int add)
{
    const int pair = VEC_BYTES >= 64 ? 2 : 1;
    int i = 0;
    for (; i + pair * VL <= n; i += pair * VL)
        outer_block(x, ldx, dy, ldy, ns, dw, ldw, rows, pair, i, add);
    for (; i + VL <= n; i += VL)
        outer_block(x, ldx, dy, ldy, ns, dw, ldw, rows, 1, i, add);
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
