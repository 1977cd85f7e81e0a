/* GEMM driver: BLIS-style loops around a register-tiled micro-kernel.
 *
 * For each NC-wide block of columns and KC-deep slice of K, op(B) is packed into NR-wide panels;
 * for each MC-tall block of rows, op(A) is packed into MR-tall panels; the micro-kernel then
 * sweeps MR x NR tiles with both operands streaming from packed, cache-resident memory. An
 * operand small enough to stay in cache is read where it is instead, where the micro-kernel
 * can take its panels from it (B, whose rows of k hold them; A, along its rows or, transposed,
 * along its rows of k): small GEMMs spent more time packing than multiplying. */
#include "ops/gemm.h"

#include "ops/cpu.h"
#include "ops/scratch.h"

#include <string.h>
#include <xmmintrin.h>   /* SSE, part of baseline x86-64: 4x4 transposes while packing */

/* Portable micro-kernel: 4 x 8, written so the compiler vectorises it for baseline SSE2. */
enum { P_MR = 4, P_NR = 8 };

static void kernel_portable(int kc, const float *A, int sa, int si, const float *B, int sb,
                            float *C, int ldc, float alpha, int add)
{
    float acc[P_MR][P_NR] = {{0}};
    for (int k = 0; k < kc; k++) {
        for (int i = 0; i < P_MR; i++) {
            float a = A[(size_t)i * si];
#pragma omp simd
            for (int j = 0; j < P_NR; j++)
                acc[i][j] += a * B[j];
        }
        A += sa;
        B += sb;
    }
    for (int i = 0; i < P_MR; i++)
#pragma omp simd
        for (int j = 0; j < P_NR; j++)
            C[i * ldc + j] = (add ? C[i * ldc + j] : 0.0f) + alpha * acc[i][j];
}

const gemm_arch gemm_arch_portable = {P_MR, P_NR, 128, 256, 2048, kernel_portable, gemm_transpose,
                                      NULL, NULL};

static const gemm_arch *arch_for(ops_isa isa)
{
#if defined(__x86_64__)
    if (isa == OPS_ISA_AVX512)
        return &gemm_arch_avx512;
    if (isa == OPS_ISA_AVX2)
        return &gemm_arch_avx2;
#endif
    (void)isa;
    return &gemm_arch_portable;
}

/* gemm.h's transposing copy, by 4x4 blocks in SSE registers, where one element at a time would
 * read a column of distant rows per step. */
void gemm_transpose(const float *src, int lds, int rows, int cols, float *dst, int ldd)
{
    int i = 0;
    for (; i + 4 <= rows; i += 4) {
        const float *s = src + (size_t)i * lds;
        int k = 0;
        for (; k + 4 <= cols; k += 4) {
            __m128 r0 = _mm_loadu_ps(s + k), r1 = _mm_loadu_ps(s + lds + k);
            __m128 r2 = _mm_loadu_ps(s + 2 * (size_t)lds + k);
            __m128 r3 = _mm_loadu_ps(s + 3 * (size_t)lds + k);
            _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
            float *d = dst + (size_t)k * ldd + i;
            _mm_storeu_ps(d, r0);
            _mm_storeu_ps(d + ldd, r1);
            _mm_storeu_ps(d + 2 * (size_t)ldd, r2);
            _mm_storeu_ps(d + 3 * (size_t)ldd, r3);
        }
        for (; k < cols; k++)
            for (int r = 0; r < 4; r++)
                dst[(size_t)k * ldd + i + r] = s[(size_t)r * lds + k];
    }
    for (; i < rows; i++)
        for (int k = 0; k < cols; k++)
            dst[(size_t)k * ldd + i] = src[(size_t)i * lds + k];
}

void ops_transpose(const float *src, int lds, int rows, int cols, float *dst, int ldd)
{
    arch_for(ops_isa_active())->transpose(src, lds, rows, cols, dst, ldd);
}

/* A partial panel (from < width values of each of its kc rows) zeroed whole before it is
 * filled: its padding. (A memset of its last width - from values per row, kc calls of a few
 * bytes, took 0.4% of vgg-small's time with AVX2's 6-row panels and 32 filters.) */
static void zero_partial(float *panel, int kc, int from, int width)
{
    if (from < width)
        memset(panel, 0, sizeof(float) * (size_t)kc * (size_t)width);
}

