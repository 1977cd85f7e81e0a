/* The few-sample and few-output paths of the dense layers (ops/dense.c), built once per SIMD
 * width and chosen at run time like the convolutions: dot products of one or two samples
 * against 4 weight rows at once, axpys over a row, and the weight gradient of a few rows summed
 * over a chunk's samples. Each sums in its own fixed order: results are reproducible on one
 * kernel path, and differ from another's in the last bits only. */
#ifndef FRUGAL_OPS_DENSE_ROWS_H
#define FRUGAL_OPS_DENSE_ROWS_H

#include <stddef.h>

/* acc[r] += x . w_r for the rows w_0..w_3 (row stride ldw), over n inputs. */
void dense_rows_dot4_avx2(const float *x, const float *w, size_t ldw, int n, float *acc);
void dense_rows_dot4_avx512(const float *x, const float *w, size_t ldw, int n, float *acc);
/* The same for two samples at once (x, and x + ldx into acc2) and the rows w_0..w_rows-1
 * (rows <= 4), AVX-512 only: the same bits as dot4 (or dot) on each. */
void dense_rows_dot4x2_avx512(const float *x, size_t ldx, const float *w, size_t ldw, int rows,
                              int n, float *acc, float *acc2);
/* a . b over n. */
float dense_rows_dot_avx2(const float *a, const float *b, int n);
float dense_rows_dot_avx512(const float *a, const float *b, int n);
/* dw_r = (add ? dw_r : 0) + sum over samples s < ns of dy[s * ldy + r] * (x + s * ldx), for
 * the rows r < rows <= 8 of dw (row stride ldw) and n inputs. */
void dense_rows_outer_avx2(const float *x, size_t ldx, const float *dy, int ldy, int ns,
                           float *dw, size_t ldw, int rows, int n, int add);
void dense_rows_outer_avx512(const float *x, size_t ldx, const float *dy, int ldy, int ns,
                             float *dw, size_t ldw, int rows, int n, int add);
/* y += alpha x over n. */
void dense_rows_axpy_avx2(float alpha, const float *x, float *y, int n);
void dense_rows_axpy_avx512(float alpha, const float *x, float *y, int n);

#endif
