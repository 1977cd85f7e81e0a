/* Winograd F(4x4, 3x3)'s transforms (winograd_tiling.h), at the points 0, +-1, +-2 and
 * infinity (Lavin and Gray's matrices): a 6x6 input window d and a 3x3 filter g give the 4x4
 * outputs A^T [(G g G^T) . (B^T d B)] A; 36 multiplies per 16 outputs instead of 144. Tile q of
 * a row reads input columns 4q .. 4q + 5. Each transform applies its matrix to rows, then to
 * columns, with the matrix written out as sums (BT6, AT6, A6, B6 below). */
#include "ops/winograd_tiling.h"

#include <string.h>

/* B^T x, x 6 values: the input transform along one direction. */
#define BT6(x, o)                                                                             \
    do {                                                                                      \
        (o)[0] = 4 * (x)[0] - 5 * (x)[2] + (x)[4];                                            \
        (o)[1] = (x)[3] + (x)[4] - 4 * ((x)[1] + (x)[2]);                                     \
        (o)[2] = 4 * ((x)[1] - (x)[2]) + (x)[4] - (x)[3];                                     \
        (o)[3] = 2 * ((x)[3] - (x)[1]) + (x)[4] - (x)[2];                                     \
        (o)[4] = 2 * ((x)[1] - (x)[3]) + (x)[4] - (x)[2];                                     \
        (o)[5] = 4 * (x)[1] - 5 * (x)[3] + (x)[5];                                            \
    } while (0)

/* A^T x, x 6 values, 4 out: the output transform along one direction. */
#define AT6(x, o)                                                                             \
    do {                                                                                      \
        float s12 = (x)[1] + (x)[2], d12 = (x)[1] - (x)[2];                                   \
        float s34 = (x)[3] + (x)[4], d34 = (x)[3] - (x)[4];                                   \
        (o)[0] = (x)[0] + s12 + s34;                                                          \
        (o)[1] = d12 + 2 * d34;                                                               \
        (o)[2] = s12 + 4 * s34;                                                               \
        (o)[3] = d12 + 8 * d34 + (x)[5];                                                      \
    } while (0)

/* A x, x 4 values, 6 out: the adjoint of AT6 (the output gradient's transform). */
#define A6(x, o)                                                                              \
    do {                                                                                      \
        float s02 = (x)[0] + (x)[2], s13 = (x)[1] + (x)[3];                                   \
        float t02 = (x)[0] + 4 * (x)[2], t13 = 2 * (x)[1] + 8 * (x)[3];                       \
        (o)[0] = (x)[0];                                                                      \
        (o)[1] = s02 + s13;                                                                   \
        (o)[2] = s02 - s13;                                                                   \
        (o)[3] = t02 + t13;                                                                   \
        (o)[4] = t02 - t13;                                                                   \
        (o)[5] = (x)[3];                                                                      \
    } while (0)

/* B x, x 6 values: the adjoint of BT6 (back from the transform domain to a window). */
#define B6(x, o)                                                                              \
    do {                                                                                      \
        (o)[0] = 4 * (x)[0];                                                                  \
        (o)[1] = 4 * ((x)[2] - (x)[1] + (x)[5]) + 2 * ((x)[4] - (x)[3]);                      \
        (o)[2] = -5 * (x)[0] - 4 * ((x)[1] + (x)[2]) - (x)[3] - (x)[4];                       \
        (o)[3] = (x)[1] - (x)[2] + 2 * ((x)[3] - (x)[4]) - 5 * (x)[5];                        \
        (o)[4] = (x)[0] + (x)[1] + (x)[2] + (x)[3] + (x)[4];                                  \
        (o)[5] = (x)[5];                                                                      \
    } while (0)

/* V[p][c][col] = (B^T d B)[p] for every channel and tile of the block: rows first, on whole
 * padded rows s read from the input where it is, then each tile's columns, from s split by
 * column modulo 4. rows: 15 * row_len floats. */
