/* Winograd F(2x2, 3x3)'s transforms (winograd_tiling.h). With B, G and A the algorithm's
 * matrices, a 4x4 input window d and a 3x3 filter g give the 2x2 outputs
 * A^T [(G g G^T) . (B^T d B)] A, where "." multiplies point by point; the backward passes use
 * the adjoints of the same linear maps. Tile q of a row reads input columns 2q .. 2q + 3.
 *
 * Included by winograd_f2.c (baseline SSE) and winograd_f2_avx2.c with ISA set to the suffix of
 * the variant to define; like F(4x4)'s (winograd_f4_impl.h), the arithmetic runs over a block's
 * tiles at once (tile_array). */
#include "ops/winograd_tiling.h"

#include <string.h>

#define NAME2(a, b) a##_##b
#define NAME(a, b) NAME2(a, b)

/* V[p][c][col] = (B^T d B)[p] for every channel and tile of the block: rows first (B^T d, on
 * whole padded rows s, read from the input where it is); then each row of a tile row is split
 * into cols[i][k][col] (row i, column 2q + k of tile col), and the tiles' columns are
 * transformed all at once. rows: 9 row buffers, 16 tile arrays. */
static void input_transform(const tiling *t, conv_input x, float *V, float *rows)
{
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)g->c * t->cols);   /* from one point to the next */
    winograd_rows b = ops_winograd_rows_init(t, rows, 4);
    float *const *s = b.s;
    int lo = b.lo, hi = b.hi;
    float *cols[4][4];
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++)
            cols[i][k] = tile_array(t, rows, 4 * i + k);
    for (int c = 0; c < g->c; c++) {
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
            size_t at = (size_t)(r - t->r0) * t->tw;
            for (int i = 0; i < 4; i++) {
                const float *si = s[i];
                float *c0 = cols[i][0] + at, *c1 = cols[i][1] + at, *c2 = cols[i][2] + at;
                float *c3 = cols[i][3] + at;
#pragma omp simd
                for (int q = 0; q < t->tw; q++)
                    c0[q] = si[2 * q], c1[q] = si[2 * q + 1], c2[q] = si[2 * q + 2],
                    c3[q] = si[2 * q + 3];
            }
        }
        float *v = V + (size_t)c * t->cols;
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            float *v0 = v + 4 * i * plane, *v1 = v0 + plane, *v2 = v1 + plane, *v3 = v2 + plane;
            const float *e0 = cols[i][0], *o0 = cols[i][1], *e1 = cols[i][2], *o1 = cols[i][3];
#pragma omp simd
            for (int q = 0; q < t->tiles; q++) {
                v0[q] = e0[q] - e1[q];
                v1[q] = o0[q] + e1[q];
                v2[q] = e1[q] - o0[q];
                v3[q] = o0[q] - o1[q];
            }
        }
    }
}

/* Tile q's 2x2 outputs A^T m A into o[2][2], m its 16 points (plane apart) from m[q], for
 * winograd_output_impl.h. A macro, as F(4x4)'s is. */
#define TILE_OUTPUTS(m, plane, q, o)                                                          \
    do {                                                                                      \
        float s_[4][2];                                                                       \
        _Pragma("GCC unroll 4") for (int i_ = 0; i_ < 4; i_++) { /* m A: rows' columns */    \
            float m0_ = (m)[4 * i_ * (plane) + (q)], m1_ = (m)[(4 * i_ + 1) * (plane) + (q)];   \
            float m2_ = (m)[(4 * i_ + 2) * (plane) + (q)];                                    \
            float m3_ = (m)[(4 * i_ + 3) * (plane) + (q)];                                    \
            s_[i_][0] = m0_ + m1_ + m2_;                                                      \
            s_[i_][1] = m1_ - m2_ - m3_;                                                      \
        }                                                                                     \
        _Pragma("GCC unroll 2") for (int k_ = 0; k_ < 2; k_++) { /* A^T (m A): rows */       \
            (o)[0][k_] = s_[0][k_] + s_[1][k_] + s_[2][k_];                                   \
            (o)[1][k_] = s_[1][k_] - s_[2][k_] - s_[3][k_];                                   \
        }                                                                                     \
    } while (0)

#define TILE_M 2
#include "ops/winograd_output_impl.h"

/* Output row oy of filter f of sample n as its tiles' columns (through its relu, if any):
 * ev[q], od[q] = columns 2q and 2q + 1, zero past the output's edge. Pooled, a tile's 2x2
 * outputs are one window: its gradient goes where its argmax is. */
