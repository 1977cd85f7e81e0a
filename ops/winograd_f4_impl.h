/* Winograd F(4x4, 3x3)'s transforms (winograd_tiling.h), at the points 0, +-1, +-2 and
 * infinity (Lavin and Gray's matrices): a 6x6 input window d and a 3x3 filter g give the 4x4
 * outputs A^T [(G g G^T) . (B^T d B)] A; 36 multiplies per 16 outputs instead of 144. Tile q of
 * a row reads input columns 4q .. 4q + 5. Each transform applies its matrix to rows, then to
 * columns, with the matrix written out as sums (BT6, AT6, A6, B6 below).
 *
 * Included by winograd_f4.c (baseline SSE) and winograd_f4_avx2.c with ISA set to the suffix of
 * the variant to define. The transforms' arithmetic runs over a block's tiles (tile_array), so
 * wider vectors pay: AVX2 made training 8-15% faster than SSE; AVX-512 was slower than AVX2
 * (./build.sh bench ops, bench train), and AVX-512 machines use the AVX2 variant. */
#include "ops/winograd_tiling.h"

#include <string.h>

#define NAME2(a, b) a##_##b
#define NAME(a, b) NAME2(a, b)

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
 * padded rows s read from the input where it is; then each row of a tile row is split by
 * column into cols[i][k][col] (row i, column 4q + k of tile col), and the tiles' columns are
 * transformed all at once. rows: 13 row buffers, 36 tile arrays. */
static void input_transform(const tiling *t, conv_input x, float *V, float *rows)
{
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)g->c * t->cols);   /* from one point to the next */
    winograd_rows b = winograd_rows_init(t, rows, 6);
    float *const *s = b.s;
    int lo = b.lo, hi = b.hi;
    float *cols[6][6];
    for (int i = 0; i < 6; i++)
        for (int k = 0; k < 6; k++)
            cols[i][k] = tile_array(t, rows, 6 * i + k);
    for (int c = 0; c < g->c; c++) {
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
            size_t at = (size_t)(r - t->r0) * t->tw;
            for (int i = 0; i < 6; i++) {
                const float *si = s[i];
                float *c0 = cols[i][0] + at, *c1 = cols[i][1] + at, *c2 = cols[i][2] + at;
                float *c3 = cols[i][3] + at, *c4 = cols[i][4] + at, *c5 = cols[i][5] + at;
#pragma omp simd
                for (int q = 0; q < t->tw; q++) {
                    c0[q] = si[4 * q], c1[q] = si[4 * q + 1], c2[q] = si[4 * q + 2];
                    c3[q] = si[4 * q + 3], c4[q] = si[4 * q + 4], c5[q] = si[4 * q + 5];
                }
            }
        }
        float *v = V + (size_t)c * t->cols;
        for (int i = 0; i < 6; i++) {
            float *v0 = v + 6 * i * plane;
            float *const *ci = cols[i];
#pragma omp simd
            for (int q = 0; q < t->tiles; q++) {
                float in[6] = {ci[0][q], ci[1][q], ci[2][q], ci[3][q], ci[4][q], ci[5][q]}, o[6];
                BT6(in, o);
#pragma GCC unroll 6
                for (int k = 0; k < 6; k++)
                    v0[k * plane + q] = o[k];
            }
        }
    }
}

/* Tile q's 4x4 outputs A^T m A into o[4][4], m its 36 points (plane apart) from m[q], for
 * winograd_output_impl.h. A macro: as a function, inlined or not, the loops around it did not
 * vectorise. */
#define TILE_OUTPUTS(m, plane, q, o)                                                          \
    do {                                                                                      \
        float s_[6][4];                                                                       \
        _Pragma("GCC unroll 6") for (int i_ = 0; i_ < 6; i_++) { /* m A: rows' columns */    \
            float in_[6];                                                                     \
            _Pragma("GCC unroll 6") for (int k_ = 0; k_ < 6; k_++)                            \
                in_[k_] = (m)[(6 * i_ + k_) * (plane) + (q)];                                 \
            AT6(in_, s_[i_]);                                                                 \
        }                                                                                     \
        _Pragma("GCC unroll 4") for (int k_ = 0; k_ < 4; k_++) { /* A^T (m A): rows */       \
            float in_[6] = {s_[0][k_], s_[1][k_], s_[2][k_], s_[3][k_], s_[4][k_], s_[5][k_]}; \
            float c_[4];                                                                      \
            AT6(in_, c_);                                                                     \
            _Pragma("GCC unroll 4") for (int a_ = 0; a_ < 4; a_++)(o)[a_][k_] = c_[a_];       \
        }                                                                                     \
    } while (0)

