/* Would tiles of 6 pay? (./build.sh bench f6; docs/kernels.md, "Tiles of 6, measured"). A
 * forward pass of Winograd F(6x6, 3x3) whose last tile along a side is F(4) or F(2) inside
 * F(6)'s 64-point domain (tools/winograd_points.py derives the matrices), activations in
 * channel lanes, against frugal's F(4x4) by lanes (conv_winograd_forward) on the same layer,
 * call by call, each after a 4 MB sweep that takes the input out of L2; the fastest call of
 * each kept. A measurement, not a kernel of frugal's: its transforms are written plainly (no
 * staging; one prefetch of the block's output and the next block's input during the GEMMs, as
 * frugal's winograd_ahead.c does): tuned ones would be somewhat faster, its products not.
 * usage: bench_f6 [CALLS]; needs AVX-512. F6_TILES=N: about N tiles a block (default 72).
 * prints: bench f6 LAYER f4_us=A f6_us=B speedup=A/B f6_input_us=I f6_gemm_us=G
 *         f6_output_us=O max_diff=D (largest |F(6) - F(4)| over the largest output) */
#include "common/large_alloc.h"
#include "ops/conv.h"
#include "ops/conv_winograd.h"
#include "ops/cpu.h"
#include "ops/gemm.h"
#include "ops/winograd_tiling.h"   /* plane_of: the points' matrices skewed apart */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")
/* The transforms read only the slots a tile takes, which GCC's unrolled loops do not see. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "ops/lanes_avx512.h"

/* B^T along one side, into the 8 slots of F(6)'s points 0, 1, -1, 2, -2, 1/2, -1/2, infinity:
 * a whole tile's 8 inputs; a last tile of 4 outputs, 6 inputs into slots 0-4 and 7; of 2, 4
 * into slots 0, 1, 2 and 7 (B^T divided by the factors between the filter transforms). */
INLINE void bt8(const v16 *x, v16 *o)
{
    o[0] = x[0] - x[6] + 5.25f * (x[4] - x[2]);
    v16 a = x[2] + x[6] - 4.25f * x[4], b = x[1] + x[5] - 4.25f * x[3];
    o[1] = a + b, o[2] = a - b;
    a = 0.25f * x[2] - 1.25f * x[4] + x[6], b = 0.5f * x[1] - 2.5f * x[3] + 2.0f * x[5];
    o[3] = a + b, o[4] = a - b;
    a = 4.0f * x[2] - 5.0f * x[4] + x[6], b = 2.0f * x[1] - 2.5f * x[3] + 0.5f * x[5];
    o[5] = a + b, o[6] = a - b;
    o[7] = x[7] - x[1] + 5.25f * (x[3] - x[5]);
}

INLINE void bt8_4(const v16 *x, v16 *o)
{
    o[0] = x[0] - 1.25f * x[2] + 0.25f * x[4];
    v16 a = 0.75f * x[4] - 3.0f * x[2], b = 0.75f * x[3] - 3.0f * x[1];
    o[1] = a + b, o[2] = a - b;
    a = 3.75f * (x[4] - x[2]), b = 7.5f * (x[3] - x[1]);
    o[3] = a + b, o[4] = a - b;
    o[7] = 4.0f * x[1] - 5.0f * x[3] + x[5];
}

INLINE void bt8_2(const v16 *x, v16 *o)
{
    o[0] = x[0] - x[2];
    o[1] = -2.25f * (x[1] + x[2]);
    o[2] = 2.25f * (x[1] - x[2]);
    o[7] = x[3] - x[1];
}

/* A^T: a tile's slots to its 6, 4 or 2 outputs along one side. */
INLINE void at8(const v16 *x, v16 *o)
{
    v16 s1 = x[1] + x[2], d1 = x[1] - x[2], s2 = x[3] + x[4], d2 = x[3] - x[4];
    v16 s3 = x[5] + x[6], d3 = x[5] - x[6];
    o[0] = x[0] + s1 + s2 + s3;
    o[1] = d1 + 2.0f * d2 + 0.5f * d3;
    o[2] = s1 + 4.0f * s2 + 0.25f * s3;
    o[3] = d1 + 8.0f * d2 + 0.125f * d3;
    o[4] = s1 + 16.0f * s2 + 0.0625f * s3;
    o[5] = d1 + 32.0f * d2 + 0.03125f * d3 + x[7];
}

INLINE void at8_4(const v16 *x, v16 *o)
{
    v16 s1 = x[1] + x[2], d1 = x[1] - x[2], s2 = x[3] + x[4], d2 = x[3] - x[4];
    o[0] = x[0] + s1 + s2;
    o[1] = d1 + 2.0f * d2;
    o[2] = s1 + 4.0f * s2;
    o[3] = d1 + 8.0f * d2 + x[7];
}

