/* Winograd F(2x2, 3x3): see conv_winograd.h. With B, G and A the algorithm's matrices, a 4x4
 * input window d and a 3x3 filter g give the 2x2 outputs A^T [(G g G^T) . (B^T d B)] A, where
 * "." multiplies point by point. Summed over channels, each of the 16 points is a GEMM:
 * (filters x channels) times (channels x tiles). The backward passes are the adjoints of the
 * same linear maps. Tiles are taken in blocks of whole tile rows, so that a block's
 * transformed data stays in cache between the transforms and the GEMMs. */
#include "ops/conv_winograd.h"

#include "ops/gemm.h"
#include "ops/scratch.h"

#include <string.h>

enum { POINTS = 16 };       /* the 4x4 transform domain */
#define BLOCK_TILES 128     /* tiles per block, the GEMMs' columns (./build.sh bench ops) */
#define ROW_BUFFERS 16      /* the transforms' row buffers, row_len floats each */

/* A geometry's tiles: th x tw per sample, taken in blocks of tile rows [r0, r1), where tile
 * row r is row r % th of sample r / th. A block's transformed data has a row of cols values
 * per point and channel (or filter): its tiles, then zeros up to a whole number of GEMM
 * register tiles, so that no product goes through the GEMM's slow edge path. */
typedef struct tiling {
    const conv_geom *g;
    int th, tw, tv;         /* tv: tw rounded up to whole vectors (ROW_VECTOR) */
    int row_len;            /* the padded input a tile row reads, 2 * tv + 2 */
    int r0, r1;             /* the current block; r1 < 0 before the first */
    int tiles, cols;        /* its tiles, (r1 - r0) * tw; cols: tiles rounded up */
} tiling;

#define COL_ALIGN 32        /* a multiple of every GEMM's NR (ops/gemm*.c) */

/* The 16 points' matrices lie one after another, elems values each, then SKEW more: were they
 * a multiple of 4 KB apart, a transform's 16 streams would share one set of cache lines. */
#define SKEW 16
static size_t plane_of(size_t elems) { return elems + SKEW; }

int conv_winograd_fits(const conv_geom *g)
{
    return g->kh == 3 && g->kw == 3 && g->stride == 1;
}

static int round_up(int n, int to) { return (n + to - 1) / to * to; }

/* The transforms' loops along a tile row run over whole SSE vectors (tv tiles), which is
 * faster than a scalar tail on rows of 7 or 14 tiles. Past tw they write values no one reads:
 * in a block's matrices, over the next tile row's start (written after, rows go in order) or
 * into the padding columns and SKEW (zeroed or unused); elsewhere into row buffers sized for
 * tv. */
#define ROW_VECTOR 4

static tiling tiling_of(const conv_geom *g)
{
    int th = (g->oh + 1) / 2, tw = (g->ow + 1) / 2, tv = round_up(tw, ROW_VECTOR);
    return (tiling){g, th, tw, tv, 2 * tv + 2, 0, -1, 0, 0};
}

static int rows_per_block(const tiling *t)
{
    return BLOCK_TILES / t->tw > 0 ? BLOCK_TILES / t->tw : 1;
}

/* Moves t to the block after the current one, within samples [n0, n1); 0 past the end. */
static int next_block(tiling *t, int n0, int n1)
{
    t->r0 = t->r1 < 0 ? n0 * t->th : t->r1;
    t->r1 = t->r0 + rows_per_block(t) < n1 * t->th ? t->r0 + rows_per_block(t) : n1 * t->th;
    t->tiles = (t->r1 - t->r0) * t->tw;
    t->cols = round_up(t->tiles, COL_ALIGN);
    return t->r0 < t->r1;
}

/* The largest cols of any block: what the scratch buffers hold per row. */
static size_t block_cols(const tiling *t)
{
    return (size_t)round_up(rows_per_block(t) * t->tw, COL_ALIGN);
}

/* Zeroes the padding columns of a block's 16 matrices of n rows. */
static void zero_padding(const tiling *t, float *X, int n)
{
    size_t plane = plane_of((size_t)n * t->cols);
    size_t pad = sizeof(float) * (size_t)(t->cols - t->tiles);
    for (int p = 0; p < POINTS; p++)
        for (int i = 0; i < n; i++)
            memset(X + p * plane + (size_t)i * t->cols + t->tiles, 0, pad);
}

/* Row y of channel c of sample n, w floats: in place for a float input, converted into tmp for
 * bytes, zeros outside the input. */
