/* GEMM driver: BLIS-style loops around a register-tiled micro-kernel.
 *
 * For each NC-wide block of columns and KC-deep slice of K, op(B) is packed into NR-wide panels;
 * for each MC-tall block of rows, op(A) is packed into MR-tall panels; the micro-kernel then
 * sweeps MR x NR tiles with both operands streaming from packed, cache-resident memory. */
#include "ops/gemm.h"

#include "ops/cpu.h"
#include "ops/scratch.h"

#include <string.h>

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

/* op(A)[ic.., pc..] -> MR-row panels, each kc columns of MR values, zero-padded. */
static void pack_a(const gemm_arch *g, int trans, const float *A, int lda, int mc, int kc,
                   float *Ap)
{
    for (int ir = 0; ir < mc; ir += g->mr) {
        int m = mc - ir < g->mr ? mc - ir : g->mr;
        for (int k = 0; k < kc; k++) {
            float *dst = Ap + (size_t)ir * kc + (size_t)k * g->mr;
            int i = 0;
            if (trans) {
                const float *src = A + (size_t)k * lda + ir;
                for (; i < m; i++)
                    dst[i] = src[i];
            } else {
                for (; i < m; i++)
                    dst[i] = A[(size_t)(ir + i) * lda + k];
            }
            for (; i < g->mr; i++)
                dst[i] = 0;
        }
    }
}

/* op(B)[pc.., jc..] -> NR-column panels, each kc rows of NR values, zero-padded. */
static void pack_b(const gemm_arch *g, int trans, const float *B, int ldb, int kc, int nc,
                   float *Bp)
{
    for (int jr = 0; jr < nc; jr += g->nr) {
        int n = nc - jr < g->nr ? nc - jr : g->nr;
        for (int k = 0; k < kc; k++) {
            float *dst = Bp + (size_t)jr * kc + (size_t)k * g->nr;
            int j = 0;
            if (trans) {
                for (; j < n; j++)
                    dst[j] = B[(size_t)(jr + j) * ldb + k];
            } else {
                memcpy(dst, B + (size_t)k * ldb + jr, sizeof(float) * (size_t)n);
                j = n;
            }
            for (; j < g->nr; j++)
                dst[j] = 0;
        }
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