INLINE void at8_2(const v16 *x, v16 *o)
{
    o[0] = x[0] + x[1] + x[2];
    o[1] = x[1] - x[2] + x[7];
}

static const double G8[8][3] = {{1, 0, 0},
                                {-2 / 9., -2 / 9., -2 / 9.},
                                {-2 / 9., 2 / 9., -2 / 9.},
                                {1 / 90., 1 / 45., 2 / 45.},
                                {1 / 90., -1 / 45., 2 / 45.},
                                {32 / 45., 16 / 45., 8 / 45.},
                                {32 / 45., -16 / 45., 8 / 45.},
                                {0, 0, 1}};

/* Whether a tile of `size` outputs along a side takes slot i. */
INLINE int takes(int size, int i)
{
    return size == 6 || (size == 4 ? i != 5 && i != 6 : i <= 2 || i == 7);
}

INLINE void bt_of(int size, const v16 *x, v16 *o)
{
    if (size == 6)
        bt8(x, o);
    else if (size == 4)
        bt8_4(x, o);
    else
        bt8_2(x, o);
}

INLINE void at_of(int size, const v16 *x, v16 *o)
{
    if (size == 6)
        at8(x, o);
    else if (size == 4)
        at8_4(x, o);
    else
        at8_2(x, o);
}

/* A square layer (padding 1) in tiles of 6 but a last one of 4 or 2 (or 6) on each side. A
 * block's columns: the last row's tiles but its last (LW), the whole tiles (WW), the other
 * rows' last tiles (WL), the corner (LL), each group sample by sample: every point's tiles
 * are then one run (point_run). */
typedef struct plan {
    int c, f, side, n;
    int tiles, last;          /* per side */
    int per_block, cols;      /* samples a block; its columns, a multiple of the GEMM's 8 rows */
    int lw, ww, wl, ll;       /* tiles a sample in each group */
} plan;

static plan plan_of(int c, int f, int side, int n)
{
    int rest = side % 6, last = rest == 0 || rest == 5 ? 6 : rest <= 2 ? 2 : 4;
    plan p = {c, f, side, n, (side + 5) / 6, last, 0, 0, 0, 0, 0, 0};
    int whole = p.tiles - (last != 6);
    p.lw = last != 6 ? whole : 0;
    p.ww = whole * whole;
    p.wl = p.lw;
    p.ll = last != 6;
    /* about 72 tiles a block (F6_TILES): 36 and 128 (F(4x4)'s) measured slower here */
    int target = getenv("F6_TILES") ? atoi(getenv("F6_TILES")) : 72;
    p.per_block = target / (p.tiles * p.tiles) > 0 ? target / (p.tiles * p.tiles) : 1;
    p.cols = (p.per_block * p.tiles * p.tiles + 7) / 8 * 8;
    return p;
}

static int column_of(const plan *p, int samples, int s, int ty, int tx)
{
    int lower = ty == p->tiles - 1 && p->last != 6, right = tx == p->tiles - 1 && p->last != 6;
    int at_ww = samples * p->lw, at_wl = at_ww + samples * p->ww, at_ll = at_wl + samples * p->wl;
    if (lower)
        return right ? at_ll + s : s * p->lw + tx;
    return right ? at_wl + s * p->wl + ty
                 : at_ww + s * p->ww + ty * (p->tiles - (p->last != 6)) + tx;
}

/* The columns [*lo, *lo + *n) of point (i, k)'s products: the tiles that take it, widened to
 * whole register tiles of the GEMM (products of columns that leave the point out are never
 * read back). */
static void point_run(const plan *p, int samples, int i, int k, int *lo, int *n)
{
    int row = takes(p->last, i), col = takes(p->last, k);
    int at_ww = samples * p->lw, at_wl = at_ww + samples * p->ww, at_ll = at_wl + samples * p->wl;
    int end = col ? (row ? at_ll + samples * p->ll : at_ll) : at_wl;
    *lo = (row ? 0 : at_ww) / 8 * 8;
    *n = (end + 7) / 8 * 8 - *lo;
}

/* B^T down the rows in[] of a tile row for each input column, into rows' slots (padded
 * column x + 1). */
INLINE void down_columns(const float *const in[8], float *rows, size_t line, int w, int size)
{
    for (int x = 0; x < w; x++) {
        v16 d[8], o[8];
#pragma GCC unroll 8
        for (int a = 0; a < 8; a++)
            if (a < size + 2)
                d[a] = load16(in[a] + (size_t)LANES * x);
        bt_of(size, d, o);
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++)
            if (takes(size, i))
                store16(rows + i * line + (size_t)LANES * (x + 1), o[i]);
    }
}

