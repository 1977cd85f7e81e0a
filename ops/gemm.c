/* GEMM driver: BLIS-style loops around a register-tiled micro-kernel.
 *
 * For each NC-wide block of columns and KC-deep slice of K, op(B) is packed into NR-wide panels;
 * for each MC-tall block of rows, op(A) is packed into MR-tall panels; the micro-kernel then
 * sweeps MR x NR tiles with both operands streaming from packed, cache-resident memory. */
#include "ops/gemm.h"

#include "ops/cpu.h"
#include "ops/scratch.h"

#include <string.h>
#include <xmmintrin.h>   /* SSE, part of baseline x86-64: 4x4 transposes while packing */

/* Portable micro-kernel: 4 x 8, written so the compiler vectorises it for baseline SSE2. */
enum { P_MR = 4, P_NR = 8 };

static void kernel_portable(int kc, const float *A, const float *B, float *C, int ldc, float alpha)
{
    float acc[P_MR][P_NR] = {{0}};
    for (int k = 0; k < kc; k++) {
        for (int i = 0; i < P_MR; i++) {
            float a = A[i];
#pragma omp simd
            for (int j = 0; j < P_NR; j++)
                acc[i][j] += a * B[j];
        }
        A += P_MR;
        B += P_NR;
    }
    for (int i = 0; i < P_MR; i++)
#pragma omp simd
        for (int j = 0; j < P_NR; j++)
            C[i * ldc + j] += alpha * acc[i][j];
}

const gemm_arch gemm_arch_portable = {P_MR, P_NR, 128, 256, 2048, kernel_portable};

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

/* dst[k * ldd + i] = src[i * lds + k] for i < rows, k < cols: the transposing copy that packing
 * a row-major A (or a transposed B) needs, by 4x4 blocks in SSE registers, where one element at
 * a time would read a column of distant rows per step. */
static void copy_transposed(const float *src, int lds, int rows, int cols, float *dst, int ldd)
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

/* Zeroes columns [from, width) of kc rows of width values: a partial panel's padding. */
static void zero_tail(float *panel, int kc, int from, int width)
{
    if (from < width)
        for (int k = 0; k < kc; k++)
            memset(panel + (size_t)k * width + from, 0, sizeof(float) * (size_t)(width - from));
}

/* op(A)[ic.., pc..] -> MR-row panels, each kc columns of MR values, zero-padded. */
static void pack_a(const gemm_arch *g, int trans, const float *A, int lda, int mc, int kc,
                   float *Ap)
{
    for (int ir = 0; ir < mc; ir += g->mr) {
        int m = mc - ir < g->mr ? mc - ir : g->mr;
        float *panel = Ap + (size_t)ir * kc;
        size_t row = sizeof(float) * (size_t)m;
        if (trans)
            for (int k = 0; k < kc; k++)
                memcpy(panel + (size_t)k * g->mr, A + (size_t)k * lda + ir, row);
        else
            copy_transposed(A + (size_t)ir * lda, lda, m, kc, panel, g->mr);
        zero_tail(panel, kc, m, g->mr);
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
        if (trans)
            copy_transposed(B + (size_t)jr * ldb, ldb, n, kc, panel, g->nr);
        else
            for (int k = 0; k < kc; k++)
                memcpy(panel + (size_t)k * g->nr, B + (size_t)k * ldb + jr, row);
        zero_tail(panel, kc, n, g->nr);
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

int ops_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
              int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0)
        return 0;
    if (beta != 1.0f)
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
    _Alignas(64) float tile[16 * 64];
    for (int jc = 0; jc < N; jc += g->nc) {
        int nc = N - jc < g->nc ? N - jc : g->nc;
        for (int pc = 0; pc < K; pc += g->kc) {
            int kc = K - pc < g->kc ? K - pc : g->kc;
            const float *Bsrc = trans_b ? B + (size_t)jc * ldb + pc : B + (size_t)pc * ldb + jc;
            pack_b(g, trans_b, Bsrc, ldb, kc, nc, Bp);
            for (int ic = 0; ic < M; ic += g->mc) {
                int mc = M - ic < g->mc ? M - ic : g->mc;
                const float *Asrc = trans_a ? A + (size_t)pc * lda + ic : A + (size_t)ic * lda + pc;
                pack_a(g, trans_a, Asrc, lda, mc, kc, Ap);
                /* The A micro-panel (mr x kc) stays in L1 while B's panels stream from L2. */
                for (int ir = 0; ir < mc; ir += mr) {
                    int m = mc - ir < mr ? mc - ir : mr;
                    for (int jr = 0; jr < nc; jr += nr) {
                        int n = nc - jr < nr ? nc - jr : nr;
                        float *Ct = C + (size_t)(ic + ir) * ldc + jc + jr;
                        const float *a = Ap + (size_t)ir * kc, *b = Bp + (size_t)jr * kc;
                        if (m == mr && n == nr) {
                            g->kernel(kc, a, b, Ct, ldc, alpha);
                            continue;
                        }
                        memset(tile, 0, sizeof(float) * (size_t)(mr * nr));
                        g->kernel(kc, a, b, tile, nr, alpha);
                        for (int i = 0; i < m; i++)
                            for (int j = 0; j < n; j++)
                                Ct[(size_t)i * ldc + j] += tile[i * nr + j];
                    }
                }
            }
        }
    }
    return 0;
}