static void load_gradient_row(const tiling *t, const winograd_grad *dy, int n, int f, int oy,
                              float *ev, float *od)
{
    gradient_row r = winograd_gradient_row(t, dy, n, f, oy);
    int whole = !r.dy ? 0 : r.argmax ? dy->pool->ow : t->g->ow / 2;
    if (r.argmax) {
        const int32_t *a = r.argmax;
#pragma omp simd
        for (int q = 0; q < whole; q++) {
            float v = winograd_through_relu(&r, q);
            ev[q] = a[q] == r.first + 2 * q ? v : 0.0f;
            od[q] = a[q] == r.first + 2 * q + 1 ? v : 0.0f;
        }
    } else if (r.dy) {
#pragma omp simd
        for (int q = 0; q < whole; q++)
            ev[q] = winograd_through_relu(&r, 2 * q), od[q] = winograd_through_relu(&r, 2 * q + 1);
    }
    for (int q = whole; q < t->tw; q++) {   /* past the edge */
        ev[q] = r.dy && !r.argmax && 2 * q < t->g->ow ? winograd_through_relu(&r, 2 * q) : 0.0f;
        od[q] = 0.0f;
    }
}

/* D[p][f - f0][col] = (A e A^T)[p], e the 2x2 block of output gradients of a tile (zero past
 * the output's edge), for filters [f0, f1): a filter's tiles are gathered into e[a][k][col]
 * (row a, column 2q + k of tile col), then transformed all at once (and summed, for dbias). */
static void gradient_transform(const tiling *t, const winograd_grad *dy, int f0, int f1,
                               float *D, float *dbias, float *rows)
{
    size_t plane = plane_of((size_t)(f1 - f0) * t->cols);
    float *e[2][2];
    for (int a = 0; a < 2; a++)
        for (int k = 0; k < 2; k++)
            e[a][k] = tile_array(t, rows, 2 * a + k);
    for (int f = f0; f < f1; f++) {
        for (int r = t->r0; r < t->r1; r++) {
            size_t at = (size_t)(r - t->r0) * t->tw;
            for (int a = 0; a < 2; a++)
                load_gradient_row(t, dy, r / t->th, f, 2 * (r % t->th) + a, e[a][0] + at,
                                  e[a][1] + at);
        }
        float *d = D + (size_t)(f - f0) * t->cols, sum = 0.0f;
        const float *t0 = e[0][0], *t1 = e[0][1], *b0 = e[1][0], *b1 = e[1][1];
#pragma omp simd reduction(+ : sum)
        for (int q = 0; q < t->tiles; q++) {
            float a[4][2] = {{t0[q], t1[q]},
                             {t0[q] + b0[q], t1[q] + b1[q]},
                             {t0[q] - b0[q], t1[q] - b1[q]},
                             {-b0[q], -b1[q]}};   /* A e: rows */
            sum += a[1][0] + a[1][1];   /* the tile's sum: A's row 1 adds its rows */
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {   /* (A e) A^T: columns */
                d[4 * i * plane + q] = a[i][0];
                d[(4 * i + 1) * plane + q] = a[i][0] + a[i][1];
                d[(4 * i + 2) * plane + q] = a[i][0] - a[i][1];
                d[(4 * i + 3) * plane + q] = -a[i][1];
            }
        }
        if (dbias)
            dbias[f - f0] += sum;
    }
}

/* dx = the sum of B z B^T of each tile of Z[p][c][col] over the tiles whose 4x4 windows hold
 * it: a channel's tiles are transformed all at once into win[i][k][col] (row i, column 2q + k
 * of tile col's window), then each tile row's windows are summed row by row (neighbours overlap
 * by 2 columns) into dx (winograd_store_input_row). rows: a row buffer, 16 tile arrays. */
static void input_adjoint(const tiling *t, const float *Z, float *dx, float *rows)
{
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)g->c * t->cols);
    float *win[4][4], *line = rows;
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++)
            win[i][k] = tile_array(t, rows, i * 4 + k);
    for (int c = 0; c < g->c; c++) {
        const float *z = Z + (size_t)c * t->cols;
#pragma omp simd
        for (int q = 0; q < t->tiles; q++) {
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
                win[0][k][q] = h[0][k];
                win[1][k][q] = h[1][k] - h[2][k] + h[3][k];
                win[2][k][q] = h[1][k] + h[2][k] - h[0][k];
                win[3][k][q] = -h[3][k];
            }
        }
        for (int r = t->r0; r < t->r1; r++) {
            int tw = t->tw;
            size_t at = (size_t)(r - t->r0) * tw;
            for (int i = 0, y; i < 4; i++) {
                if (!winograd_window_row(t, r, i, &y))
                    continue;
                const float *c0 = win[i][0] + at, *c1 = win[i][1] + at;
                const float *c2 = win[i][2] + at, *c3 = win[i][3] + at;
                line[0] = c0[0], line[1] = c1[0];
#pragma omp simd
                for (int q = 1; q < tw; q++) {   /* column 2q: tile q's first, q - 1's third */
                    line[2 * q] = c0[q] + c2[q - 1];
                    line[2 * q + 1] = c1[q] + c3[q - 1];
                }
                line[2 * tw] = c2[tw - 1], line[2 * tw + 1] = c3[tw - 1];
                winograd_store_input_row(t, dx, c, r, i, y, line);
            }
        }
    }
}

const winograd_variant NAME(winograd_f2, ISA) = {
    .m = 2,
    .G = {{1, 0, 0}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0, 0, 1}},
    .input = input_transform,
    .output = output_transform,
    .gradient = gradient_transform,
    .input_adjoint = input_adjoint,
};
