/* Winograd F(2x2, 3x3)'s transforms (winograd_tiling.h). With B, G and A the algorithm's
 * matrices, a 4x4 input window d and a 3x3 filter g give the 2x2 outputs
 * A^T [(G g G^T) . (B^T d B)] A, where "." multiplies point by point; the backward passes use
 * the adjoints of the same linear maps. Tile q of a row reads input columns 2q .. 2q + 3. */
#include "ops/winograd_tiling.h"

#include <string.h>

/* V[p][c][col] = (B^T d B)[p] for every channel and tile of the block: rows first (B^T d, on
 * whole padded rows s, read from the input where it is), then each tile's columns 2q .. 2q + 3
 * of s. rows: 9 * row_len floats. */
static void input_transform(const tiling *t, conv_input x, float *V, float *rows)
{
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)g->c * t->cols);   /* from one point to the next */
    winograd_rows b = winograd_rows_init(t, rows, 4);
    float *const *s = b.s;
    int lo = b.lo, hi = b.hi;
    for (int c = 0; c < g->c; c++)
        for (int r = t->r0; r < t->r1; r++) {
            int n = r / t->th, y0 = 2 * (r % t->th) - g->pad;
            const float *d[4];
            for (int i = 0; i < 4; i++)
                d[i] = winograd_input_row(t, x, n, c, y0 + i, b.zeros, b.tmp[i]);
            float *s0 = s[0] + lo, *s1 = s[1] + lo, *s2 = s[2] + lo, *s3 = s[3] + lo;
#pragma omp simd
            for (int j = 0; j < hi - lo; j++) {
                s0[j] = d[0][j] - d[2][j];
                s1[j] = d[1][j] + d[2][j];
                s2[j] = d[2][j] - d[1][j];
                s3[j] = d[1][j] - d[3][j];
            }
            float *v = V + (size_t)c * t->cols + (size_t)(r - t->r0) * t->tw;
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                float *v0 = v + 4 * i * plane, *v1 = v0 + plane, *v2 = v1 + plane, *v3 = v2 + plane;
                const float *si = s[i];
#pragma omp simd
                for (int q = 0; q < t->tv; q++) {
                    float e0 = si[2 * q], o0 = si[2 * q + 1], e1 = si[2 * q + 2], o1 = si[2 * q + 3];
                    v0[q] = e0 - e1;
                    v1[q] = o0 + e1;
                    v2[q] = e1 - o0;
                    v3[q] = o0 - o1;
                }
            }
        }
}

/* The outputs A^T m A + bias for filters [f0, f1) from M[p][f - f0][col]: a tile's 2x2
 * outputs go to two rows of 2 * tv values (rows), then into o. */
static void output_transform(const tiling *t, const float *M, const float *bias,
                             const winograd_out *o, int f0, int f1, float *rows)
{
    size_t plane = plane_of((size_t)(f1 - f0) * t->cols);
    float *out0 = rows, *out1 = rows + t->row_len, *const out[2] = {out0, out1};
    for (int f = f0; f < f1; f++)
        for (int r = t->r0; r < t->r1; r++) {
            int n = r / t->th, oy = 2 * (r % t->th);
            const float *m = M + (size_t)(f - f0) * t->cols + (size_t)(r - t->r0) * t->tw;
#pragma omp simd
            for (int q = 0; q < t->tv; q++) {
                float s[4][2];
#pragma GCC unroll 4
                for (int i = 0; i < 4; i++) {   /* m A: each row's columns */
                    float m0 = m[4 * i * plane + q], m1 = m[(4 * i + 1) * plane + q];
                    float m2 = m[(4 * i + 2) * plane + q], m3 = m[(4 * i + 3) * plane + q];
                    s[i][0] = m0 + m1 + m2;
                    s[i][1] = m1 - m2 - m3;
                }
#pragma GCC unroll 4
                for (int j = 0; j < 2; j++) {   /* A^T (m A): the rows combined */
                    out0[2 * q + j] = s[0][j] + s[1][j] + s[2][j];
                    out1[2 * q + j] = s[1][j] - s[2][j] - s[3][j];
                }
            }
            winograd_store_rows(t, o, n, f, oy, out, 2, bias ? bias[f] : 0.0f);
        }
}

/* D[p][f - f0][col] = (A e A^T)[p], e the 2x2 block of output gradients of a tile (zero past
 * the output's edge), for filters [f0, f1). rows: 2 * row_len floats. */