static void input_transform(const tiling *t, conv_input x, float *V, float *rows)
{
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)g->c * t->cols);   /* from one point to the next */
    winograd_rows b = winograd_rows_init(t, rows, 6);
    float *const *s = b.s;
    int lo = b.lo, hi = b.hi, half = t->tv + 1;   /* half: a row's columns 4q + k, each k < 4 */
    float *ph0 = rows + 13 * t->row_len, *ph1 = ph0 + half, *ph2 = ph1 + half, *ph3 = ph2 + half;
    for (int c = 0; c < g->c; c++)
        for (int r = t->r0; r < t->r1; r++) {
            int n = r / t->th, y0 = 4 * (r % t->th) - g->pad;
            const float *d[6];
            for (int i = 0; i < 6; i++)
                d[i] = winograd_input_row(t, x, n, c, y0 + i, b.zeros, b.tmp[i]);
            float *s0 = s[0] + lo, *s1 = s[1] + lo, *s2 = s[2] + lo, *s3 = s[3] + lo;
            float *s4 = s[4] + lo, *s5 = s[5] + lo;
#pragma omp simd
            for (int j = 0; j < hi - lo; j++) {
                float in[6] = {d[0][j], d[1][j], d[2][j], d[3][j], d[4][j], d[5][j]}, o[6];
                BT6(in, o);
                s0[j] = o[0], s1[j] = o[1], s2[j] = o[2], s3[j] = o[3], s4[j] = o[4], s5[j] = o[5];
            }
            float *v = V + (size_t)c * t->cols + (size_t)(r - t->r0) * t->tw;
            for (int i = 0; i < 6; i++) {
                float *v0 = v + 6 * i * plane;
                const float *si = s[i];
#pragma omp simd
                for (int q = 0; q < t->tv; q++) {   /* columns 4q + k, contiguous along q */
                    ph0[q] = si[4 * q], ph1[q] = si[4 * q + 1];
                    ph2[q] = si[4 * q + 2], ph3[q] = si[4 * q + 3];
                }
                ph0[t->tv] = si[4 * t->tv], ph1[t->tv] = si[4 * t->tv + 1];
#pragma omp simd
                for (int q = 0; q < t->tv; q++) {
                    float in[6] = {ph0[q], ph1[q], ph2[q], ph3[q], ph0[q + 1], ph1[q + 1]}, o[6];
                    BT6(in, o);
#pragma GCC unroll 6
                    for (int k = 0; k < 6; k++)
                        v0[k * plane + q] = o[k];
                }
            }
        }
}

/* A row of ow outputs from its 4 columns modulo 4, out[k][q] = column 4q + k: a tile's values
 * interleaved, as far as the output reaches. */
static void interleave_row(float *row, float *const out[4], int ow)
{
    int whole = ow / 4;
    const float *o0 = out[0], *o1 = out[1], *o2 = out[2], *o3 = out[3];
#pragma omp simd
    for (int q = 0; q < whole; q++)
        row[4 * q] = o0[q], row[4 * q + 1] = o1[q], row[4 * q + 2] = o2[q], row[4 * q + 3] = o3[q];
    for (int k = 0; k < ow - 4 * whole; k++)
        row[4 * whole + k] = out[k][whole];
}

/* The outputs A^T m A + bias for filters [f0, f1) from M[p][f - f0][col]: a tile's 4x4 outputs
 * go to out[a][k][q] (row a, column 4q + k, each tv long), then to four rows, then into o.
 * rows: 8 * row_len floats. */