static const float *input_row(const tiling *t, conv_input x, int n, int c, int y,
                              const float *zeros, float *tmp)
{
    const conv_geom *g = t->g;
    if (y < 0 || y >= g->h)
        return zeros;
    size_t at = (size_t)n * g->c * g->h * g->w + ((size_t)c * g->h + y) * g->w;
    if (x.f)
        return x.f + at;
    const uint8_t *b = x.b[n] + (at - (size_t)n * g->c * g->h * g->w);
    for (int j = 0; j < g->w; j++)
        tmp[j] = (float)b[j] * x.scale;
    return tmp;
}

/* V[p][c][col] = (B^T d B)[p] for every channel and tile of the block: rows first (B^T d, on
 * whole padded rows s, read from the input where it is), then each tile's columns 2q .. 2q + 3
 * of s. rows: 9 * row_len floats. */
static void input_transform(const tiling *t, conv_input x, float *V, float *rows)
{
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)g->c * t->cols);   /* from one point to the next */
    int len = t->row_len, lo = g->pad, hi = g->pad + g->w < len ? g->pad + g->w : len;
    float *s[4], *tmp[4], *zeros = rows + 8 * len;
    for (int i = 0; i < 4; i++) {
        s[i] = rows + i * len, tmp[i] = rows + (4 + i) * len;
        memset(s[i], 0, sizeof(float) * (size_t)lo);   /* the padding columns */
        memset(s[i] + hi, 0, sizeof(float) * (size_t)(len - hi));
    }
    memset(zeros, 0, sizeof(float) * (size_t)len);
    for (int c = 0; c < g->c; c++)
        for (int r = t->r0; r < t->r1; r++) {
            int n = r / t->th, y0 = 2 * (r % t->th) - g->pad;
            const float *d[4];
            for (int i = 0; i < 4; i++)
                d[i] = input_row(t, x, n, c, y0 + i, zeros, tmp[i]);
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

/* T = G (x) G: point p = 4i + j of G g G^T is the sum over taps 3a + b of
 * G[i][a] G[j][b] g[a][b]. Its entries are products of 0, 1/2 and 1: exact in float. */
static void kernel_transform(float T[POINTS][9])
{
    static const float G[4][3] = {{1, 0, 0}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0, 0, 1}};
    for (int p = 0; p < POINTS; p++)
        for (int t = 0; t < 9; t++)
            T[p][t] = G[p / 4][t / 3] * G[p % 4][t % 3];
}

/* U[p][f - f0][c] = (G g G^T)[p] for filters [f0, f1): one GEMM of (G (x) G) and the filters'
 * 9 taps, each filter's channels one after another as U wants them. */
static int weight_transform(const conv_geom *g, const float *wt, int f0, int f1, float *U)
{
    int pairs = (f1 - f0) * g->c;
    float T[POINTS][9];
    kernel_transform(T);
    return ops_sgemm(0, 1, POINTS, pairs, 9, 1.0f, &T[0][0], 9,
                     wt + (size_t)f0 * g->c * 9, 9, 0.0f, U, (int)plane_of((size_t)pairs));
}

/* Copies n values to out, adding b to each. */
static void add_bias_copy(float *out, const float *in, int n, float b)
{
#pragma omp simd
    for (int i = 0; i < n; i++)
        out[i] = in[i] + b;
}

/* y = A^T m A + bias for filters [f0, f1) from M[p][f - f0][col]: a tile's 2x2 outputs go to
 * two rows of 2 * tw values (rows), then as far as the output reaches into y. */
static void output_transform(const tiling *t, const float *M, const float *bias, float *y, int f0,
                             int f1, float *rows)
{
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)(f1 - f0) * t->cols);
    float *out0 = rows, *out1 = rows + t->row_len;
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
            float b = bias ? bias[f] : 0.0f;
            float *y0 = y + (((size_t)n * g->f + f) * g->oh + oy) * g->ow;
            add_bias_copy(y0, out0, g->ow, b);
            if (oy + 1 < g->oh)
                add_bias_copy(y0 + g->ow, out1, g->ow, b);
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

/* dwt (filters [f0, f1) only) = G^T u G of dU[p][f - f0][c], the adjoint of
 * weight_transform: one GEMM; written, or added when accumulate. */
static int filter_adjoint(const conv_geom *g, const float *dU, int f0, int f1, float *dwt,
                          int accumulate)
{
    int pairs = (f1 - f0) * g->c;
    float T[POINTS][9];
    kernel_transform(T);
    return ops_sgemm(1, 0, pairs, 9, POINTS, 1.0f, dU, (int)plane_of((size_t)pairs), &T[0][0], 9,
                     accumulate ? 1.0f : 0.0f, dwt, 9);
}

/* The 16 products C[p] = op(A[p]) op(B[p]) (+ C[p] when add), each of A, B, C a stack of
 * 16 row-major matrices. */