static void gradient_transform(const tiling *t, const float *dy, int f0, int f1, float *D,
                               float *rows)
{
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)(f1 - f0) * t->cols);
    float *r0 = rows, *r1 = rows + t->row_len;
    size_t pad = sizeof(float) * (size_t)(2 * t->tv - g->ow);   /* zeros past the end */
    for (int f = f0; f < f1; f++)
        for (int r = t->r0; r < t->r1; r++) {
            int n = r / t->th, oy = 2 * (r % t->th);
            const float *e0 = dy + (((size_t)n * g->f + f) * g->oh + oy) * g->ow;
            memcpy(r0, e0, sizeof(float) * (size_t)g->ow);
            memset(r0 + g->ow, 0, pad);
            if (oy + 1 < g->oh) {
                memcpy(r1, e0 + g->ow, sizeof(float) * (size_t)g->ow);
                memset(r1 + g->ow, 0, pad);
            } else {
                memset(r1, 0, sizeof(float) * 2 * (size_t)t->tv);
            }
            float *d = D + (size_t)(f - f0) * t->cols + (size_t)(r - t->r0) * t->tw;
#pragma omp simd
            for (int q = 0; q < t->tv; q++) {
                float a[4][2];
#pragma GCC unroll 4
                for (int j = 0; j < 2; j++) {   /* A e: rows */
                    float top = r0[2 * q + j], bottom = r1[2 * q + j];
                    a[0][j] = top;
                    a[1][j] = top + bottom;
                    a[2][j] = top - bottom;
                    a[3][j] = -bottom;
                }
#pragma GCC unroll 4
                for (int i = 0; i < 4; i++) {   /* (A e) A^T: columns */
                    d[4 * i * plane + q] = a[i][0];
                    d[(4 * i + 1) * plane + q] = a[i][0] + a[i][1];
                    d[(4 * i + 2) * plane + q] = a[i][0] - a[i][1];
                    d[(4 * i + 3) * plane + q] = -a[i][1];
                }
            }
        }
}

/* dx += B z B^T of each tile of Z[p][c][col], added where the tile's 4x4 window lies in the
 * input. Windows overlap by 2 columns: a tile row's 4 rows are summed in even and odd columns
 * first (tile q gives columns 2q..2q+3), then added to dx. rows: 16 * row_len floats. */
static void input_adjoint_add(const tiling *t, const float *Z, float *dx, float *rows)
{
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)g->c * t->cols);
    int half = t->tv + 1;
    float *col[4][4], *line = rows + 8 * t->row_len;   /* col[i][k][q]: row i, column 2q + k */
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++)
            col[i][k] = rows + (size_t)(i * 4 + k) * half;
    for (int c = 0; c < g->c; c++)
        for (int r = t->r0; r < t->r1; r++) {
            int n = r / t->th, y0 = 2 * (r % t->th) - g->pad;
            const float *z = Z + (size_t)c * t->cols + (size_t)(r - t->r0) * t->tw;
#pragma omp simd
            for (int q = 0; q < t->tv; q++) {
                float h[4][4];
#pragma GCC unroll 4
                for (int i = 0; i < 4; i++) {   /* z B^T: each row's columns */
                    float z0 = z[4 * i * plane + q], z1 = z[(4 * i + 1) * plane + q];
                    float z2 = z[(4 * i + 2) * plane + q], z3 = z[(4 * i + 3) * plane + q];
                    h[i][0] = z0;
                    h[i][1] = z1 - z2 + z3;
                    h[i][2] = z1 + z2 - z0;
                    h[i][3] = -z3;
                }
#pragma GCC unroll 4
                for (int k = 0; k < 4; k++) {   /* B (z B^T): the rows combined */
                    col[0][k][q] = h[0][k];
                    col[1][k][q] = h[1][k] - h[2][k] + h[3][k];
                    col[2][k][q] = h[1][k] + h[2][k] - h[0][k];
                    col[3][k][q] = -h[3][k];
                }
            }
            float *dxc = dx + ((size_t)n * g->c + c) * g->h * g->w;
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                int y = y0 + i;
                if (y < 0 || y >= g->h)
                    continue;
                const float *c0 = col[i][0], *c1 = col[i][1], *c2 = col[i][2], *c3 = col[i][3];
                line[0] = c0[0], line[1] = c1[0];
#pragma omp simd
                for (int q = 1; q < t->tw; q++) {   /* column 2q: tile q's first, q - 1's third */
                    line[2 * q] = c0[q] + c2[q - 1];
                    line[2 * q + 1] = c1[q] + c3[q - 1];
                }
                line[2 * t->tw] = c2[t->tw - 1], line[2 * t->tw + 1] = c3[t->tw - 1];
                float *out = dxc + (size_t)y * g->w;
                const float *in = line + g->pad;
#pragma omp simd
                for (int xx = 0; xx < g->w; xx++)
                    out[xx] += in[xx];
            }
        }
}

const winograd_variant winograd_f2 = {
    .m = 2,
    .G = {{1, 0, 0}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0, 0, 1}},
    .input = input_transform,
    .output = output_transform,
    .gradient = gradient_transform,
    .input_adjoint_add = input_adjoint_add,
};