static void output_transform(const tiling *t, const float *M, const float *bias,
                             const winograd_out *o, int f0, int f1, float *rows)
{
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)(f1 - f0) * t->cols);
    float *out[4][4], *line[4];
    for (int a = 0; a < 4; a++) {
        for (int k = 0; k < 4; k++)
            out[a][k] = rows + (size_t)(4 * a + k) * t->tv;
        line[a] = rows + (size_t)(4 + a) * t->row_len;
    }
    for (int f = f0; f < f1; f++)
        for (int r = t->r0; r < t->r1; r++) {
            int n = r / t->th, oy = 4 * (r % t->th);
            const float *m = M + (size_t)(f - f0) * t->cols + (size_t)(r - t->r0) * t->tw;
#pragma omp simd
            for (int q = 0; q < t->tv; q++) {
                float s[6][4];
#pragma GCC unroll 6
                for (int i = 0; i < 6; i++) {   /* m A: each row's columns */
                    float in[6];
#pragma GCC unroll 6
                    for (int k = 0; k < 6; k++)
                        in[k] = m[(6 * i + k) * plane + q];
                    AT6(in, s[i]);
                }
#pragma GCC unroll 4
                for (int k = 0; k < 4; k++) {   /* A^T (m A): the rows combined */
                    float in[6] = {s[0][k], s[1][k], s[2][k], s[3][k], s[4][k], s[5][k]}, o[4];
                    AT6(in, o);
                    out[0][k][q] = o[0], out[1][k][q] = o[1], out[2][k][q] = o[2];
                    out[3][k][q] = o[3];
                }
            }
            for (int a = 0; a < 4; a++)
                interleave_row(line[a], out[a], g->ow);
            winograd_store_rows(t, o, n, f, oy, line, 4, bias ? bias[f] : 0.0f);
        }
}

/* out[k][q] = row[4q + k] for q < tv, zero past the output's width: the inverse of
 * interleave_row, for a row of output gradients (NULL: past the last row, all zero). */
static void load_gradient_row(const float *row, int ow, int tv, float *const out[4])
{
    int whole = row ? ow / 4 : 0;
    float *o0 = out[0], *o1 = out[1], *o2 = out[2], *o3 = out[3];
#pragma omp simd
    for (int q = 0; q < whole; q++) {
        o0[q] = row[4 * q], o1[q] = row[4 * q + 1];
        o2[q] = row[4 * q + 2], o3[q] = row[4 * q + 3];
    }
    for (int q = whole; q < tv; q++)
        for (int k = 0; k < 4; k++)
            out[k][q] = row && 4 * q + k < ow ? row[4 * q + k] : 0.0f;
}

/* D[p][f - f0][col] = (A e A^T)[p], e the 4x4 block of output gradients of a tile (zero past
 * the output's edge), for filters [f0, f1); e[a][k][q] holds row a, column 4q + k. rows:
 * 16 * tv floats. */
static void gradient_transform(const tiling *t, const float *dy, int f0, int f1, float *D,
                               float *rows)
{
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)(f1 - f0) * t->cols);
    float *e[4][4];
    for (int a = 0; a < 4; a++)
        for (int k = 0; k < 4; k++)
            e[a][k] = rows + (size_t)(4 * a + k) * t->tv;
    for (int f = f0; f < f1; f++)
        for (int r = t->r0; r < t->r1; r++) {
            int n = r / t->th, oy = 4 * (r % t->th);
            const float *e0 = dy + (((size_t)n * g->f + f) * g->oh + oy) * g->ow;
            for (int a = 0; a < 4; a++)
                load_gradient_row(oy + a < g->oh ? e0 + (size_t)a * g->ow : NULL, g->ow, t->tv,
                                  e[a]);
            float *d = D + (size_t)(f - f0) * t->cols + (size_t)(r - t->r0) * t->tw;
#pragma omp simd
            for (int q = 0; q < t->tv; q++) {
                float a[6][4];
#pragma GCC unroll 4
                for (int k = 0; k < 4; k++) {   /* A e: rows */
                    float in[4] = {e[0][k][q], e[1][k][q], e[2][k][q], e[3][k][q]}, o[6];
                    A6(in, o);
#pragma GCC unroll 6
                    for (int i = 0; i < 6; i++)
                        a[i][k] = o[i];
                }
#pragma GCC unroll 6
                for (int i = 0; i < 6; i++) {   /* (A e) A^T: columns */
                    float o[6];
                    A6(a[i], o);
#pragma GCC unroll 6
                    for (int k = 0; k < 6; k++)
                        d[(6 * i + k) * plane + q] = o[k];
                }
            }
        }
}