/* B^T across tile tx's columns of each slot's row, its points into v (plane apart). */
INLINE void across_tile(const float *rows, size_t line, int tx, float *v, size_t plane,
                        int sy, int sx)
{
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        if (!takes(sy, i))
            continue;
        v16 d[8], o[8];
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++)
            if (k < sx + 2)
                d[k] = load16(rows + i * line + (size_t)LANES * (6 * tx + k));
        bt_of(sx, d, o);
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++)
            if (takes(sx, k))
                store16(v + (8 * i + k) * plane, o[k]);
    }
}

static void down_columns_of(const float *const in[8], float *rows, size_t line, int w, int size)
{
    if (size == 6)
        down_columns(in, rows, line, w, 6);
    else if (size == 4)
        down_columns(in, rows, line, w, 4);
    else
        down_columns(in, rows, line, w, 2);
}

static void across_tile_of(const float *rows, size_t line, int tx, float *v, size_t plane,
                           int sy, int sx)
{
    if (sy == 6 && sx == 6)
        across_tile(rows, line, tx, v, plane, 6, 6);
    else if (sy == 6)
        across_tile(rows, line, tx, v, plane, 6, sx == 4 ? 4 : 2);
    else if (sx == 6)
        across_tile(rows, line, tx, v, plane, sy == 4 ? 4 : 2, 6);
    else
        across_tile(rows, line, tx, v, plane, sy == 4 ? 4 : 2, sy == 4 ? 4 : 2);
}

/* V[p][col][c] for samples [s0, s0 + samples) of x (channel lanes). rows: 9 lines of
 * LANES (6 tiles + 2) floats, the last one zeros. */
static void input_transform(const plan *p, const float *x, int s0, int samples, float *V,
                            float *rows)
{
    size_t plane = plane_of((size_t)p->c * p->cols);
    size_t line = (size_t)LANES * (6 * p->tiles + 2), hw = (size_t)p->side * p->side;
    const float *zeros = rows + 8 * line;
    memset(rows, 0, sizeof(float) * 9 * line);   /* the padding columns stay zero */
    for (int s = 0; s < samples; s++)
        for (int c0 = 0; c0 < p->c; c0 += LANES) {
            const float *block = x + ((size_t)(s0 + s) * p->c + (size_t)c0) * hw;
            for (int ty = 0; ty < p->tiles; ty++) {
                int sy = ty == p->tiles - 1 ? p->last : 6;
                const float *in[8];
                for (int a = 0; a < 8; a++) {
                    int y = 6 * ty - 1 + a;
                    in[a] = y >= 0 && y < p->side ? block + (size_t)LANES * y * p->side : zeros;
                }
                down_columns_of(in, rows, line, p->side, sy);
                for (int tx = 0; tx < p->tiles; tx++) {
                    int col = column_of(p, samples, s, ty, tx);
                    across_tile_of(rows, line, tx, V + (size_t)col * p->c + c0, plane, sy,
                                   tx == p->tiles - 1 ? p->last : 6);
                }
            }
        }
}

/* A tile's outputs of 16 filters from its points at m (plane apart), plus the bias, through a
 * relu, into y (rows w apart) where inside rows x cols. */
INLINE void tile_outputs(const float *m, size_t plane, v16 bias, float *y, int w, int rows,
                         int cols, int sy, int sx)
{
    float across[8][6][LANES] __attribute__((aligned(64)));   /* through L1: 48 registers */
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        if (!takes(sy, i))
            continue;
        v16 in[8], o[6];
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++)
            if (takes(sx, k))
                in[k] = load16(m + (8 * i + k) * plane);
        at_of(sx, in, o);
#pragma GCC unroll 6
        for (int a = 0; a < 6; a++)
            if (a < sx)
                store16(across[i][a], o[a]);
    }
#pragma GCC unroll 6
    for (int a = 0; a < 6; a++) {
        if (a >= sx || a >= cols)
            break;
        v16 in[8], o[6];
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++)
            if (takes(sy, i))
                in[i] = load16(across[i][a]);
        at_of(sy, in, o);
#pragma GCC unroll 6
        for (int r = 0; r < 6; r++)
            if (r < sy && r < rows)
                store16(y + ((size_t)r * w + (size_t)a) * LANES, relu_lanes(o[r] + bias));
    }
}

