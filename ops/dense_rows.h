/* The few-sample and few-output paths of the dense layers (ops/dense.c), built once per SIMD
 * width and chosen at run time like the convolutions: dot products of blocks of samples and
 * weight rows, axpys over a row, and the weight gradient of a few rows summed over a chunk's
 * samples. Each sums in its own fixed order: results are reproducible on one
 * kernel path, and differ from another's in the last bits only. */
#ifndef FRUGAL_OPS_DENSE_ROWS_H
#define FRUGAL_OPS_DENSE_ROWS_H

#include <stddef.h>

/* y[s ldy + r] += x_s . w_r for the samples s < ns (x_s = x + s ldx) and the rows r < out (w_r
 * = w + r ldw), over n inputs: each sum in one order whatever the samples and rows around it (a
 * vector of partial sums over the whole vectors, added up, then the n % VL tail), so that a
 * sample's outputs are the same bits in any chunk. */
void dense_rows_forward_avx2(const float *x, size_t ldx, int ns, const float *w, size_t ldw,
                             int out, int n, float *y, int ldy);
void dense_rows_forward_avx512(const float *x, size_t ldx, int ns, const float *w, size_t ldw,
                               int out, int n, float *y, int ldy);
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