/* dx += B z B^T of each tile of Z[p][c][col], added where the tile's 6x6 window lies in the
 * input. Windows overlap by 2 columns: a tile row's 6 rows are summed first (tile q gives
 * columns 4q .. 4q + 5), then added to dx. rows: 36 * (tv + 1) + row_len floats. */
static void input_adjoint_add(const tiling *t, const float *Z, float *dx, float *rows)
{
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)g->c * t->cols);
    int half = t->tv + 1;
    float *col[6][6], *line = rows + 36 * (size_t)half;   /* col[i][k][q]: row i, column 4q + k */
    for (int i = 0; i < 6; i++)
        for (int k = 0; k < 6; k++)
            col[i][k] = rows + (size_t)(i * 6 + k) * half;
    for (int c = 0; c < g->c; c++)
        for (int r = t->r0; r < t->r1; r++) {
            int n = r / t->th, y0 = 4 * (r % t->th) - g->pad;
            const float *z = Z + (size_t)c * t->cols + (size_t)(r - t->r0) * t->tw;
#pragma omp simd
            for (int q = 0; q < t->tv; q++) {
                float h[6][6];
#pragma GCC unroll 6
                for (int i = 0; i < 6; i++) {   /* z B^T: each row's columns */
                    float in[6];
#pragma GCC unroll 6
                    for (int k = 0; k < 6; k++)
                        in[k] = z[(6 * i + k) * plane + q];
                    B6(in, h[i]);
                }
#pragma GCC unroll 6
                for (int k = 0; k < 6; k++) {   /* B (z B^T): the rows combined */
                    float in[6] = {h[0][k], h[1][k], h[2][k], h[3][k], h[4][k], h[5][k]}, o[6];
                    B6(in, o);
#pragma GCC unroll 6
                    for (int i = 0; i < 6; i++)
                        col[i][k][q] = o[i];
                }
            }
            float *dxc = dx + ((size_t)n * g->c + c) * g->h * g->w;
#pragma GCC unroll 6
            for (int i = 0; i < 6; i++) {
                int y = y0 + i;
                if (y < 0 || y >= g->h)
                    continue;
                float *const *ci = col[i];
                line[0] = ci[0][0], line[1] = ci[1][0], line[2] = ci[2][0], line[3] = ci[3][0];
#pragma omp simd
                for (int q = 1; q < t->tw; q++) {   /* columns 4q, 4q + 1: tile q - 1's last two */
                    line[4 * q] = ci[0][q] + ci[4][q - 1];
                    line[4 * q + 1] = ci[1][q] + ci[5][q - 1];
                    line[4 * q + 2] = ci[2][q];
                    line[4 * q + 3] = ci[3][q];
                }
                line[4 * t->tw] = ci[4][t->tw - 1], line[4 * t->tw + 1] = ci[5][t->tw - 1];
                float *out = dxc + (size_t)y * g->w;
                const float *in = line + g->pad;
#pragma omp simd
                for (int xx = 0; xx < g->w; xx++)
                    out[xx] += in[xx];
            }
        }
}

const winograd_variant winograd_f4 = {
    .m = 4,
    .G = {{1 / 4.0f, 0, 0},
          {-1 / 6.0f, -1 / 6.0f, -1 / 6.0f},
          {-1 / 6.0f, 1 / 6.0f, -1 / 6.0f},
          {1 / 24.0f, 1 / 12.0f, 1 / 6.0f},
          {1 / 24.0f, -1 / 12.0f, 1 / 6.0f},
          {0, 0, 1}},
    .input = input_transform,
    .output = output_transform,
    .gradient = gradient_transform,
    .input_adjoint_add = input_adjoint_add,
};