static void tile_outputs_of(const float *m, size_t plane, v16 bias, float *y, int w, int rows,
                            int cols, int sy, int sx)
{
    if (sy == 6 && sx == 6)
        tile_outputs(m, plane, bias, y, w, rows, cols, 6, 6);
    else if (sy == 6)
        tile_outputs(m, plane, bias, y, w, rows, cols, 6, sx == 4 ? 4 : 2);
    else if (sx == 6)
        tile_outputs(m, plane, bias, y, w, rows, cols, sy == 4 ? 4 : 2, 6);
    else
        tile_outputs(m, plane, bias, y, w, rows, cols, sy == 4 ? 4 : 2, sy == 4 ? 4 : 2);
}

static void output_transform(const plan *p, const float *M, const float *bias, float *y, int s0,
                             int samples)
{
    size_t plane = plane_of((size_t)p->f * p->cols), hw = (size_t)p->side * p->side;
    for (int s = 0; s < samples; s++)
        for (int ty = 0; ty < p->tiles; ty++)
            for (int tx = 0; tx < p->tiles; tx++) {
                int col = column_of(p, samples, s, ty, tx);
                for (int f0 = 0; f0 < p->f; f0 += LANES) {
                    float *at = y + ((size_t)(s0 + s) * p->f + (size_t)f0) * hw +
                                ((size_t)6 * ty * p->side + 6 * (size_t)tx) * LANES;
                    tile_outputs_of(M + (size_t)col * p->f + f0, plane, load16(bias + f0), at,
                                    p->side, p->side - 6 * ty, p->side - 6 * tx,
                                    ty == p->tiles - 1 ? p->last : 6,
                                    tx == p->tiles - 1 ? p->last : 6);
                }
            }
}
#pragma GCC diagnostic pop
#pragma GCC pop_options

/* U[p][c][f] = (G g G^T)[p]: a GEMM a channel, as conv_winograd.c's forward does. */
static void filter_transform(const plan *p, const float *wt, float *U)
{
    float T[64][9];
    for (int pt = 0; pt < 64; pt++)
        for (int j = 0; j < 9; j++)
            T[pt][j] = (float)(G8[pt / 8][j / 3] * G8[pt % 8][j % 3]);
    int plane = (int)plane_of((size_t)p->c * p->f);
    for (int c = 0; c < p->c; c++)
        ops_sgemm(0, 1, 64, p->f, 9, 1.0f, &T[0][0], 9, wt + (size_t)c * 9, p->c * 9, 0.0f,
                  U + (size_t)c * p->f, plane);
}

typedef struct scratch {
    float *V, *M, *U, *rows;
} scratch;

/* Seconds spent in each stage of the last call: input, products, output. */
static double stage[3];

static void f6_forward(const plan *p, const float *x, const float *wt, const float *bias,
                       float *y, const scratch *b)
{
    filter_transform(p, wt, b->U);
    size_t vplane = plane_of((size_t)p->c * p->cols);
    size_t mplane = plane_of((size_t)p->f * p->cols);
    size_t uplane = plane_of((size_t)p->c * p->f), hw = (size_t)p->side * p->side;
    memset(stage, 0, sizeof stage);
    for (int s0 = 0; s0 < p->n; s0 += p->per_block) {
        int samples = p->n - s0 < p->per_block ? p->n - s0 : p->per_block;
        double t0 = now();
        input_transform(p, x, s0, samples, b->V, b->rows);
        double t1 = now();
        /* prefetched a 64th before each point's product: the block's output, the next
         * block's input */
        const char *run[2] = {(const char *)(y + (size_t)s0 * p->f * hw),
                              (const char *)(x + (size_t)(s0 + samples) * p->c * hw)};
        size_t bytes[2] = {sizeof(float) * samples * p->f * hw,
                           s0 + samples < p->n ? sizeof(float) * samples * p->c * hw : 0};
        for (int pt = 0; pt < 64; pt++) {
            for (int r = 0; r < 2; r++)
                for (size_t at = bytes[r] * pt / 64 / 64 * 64; at < bytes[r] * (pt + 1) / 64;
                     at += 64)
                    __builtin_prefetch(run[r] + at, 0, 3);
            int lo, n;
            point_run(p, samples, pt / 8, pt % 8, &lo, &n);
            ops_sgemm(0, 0, n, p->f, p->c, 1.0f, b->V + pt * vplane + (size_t)lo * p->c, p->c,
                      b->U + pt * uplane, p->f, 0.0f, b->M + pt * mplane + (size_t)lo * p->f,
                      p->f);
        }
        double t2 = now();
        output_transform(p, b->M, bias, y, s0, samples);
        stage[0] += t1 - t0, stage[1] += t2 - t1, stage[2] += now() - t2;
    }
}