static int products(int trans_a, int trans_b, int m, int n, int k, const float *A, const float *B,
                    float *C, int add)
{
    int lda = trans_a ? m : k, ldb = trans_b ? k : n;
    for (int p = 0; p < POINTS; p++)
        if (ops_sgemm(trans_a, trans_b, m, n, k, 1.0f, A + p * plane_of((size_t)m * k), lda,
                      B + p * plane_of((size_t)k * n), ldb, add ? 1.0f : 0.0f,
                      C + p * plane_of((size_t)m * n), n))
            return -1;
    return 0;
}

/* One call's scratch: a block's 16 matrices of channel rows (V or Z) and of filter rows (M or
 * D), cols values each; the 16 weight matrices, filters x channels (U or dU); the transforms'
 * row buffers. */
typedef struct buffers {
    float *channels, *filters, *weights, *rows;
} buffers;

static int buffers_get(const tiling *t, int nf, buffers *b)
{
    size_t cols = block_cols(t), nc = (size_t)t->g->c;
    size_t weights = POINTS * plane_of((size_t)nf * nc);
    b->channels = ops_scratch(SCRATCH_COLUMNS, POINTS * plane_of(nc * cols));
    b->filters = ops_scratch(SCRATCH_PARTIALS, POINTS * plane_of((size_t)nf * cols));
    b->weights = ops_scratch(SCRATCH_INPUT, weights + ROW_BUFFERS * (size_t)t->row_len);
    b->rows = b->weights ? b->weights + weights : NULL;
    return b->channels && b->filters && b->weights ? 0 : -1;
}

int conv_winograd_forward(const conv_geom *g, conv_input x, const float *wt, const float *bias,
                          float *y, int n0, int n1, int f0, int f1)
{
    tiling t = tiling_of(g);
    int nf = f1 - f0;
    buffers b;
    if (buffers_get(&t, nf, &b) || weight_transform(g, wt, f0, f1, b.weights))
        return -1;
    while (next_block(&t, n0, n1)) {
        input_transform(&t, x, b.channels, b.rows);
        zero_padding(&t, b.channels, g->c);
        if (products(0, 0, nf, t.cols, g->c, b.weights, b.channels, b.filters, 0))
            return -1;
        output_transform(&t, b.filters, bias, y, f0, f1, b.rows);
    }
    return 0;
}

int conv_winograd_backward_input(const conv_geom *g, const float *dy, const float *wt, float *dx,
                                 int n0, int n1)
{
    tiling t = tiling_of(g);
    buffers b;
    if (buffers_get(&t, g->f, &b) || weight_transform(g, wt, 0, g->f, b.weights))
        return -1;
    size_t chw = (size_t)g->c * g->h * g->w;
    memset(dx + (size_t)n0 * chw, 0, sizeof(float) * (size_t)(n1 - n0) * chw);
    while (next_block(&t, n0, n1)) {
        gradient_transform(&t, dy, 0, g->f, b.filters, b.rows);
        zero_padding(&t, b.filters, g->f);
        if (products(1, 0, g->c, t.cols, g->f, b.weights, b.filters, b.channels, 0))
            return -1;
        input_adjoint_add(&t, b.channels, dx, b.rows);
    }
    return 0;
}

int conv_winograd_backward_filter(const conv_geom *g, conv_input x, const float *dy, float *dwt,
                                  float *dbias, int n0, int n1, int f0, int f1, int accumulate)
{
    tiling t = tiling_of(g);
    int nf = f1 - f0;
    buffers b;
    if (buffers_get(&t, nf, &b))
        return -1;
    memset(b.weights, 0, sizeof(float) * POINTS * plane_of((size_t)nf * g->c));
    while (next_block(&t, n0, n1)) {   /* dU, summed over the blocks in order */
        input_transform(&t, x, b.channels, b.rows);
        gradient_transform(&t, dy, f0, f1, b.filters, b.rows);
        zero_padding(&t, b.channels, g->c);
        zero_padding(&t, b.filters, nf);
        if (products(0, 1, nf, g->c, t.cols, b.filters, b.channels, b.weights, 1))
            return -1;
    }
    if (filter_adjoint(g, b.weights, f0, f1, dwt, accumulate))
        return -1;
    if (dbias)
        for (int f = f0; f < f1; f++) {
            float s = 0;
            for (int n = n0; n < n1; n++)
                for (size_t i = 0, ohw = (size_t)g->oh * g->ow; i < ohw; i++)
                    s += dy[((size_t)n * g->f + f) * ohw + i];
            dbias[f - f0] = accumulate ? dbias[f - f0] + s : s;
        }
    return 0;
}