/* op(A)[ic.., pc..] -> MR-row panels, each kc columns of MR values, zero-padded. */
static void pack_a(const gemm_arch *g, int trans, const float *A, int lda, int mc, int kc,
                   float *Ap)
{
    for (int ir = 0; ir < mc; ir += g->mr) {
        int m = mc - ir < g->mr ? mc - ir : g->mr;
        float *panel = Ap + (size_t)ir * kc;
        size_t row = sizeof(float) * (size_t)m;
        zero_partial(panel, kc, m, g->mr);
        if (trans)
            for (int k = 0; k < kc; k++)
                memcpy(panel + (size_t)k * g->mr, A + (size_t)k * lda + ir, row);
        else
            g->transpose(A + (size_t)ir * lda, lda, m, kc, panel, g->mr);
    }
}

/* op(B)[pc.., jc..] -> NR-column panels, each kc rows of NR values, zero-padded. */
static void pack_b(const gemm_arch *g, int trans, const float *B, int ldb, int kc, int nc,
                   float *Bp)
{
    for (int jr = 0; jr < nc; jr += g->nr) {
        int n = nc - jr < g->nr ? nc - jr : g->nr;
        float *panel = Bp + (size_t)jr * kc;
        size_t row = sizeof(float) * (size_t)n;
        zero_partial(panel, kc, n, g->nr);
        if (trans)
            g->transpose(B + (size_t)jr * ldb, ldb, n, kc, panel, g->nr);
        else
            for (int k = 0; k < kc; k++)
                memcpy(panel + (size_t)k * g->nr, B + (size_t)k * ldb + jr, row);
    }
}

static void scale_c(int M, int N, float beta, float *C, int ldc)
{
    for (int i = 0; i < M; i++) {
        float *row = C + (size_t)i * ldc;
        if (beta == 0.0f)
            memset(row, 0, sizeof(float) * (size_t)N);
        else
#pragma omp simd
            for (int j = 0; j < N; j++)
                row[j] *= beta;
    }
}

/* C[m x n] = tile (+ C when add), from the micro-kernel's scratch tile of nr columns. */
static void store_edge(const float *tile, int nr, int m, int n, float *C, int ldc, int add)
{
    for (int i = 0; i < m; i++) {
        float *row = C + (size_t)i * ldc;
        const float *t = tile + (size_t)i * nr;
#pragma omp simd
        for (int j = 0; j < n; j++)
            row[j] = (add ? row[j] : 0.0f) + t[j];
    }
}

/* Where the micro-kernel reads an operand's panels (MR rows of A or NR columns of B, kc deep):
 * those before in_place straight from the caller's matrix, which already holds them: as rows
 * of k (B, or A transposed: panel j at rows + j, step ld from one k to the next, across 1
 * from one row or column to the next), or, A itself, along its rows (panel j at rows + j * ld,
 * step 1, across ld); the rest packed (panel j at packed + (j - in_place) * kc, step the
 * panel's width, across 1). */
typedef struct panels {
    const float *rows;
    int ld, in_place, width, kc;
    int along_rows;
    const float *packed;
} panels;

/* Read in place only while the rows a block spans stay in cache (floats): further apart,
 * packing pays for itself, unless the product has only a row tile or two to reuse B's panels
 * (a dense layer's input gradient of a 16-sample chunk: packing its 2 MB of weights for every
 * chunk took 17% of vgg-small's dense backward; prepare_b). */
#define IN_PLACE_SPAN (64 * 1024)

static const float *panel_at(const panels *p, int j, int *step, int *across)
{
    *across = 1;
    if (j >= p->in_place) {
        *step = p->width;
        return p->packed + (size_t)(j - p->in_place) * p->kc;
    }
    if (p->along_rows) {
        *step = 1, *across = p->ld;
        return p->rows + (size_t)j * p->ld;
    }
    *step = p->ld;
    return p->rows + j;
}

/* op(B)'s panels for a kc x nc block at Bsrc: in place where op(B) is B (not transposed). */
static panels prepare_b(const gemm_arch *g, int trans, const float *Bsrc, int ldb, int kc, int nc,
                        int rows, float *Bp)
{
    int near = (size_t)kc * ldb <= IN_PLACE_SPAN || rows <= 2 * g->mr;
    int in_place = !trans && near ? nc / g->nr * g->nr : 0;
    pack_b(g, trans, trans ? Bsrc : Bsrc + in_place, ldb, kc, nc - in_place, Bp);
    return (panels){Bsrc, ldb, in_place, g->nr, kc, 0, Bp};
}

/* op(A)'s panels for an mc x kc block at Asrc: in place while the rows the block spans stay
 * in cache, transposed (rows of k) or not (along its rows: packing them took transposing
 * copies, 2% of vgg-small's time). */