#define TILE_M 4
#include "ops/winograd_output_impl.h"

/* out[k][q] = row[4q + k] for q < tw, zero past the output's width: a row of output gradients
 * split by column modulo 4 (NULL: past the last row, all zero). */
static void load_gradient_row(const float *row, int ow, int tw, float *const out[4])
{
    int whole = row ? ow / 4 : 0;
    float *o0 = out[0], *o1 = out[1], *o2 = out[2], *o3 = out[3];
#pragma omp simd
    for (int q = 0; q < whole; q++) {
        o0[q] = row[4 * q], o1[q] = row[4 * q + 1];
        o2[q] = row[4 * q + 2], o3[q] = row[4 * q + 3];
    }
    for (int q = whole; q < tw; q++)
        for (int k = 0; k < 4; k++)
            out[k][q] = row && 4 * q + k < ow ? row[4 * q + k] : 0.0f;
}

/* D[p][f - f0][col] = (A e A^T)[p], e the 4x4 block of output gradients of a tile (zero past
 * the output's edge), for filters [f0, f1): a filter's tiles are gathered into e[a][k][col]
 * (row a, column 4q + k of tile col), then transformed all at once. */
static void gradient_transform(const tiling *t, const float *dy, int f0, int f1, float *D,
                               float *rows)
{
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)(f1 - f0) * t->cols);
    float *e[4][4];
    for (int a = 0; a < 4; a++)
        for (int k = 0; k < 4; k++)
            e[a][k] = tile_array(t, rows, 4 * a + k);
    for (int f = f0; f < f1; f++) {
        for (int r = t->r0; r < t->r1; r++) {
            int oy = 4 * (r % t->th);
            const float *e0 = dy + (((size_t)(r / t->th) * g->f + f) * g->oh + oy) * g->ow;
            size_t at = (size_t)(r - t->r0) * t->tw;
            for (int a = 0; a < 4; a++) {
                float *const tile_row[4] = {e[a][0] + at, e[a][1] + at, e[a][2] + at,
                                            e[a][3] + at};
                load_gradient_row(oy + a < g->oh ? e0 + (size_t)a * g->ow : NULL, g->ow, t->tw,
                                  tile_row);
            }
        }
        float *d = D + (size_t)(f - f0) * t->cols;
#pragma omp simd
        for (int q = 0; q < t->tiles; q++) {
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
 * input: a channel's tiles are transformed all at once into win[i][k][col] (row i, column
 * 4q + k of tile col's window), then each tile row's windows are summed row by row
 * (neighbours overlap by 2 columns) and added to dx. rows: a row buffer, 36 tile arrays. */
static void input_adjoint_add(const tiling *t, const float *Z, float *dx, float *rows)
{
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)g->c * t->cols);
    float *win[6][6], *line = rows;
    for (int i = 0; i < 6; i++)
        for (int k = 0; k < 6; k++)
            win[i][k] = tile_array(t, rows, i * 6 + k);
    for (int c = 0; c < g->c; c++) {
        const float *z = Z + (size_t)c * t->cols;
#pragma omp simd
        for (int q = 0; q < t->tiles; q++) {
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
                    win[i][k][q] = o[i];
            }
        }
        for (int r = t->r0; r < t->r1; r++) {
            int n = r / t->th, y0 = 4 * (r % t->th) - g->pad, tw = t->tw;
            size_t at = (size_t)(r - t->r0) * tw;
            float *dxc = dx + ((size_t)n * g->c + c) * g->h * g->w;
            for (int i = 0; i < 6; i++) {
                int y = y0 + i;
                if (y < 0 || y >= g->h)
                    continue;
                const float *w0 = win[i][0] + at, *w1 = win[i][1] + at, *w2 = win[i][2] + at;
                const float *w3 = win[i][3] + at, *w4 = win[i][4] + at, *w5 = win[i][5] + at;
                line[0] = w0[0], line[1] = w1[0], line[2] = w2[0], line[3] = w3[0];
#pragma omp simd
                for (int q = 1; q < tw; q++) {   /* columns 4q, 4q + 1: tile q - 1's last two */
                    line[4 * q] = w0[q] + w4[q - 1];
                    line[4 * q + 1] = w1[q] + w5[q - 1];
                    line[4 * q + 2] = w2[q];
                    line[4 * q + 3] = w3[q];
                }
                line[4 * tw] = w4[tw - 1], line[4 * tw + 1] = w5[tw - 1];
                float *out = dxc + (size_t)y * g->w;
                const float *in = line + g->pad;
#pragma omp simd
                for (int xx = 0; xx < g->w; xx++)
                    out[xx] += in[xx];
            }
        }
    }
}

const winograd_variant NAME(winograd_f4, ISA) = {
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
