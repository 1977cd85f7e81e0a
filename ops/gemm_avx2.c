/* AVX2+FMA micro-kernel, 6 x 16: twelve ymm accumulators hide the FMA latency. Compiled with
 * -mavx2 -mfma (Makefile); only called after ops/cpu.c found the CPU supports it. */
#include "ops/gemm.h"
#include "ops/vec_avx2.h"

#include <immintrin.h>

enum { MR = 6, NR = 16 };

/* The first mr rows of the tile, with A's rows si apart (see gemm_avx512.c); mr a constant
 * where it is inlined. */
static inline __attribute__((always_inline)) void tile_avx2(int mr, int kc, const float *A,
                                                            long sa, long si, const float *B,
                                                            long sb, float *C, int ldc,
                                                            float alpha, int add)
{
    __m256 c[MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++)
        c[i][0] = c[i][1] = _mm256_setzero_ps();
    for (int k = 0; k < kc; k++) {
        __m256 b0 = _mm256_loadu_ps(B), b1 = _mm256_loadu_ps(B + 8);
#pragma GCC unroll 6
        for (int i = 0; i < mr; i++) {
            __m256 a = _mm256_broadcast_ss(A + i * si);
            c[i][0] = _mm256_fmadd_ps(a, b0, c[i][0]);
            c[i][1] = _mm256_fmadd_ps(a, b1, c[i][1]);
        }
        A += sa;
        B += sb;
    }
    __m256 al = _mm256_set1_ps(alpha);
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) {
        float *row = C + (long)i * ldc;
        __m256 c0 = add ? _mm256_loadu_ps(row) : _mm256_setzero_ps();
        __m256 c1 = add ? _mm256_loadu_ps(row + 8) : _mm256_setzero_ps();
        _mm256_storeu_ps(row, _mm256_fmadd_ps(al, c[i][0], c0));
        _mm256_storeu_ps(row + 8, _mm256_fmadd_ps(al, c[i][1], c1));
    }
}

static void kernel_avx2(int kc, const float *A, int sa, int si, const float *B, int sb, float *C,
                        int ldc, float alpha, int add)
{
    if (si == 1)
        tile_avx2(MR, kc, A, sa, 1, B, sb, C, ldc, alpha, add);
    else
        tile_avx2(MR, kc, A, sa, si, B, sb, C, ldc, alpha, add);
}

/* gemm.h's rows kernel: a part tile of 1 to MR - 1 rows (packed: si = 1). */
static void rows_avx2(int rows, int kc, const float *A, int sa, int si, const float *B, int sb,
                      float *C, int ldc, float alpha, int add)
{
    switch (rows) {   /* constants, so that each gets its registers */
    case 1: tile_avx2(1, kc, A, sa, si, B, sb, C, ldc, alpha, add); break;
    case 2: tile_avx2(2, kc, A, sa, si, B, sb, C, ldc, alpha, add); break;
    case 3: tile_avx2(3, kc, A, sa, si, B, sb, C, ldc, alpha, add); break;
    case 4: tile_avx2(4, kc, A, sa, si, B, sb, C, ldc, alpha, add); break;
    default: tile_avx2(5, kc, A, sa, si, B, sb, C, ldc, alpha, add); break;
    }
}

/* An 8 x 8 block of src (rows i, columns k) into dst's rows k, columns i. */
static inline void transpose8(const float *src, size_t lds, float *dst, size_t ldd)
{
    __m256 r[8];
#pragma GCC unroll 8
    for (int a = 0; a < 8; a++)
        r[a] = _mm256_loadu_ps(src + a * lds);
    transpose8x8(r);
#pragma GCC unroll 8
    for (int a = 0; a < 8; a++)
        _mm256_storeu_ps(dst + a * ldd, r[a]);
}

/* gemm.h's transposing copy by 8 x 8 blocks; the edges (fewer than 8 rows or columns left) to
 * the portable one. */
void gemm_transpose_avx2(const float *src, int lds, int rows, int cols, float *dst, int ldd)
{
    int rows8 = rows / 8 * 8, cols8 = cols / 8 * 8;
    for (int i = 0; i < rows8; i += 8)
        for (int k = 0; k < cols8; k += 8)
            transpose8(src + (size_t)i * lds + k, (size_t)lds, dst + (size_t)k * ldd + i,
                       (size_t)ldd);
    if (cols8 < cols)
        gemm_transpose(src + cols8, lds, rows8, cols - cols8, dst + (size_t)cols8 * ldd, ldd);
    if (rows8 < rows)
        gemm_transpose(src + (size_t)rows8 * lds, lds, rows - rows8, cols, dst + rows8, ldd);
}

const gemm_arch gemm_arch_avx2 = {MR, NR, 96, 256, 2048, kernel_avx2, gemm_transpose_avx2,
                                  rows_avx2, NULL};
