/* Single-precision GEMM, row-major: C = alpha * op(A) * op(B) + beta * C, where op(A) is M x K
 * and op(B) is K x N (op = transpose when the flag is set). Packed, cache-blocked, with a
 * register-tiled micro-kernel chosen at run time (ops/cpu.h). Single-threaded: the runtime owns
 * the threads and calls this on sub-ranges. */
#ifndef FRUGAL_GEMM_H
#define FRUGAL_GEMM_H

/* Returns 0, or -1 (C untouched past the beta scaling) when its packing buffers could not be
 * allocated. */
int ops_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
               int lda, const float *B, int ldb, float beta, float *C, int ldc);

/* Micro-kernel contract, shared by the per-ISA files: C[mr x nr] = alpha * A * B, plus C when
 * add (else C is not read). Step k reads MR values of A, row i at A + k * sa + i * si, and NR
 * values of B at B + k * sb: packed panels (sa = MR, si = 1, sb = NR), or the caller's
 * matrices where they already hold them (A transposed: sa = lda, si = 1; A itself: sa = 1,
 * si = lda; B: sb = ldb). */
typedef void (*gemm_ukernel)(int kc, const float *A, int sa, int si, const float *B, int sb,
                             float *C, int ldc, float alpha, int add);
/* dst[k * ldd + i] = src[i * lds + k] for i < rows, k < cols: the transposing copy that packing
 * a row-major A (or a transposed B) needs. */
typedef void (*gemm_transposer)(const float *src, int lds, int rows, int cols, float *dst,
                                int ldd);
void gemm_transpose(const float *src, int lds, int rows, int cols, float *dst, int ldd);
/* The same copy, by the fastest transposer this machine has. */
void ops_transpose(const float *src, int lds, int rows, int cols, float *dst, int ldd);
void gemm_transpose_avx2(const float *src, int lds, int rows, int cols, float *dst, int ldd);

/* The first rows < MR rows of a tile NR wide, straight into C as the micro-kernel writes a
 * whole tile: an edge of fewer rows costs its rows' multiply-adds, not a whole tile's (and
 * no scratch tile). With alpha = 1, as every caller has, the values are the scratch tile's
 * (C + (AB + 0) against C + AB: a zero's sign at most). */
typedef void (*gemm_rows_ukernel)(int rows, int kc, const float *A, int sa, int si,
                                  const float *B, int sb, float *C, int ldc, float alpha,
                                  int add);

typedef struct gemm_arch {
    int mr, nr;                  /* register tile */
    int mc, kc, nc;              /* cache blocks */
    gemm_ukernel kernel;         /* full MR x NR tiles only; edges go through a scratch tile */
    gemm_transposer transpose;   /* packing's transposing copy (AVX2 and AVX-512: 8 x 8 blocks) */
    gemm_rows_ukernel rows;      /* where MR leaves a part tile of the common sizes (AVX2's 6
                                  * rows against 32 filters), else NULL */
    gemm_ukernel half;           /* the first NR / 2 columns of a tile, where a last tile of
                                  * that few is common (AVX-512's 16 of 32: 16 channels or
                                  * samples), else NULL */
} gemm_arch;

extern const gemm_arch gemm_arch_portable, gemm_arch_avx2, gemm_arch_avx512;

#endif