static panels prepare_a(const gemm_arch *g, int trans, const float *Asrc, int lda, int mc, int kc,
                        int cols, float *Ap)
{
    /* ... or where two column tiles at most are all it meets: each panel read once, or again
     * at once from L1, packing it would only add a copy (a dense layer's 256 x 2048 weights
     * times a chunk of 32 samples, AVX2's two tiles of 16: packed, 1.6 times as long) */
    size_t span = (size_t)(trans ? kc : mc) * (size_t)lda;
    int in_place = span <= IN_PLACE_SPAN || cols <= 2 * g->nr ? mc / g->mr * g->mr : 0;
    pack_a(g, trans, trans ? Asrc + in_place : Asrc + (size_t)in_place * lda, lda, mc - in_place,
           kc, Ap);
    return (panels){Asrc, lda, in_place, g->mr, kc, !trans, Ap};
}

/* C[mc x nc] (+)= alpha * the block's A and B panels, tile by tile; edge tiles through a
 * scratch tile. */
static void multiply_block(const gemm_arch *g, const panels *a, const panels *b, int mc, int nc,
                           float alpha, float *C, int ldc, int add)
{
    _Alignas(64) float tile[16 * 64];
    /* The A micro-panel (mr x kc) stays in L1 while B's panels stream from L2. */
    for (int ir = 0; ir < mc; ir += g->mr) {
        int m = mc - ir < g->mr ? mc - ir : g->mr, sa, ia, sb, ib;
        const float *ap = panel_at(a, ir, &sa, &ia);
        for (int jr = 0; jr < nc; jr += g->nr) {
            int n = nc - jr < g->nr ? nc - jr : g->nr;
            const float *bp = panel_at(b, jr, &sb, &ib);
            float *Ct = C + (size_t)ir * ldc + jr;
            int half = g->half && 2 * n <= g->nr;   /* a last tile of NR / 2 or fewer */
            if (m == g->mr && n == g->nr) {
                g->kernel(a->kc, ap, sa, ia, bp, sb, Ct, ldc, alpha, add);
            } else if (n == g->nr && g->rows) {
                g->rows(m, a->kc, ap, sa, ia, bp, sb, Ct, ldc, alpha, add);
            } else if (half && m == g->mr && 2 * n == g->nr) {
                g->half(a->kc, ap, sa, ia, bp, sb, Ct, ldc, alpha, add);
            } else {
                (half ? g->half : g->kernel)(a->kc, ap, sa, ia, bp, sb, tile, g->nr, alpha, 0);
                store_edge(tile, g->nr, m, n, Ct, ldc, add);
            }
        }
    }
}

int ops_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
              int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0)
        return 0;
    /* beta = 0: the first slice of K writes C instead of adding to it, so C is never read. */
    int overwrite = beta == 0.0f && K > 0 && alpha != 0.0f;
    if (beta != 1.0f && !overwrite)
        scale_c(M, N, beta, C, ldc);
    if (K <= 0 || alpha == 0.0f)
        return 0;
    const gemm_arch *g = arch_for(ops_isa_active());
    int mr = g->mr, nr = g->nr;
    int nc_max = N < g->nc ? N : g->nc, kc_max = K < g->kc ? K : g->kc;
    int mc_max = M < g->mc ? M : g->mc;
    float *Bp = ops_scratch(SCRATCH_PACK_B, (size_t)kc_max * (size_t)((nc_max + nr - 1) / nr * nr));
    float *Ap = ops_scratch(SCRATCH_PACK_A, (size_t)kc_max * (size_t)((mc_max + mr - 1) / mr * mr));
    if (!Ap || !Bp)
        return -1;
    for (int jc = 0; jc < N; jc += g->nc) {
        int nc = N - jc < g->nc ? N - jc : g->nc;
        for (int pc = 0; pc < K; pc += g->kc) {
            int kc = K - pc < g->kc ? K - pc : g->kc;
            const float *Bsrc = trans_b ? B + (size_t)jc * ldb + pc : B + (size_t)pc * ldb + jc;
            panels b = prepare_b(g, trans_b, Bsrc, ldb, kc, nc, M, Bp);
            for (int ic = 0; ic < M; ic += g->mc) {
                int mc = M - ic < g->mc ? M - ic : g->mc;
                const float *Asrc = trans_a ? A + (size_t)pc * lda + ic : A + (size_t)ic * lda + pc;
                panels a = prepare_a(g, trans_a, Asrc, lda, mc, kc, nc, Ap);
                multiply_block(g, &a, &b, mc, nc, alpha, C + (size_t)ic * ldc + jc, ldc,
                               !(overwrite && pc == 0));
            }
        }
    }
    return 0;
}