/* n floats on huge pages: uniform in [-scale, scale], or [0, scale] (a relu's output). */
static float *randoms(size_t n, float scale, int relu)
{
    float *v = large_alloc(sizeof(float) * n);
    for (size_t i = 0; v && i < n; i++) {
        float r = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
        v[i] = relu && r < 0 ? 0.0f : r * scale;
    }
    return v;
}

typedef struct layer {
    const char *name;
    int c, f, side, n;
} layer;

static void sweep(const float *big, size_t n)
{
    volatile float sink = 0;
    for (size_t i = 0; i < n; i += 16)
        sink += big[i];
}

static int compare(const layer *l, int calls, const float *big, size_t nbig)
{
    plan p = plan_of(l->c, l->f, l->side, l->n);
    conv_geom g;
    conv_geom_init(&g, l->c, l->side, l->side, l->f, 3, 3, 1, 1);
    g.in_lanes = g.out_lanes = 1;
    size_t hw = (size_t)l->side * l->side, nx = l->n * l->c * hw, ny = l->n * l->f * hw;
    float *x = randoms(nx, 1, 1), *wt = randoms((size_t)l->f * l->c * 9, 0.2f, 0);
    float *bias = randoms((size_t)l->f, 0.1f, 0), *y4 = randoms(ny, 0, 0), *y6 = randoms(ny, 0, 0);
    scratch b = {randoms(64 * plane_of((size_t)l->c * p.cols), 0, 0),
                 randoms(64 * plane_of((size_t)l->f * p.cols), 0, 0),
                 randoms(64 * plane_of((size_t)l->c * l->f), 0, 0),
                 randoms(9 * LANES * (size_t)(6 * p.tiles + 2), 0, 0)};
    if (!x || !wt || !bias || !y4 || !y6 || !b.V || !b.M || !b.U || !b.rows)
        return fprintf(stderr, "bench f6: out of memory\n"), -1;
    double f4 = 1e9, f6 = 1e9, best[3] = {1e9, 1e9, 1e9};
    for (int i = 0; i < calls; i++) {
        sweep(big, nbig);
        double t0 = now();
        if (conv_winograd_forward(&g, 4, (conv_input){x, NULL, 0, 0}, wt, bias, y4, 0, l->n, 0,
                                  l->f, NULL, NULL, 1))
            return fprintf(stderr, "bench f6: F(4x4) by lanes refused %s\n", l->name), -1;
        f4 = fmin(f4, now() - t0);
        sweep(big, nbig);
        t0 = now();
        f6_forward(&p, x, wt, bias, y6, &b);
        f6 = fmin(f6, now() - t0);
        for (int k = 0; k < 3; k++)
            best[k] = fmin(best[k], stage[k]);
    }
    double diff = 0, largest = 0;
    for (size_t i = 0; i < ny; i++)
        diff = fmax(diff, fabs(y4[i] - y6[i])), largest = fmax(largest, fabs(y4[i]));
    printf("bench f6 %s f4_us=%.0f f6_us=%.0f speedup=%.3f f6_input_us=%.0f f6_gemm_us=%.0f "
           "f6_output_us=%.0f max_diff=%.1e\n",
           l->name, 1e6 * f4, 1e6 * f6, f4 / f6, 1e6 * best[0], 1e6 * best[1], 1e6 * best[2],
           diff / largest);
    free(x), free(wt), free(bias), free(y4), free(y6);
    free(b.V), free(b.M), free(b.U), free(b.rows);
    return 0;
}

int main(int argc, char **argv)
{
    if (ops_isa_active() < OPS_ISA_AVX512) {
        fprintf(stderr, "bench f6: needs AVX-512 (this machine: %s)\n",
                ops_isa_name(ops_isa_active()));
        return 1;
    }
    int calls = argc > 1 ? atoi(argv[1]) : 100;
    /* vgg-small's layers with sides F(6) shortens (32 -> 44 points, 16 -> 22), wide-28's 14 x
     * 14 (F(4x4) with half tiles 22, F(6) 20); chunks of training's size */
    const layer layers[] = {{"vgg_32x32_32-32", 32, 32, 32, 32},
                            {"vgg_16x16_32-64", 32, 64, 16, 32},
                            {"vgg_16x16_64-64", 64, 64, 16, 32},
                            {"wide-28_14x14_64-128", 64, 128, 14, 16}};
    size_t nbig = (size_t)1 << 20;
    float *big = randoms(nbig, 1, 0);
    if (!big)
        return 1;
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++)
        if (compare(&layers[i], calls, big, nbig))
            return 1;
    free(big);
    return 0;
}
