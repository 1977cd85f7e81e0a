/* Winograd F(m x m, 3x3): see conv_winograd.h. Summed over channels, each point of the
 * transform domain is a GEMM: (filters x channels) times (channels x tiles), or for a variant
 * laid out by tile (winograd_tiling.h) (tiles x channels) times (channels x filters), the same
 * sums. Tiles are taken in blocks of whole tile rows, so that a block's transformed data stays
 * in cache between the transforms (winograd_f2_impl.h, winograd_f4_impl.h,
 * winograd_f4_lanes_impl.h) and the GEMMs. */
#include "ops/conv_winograd.h"

#include "ops/cpu.h"
#include "ops/gemm.h"
#include "ops/layers.h"
#include "ops/scratch.h"
#include "ops/winograd_ahead.h"
#include "ops/winograd_tiling.h"

#include <string.h>

enum { MAX_POINTS = 36 };   /* F(4x4, 3x3): 6 x 6 */
#define COL_ALIGN 32        /* a multiple of every GEMM's NR (ops/gemm*.c) */

int conv_winograd_fits(const conv_geom *g)
{
    return g->kh == 3 && g->kw == 3 && g->stride == 1;
}

static int round_up(int n, int to) { return (n + to - 1) / to * to; }

/* Tiles per block, the GEMMs' columns: 128 for few channels and filters, 64 from 96 on, whose
 * blocks' matrices (36 points of channels and filters) would pass 1.7 MB at 128. One core,
 * 32-sample chunks, forward + backward: vgg-small's 32 -> 32 layer 5190 us at 128 against 5422
 * at 64; 32 -> 64 2051 against 1949, 64 -> 64 3784 against 3620, 64 -> 128 2293 against 2026;
 * wide-28's 64 -> 128 3414 against 3246 (16 samples); 32 no faster than 64. */
static int block_tiles(const conv_geom *g)
{
    return g->c + g->f <= 64 ? 128 : 64;
}

static int rows_per_block(const tiling *t)
{
    int tiles = block_tiles(t->g);
    return tiles / t->tw > 0 ? tiles / t->tw : 1;
}

/* The largest cols of any block: what the scratch buffers hold per row. */
static size_t block_cols(const tiling *t)
{
    return (size_t)round_up(rows_per_block(t) * t->tw, COL_ALIGN);
}

/* The variant for tiles of side m, nf filters at a time. F(2x2): AVX-512 machines take
 * AVX2's. F(4x4) by tile where the channels and filters come in whole pixels of lanes (16),
 * else by columns. */
static int lanes_allowed = 1;

void conv_winograd_allow_lanes(int allowed) { lanes_allowed = allowed; }

static const winograd_variant *variant_of(const conv_geom *g, int m, int nf)
{
    ops_isa isa = ops_isa_active();
    int lanes = lanes_allowed && g->c % WINOGRAD_LANES == 0 && nf % WINOGRAD_LANES == 0;
    if (m == 2)
        return isa >= OPS_ISA_AVX2 ? &winograd_f2_avx2 : &winograd_f2_portable;
    if (isa >= OPS_ISA_AVX512)
        return lanes ? &winograd_f4_lanes_avx512 : &winograd_f4_avx512;
    if (isa >= OPS_ISA_AVX2)
        return lanes ? &winograd_f4_lanes_avx2 : &winograd_f4_avx2;
    return &winograd_f4_portable;
}

/* Whether an output side of n ends in a half tile, where the variant takes them. */
static int half_side(int n) { return n % 4 == 1 || n % 4 == 2; }

static int side_points(int n, int halves)
{
    return 6 * (n / 4) + (n % 4 == 0 ? 0 : halves && half_side(n) ? 4 : 6);
}

int conv_winograd4_by_lanes(const conv_geom *g) { return variant_of(g, 4, g->f)->by_tile; }

int conv_winograd4_points(const conv_geom *g)
{
    int halves = conv_winograd4_by_lanes(g);
    return side_points(g->oh, halves) * side_points(g->ow, halves);
}

static tiling tiling_of(const conv_geom *g, int m, int nf)
{
    const winograd_variant *v = variant_of(g, m, nf);
    int th = (g->oh + m - 1) / m, tw = (g->ow + m - 1) / m;
    tiling t = {g, v, m, (m + 2) * (m + 2), th, tw, m * tw + 2, 0, 0, -1, 0, 0, NULL, 0, 0};
    t.array_len = (int)block_cols(&t);
    if (v->by_tile) {   /* half tiles: winograd_tiling.h */
        t.half_right = half_side(g->ow);
        t.half_bottom = half_side(g->oh);
    }
    return t;
}

/* Activations in channel lanes (conv.h) only through the variant by lanes, in whole blocks of
 * 16 filters from f0, and an input in lanes only as floats (bytes: the input is bytes). */
static int layout_refused(const tiling *t, int f0, int bytes)
{
    int lanes = t->g->in_lanes || t->g->out_lanes;
    return (t->g->in_lanes && bytes) ||
           (lanes && (!t->v->by_tile || f0 % WINOGRAD_LANES));
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

/* Zeroes the padding of a block's matrices of n rows of cols, or by tile, of the n columns of
 * its rows past its tiles. */
static void zero_padding(const tiling *t, float *X, int n)
{
    size_t plane = plane_of((size_t)n * t->cols);
    size_t pad = sizeof(float) * (size_t)(t->cols - t->tiles);
    if (!pad)   /* 36 x n empty calls cost wide-28 1.3% of its time */
        return;
    for (int p = 0; p < t->points; p++)
        if (t->v->by_tile)
            memset(X + p * plane + (size_t)t->tiles * n, 0, pad * (size_t)n);
        else
            for (int i = 0; i < n; i++)
                memset(X + p * plane + (size_t)i * t->cols + t->tiles, 0, pad);
}

winograd_rows ops_winograd_rows_init(const tiling *t, float *rows, int n)
{
    const conv_geom *g = t->g;
    int len = t->row_len;
    winograd_rows b = {.lo = g->pad, .hi = g->pad + g->w < len ? g->pad + g->w : len};
    for (int i = 0; i < n; i++) {
        b.s[i] = rows + i * len, b.tmp[i] = rows + (n + i) * len;
        memset(b.s[i], 0, sizeof(float) * (size_t)b.lo);
        memset(b.s[i] + b.hi, 0, sizeof(float) * (size_t)(len - b.hi));
    }
    float *zeros = rows + 2 * n * len;
    memset(zeros, 0, sizeof(float) * (size_t)len);
    b.zeros = zeros;
    return b;
}

/* T = G (x) G: point p = side i + j of G g G^T is the sum over taps 3a + b of
 * G[i][a] G[j][b] g[a][b]. */
static void kernel_transform(const tiling *t, float T[MAX_POINTS][9])
{
    int side = t->m + 2;
    for (int p = 0; p < t->points; p++)
        for (int k = 0; k < 9; k++)
            T[p][k] = t->v->G[p / side][k / 3] * t->v->G[p % side][k % 3];
}

/* U[p][f - f0][c] = (G g G^T)[p] for filters [f0, f1): one GEMM of (G (x) G) and the filters'
 * 9 taps, each filter's channels one after another, as the input gradient reads U (U^T D,
 * in place). */
static int weight_transform(const tiling *t, const float *wt, int f0, int f1, float *U)
{
    int pairs = (f1 - f0) * t->g->c;
    float T[MAX_POINTS][9];
    kernel_transform(t, T);
    return ops_sgemm(0, 1, t->points, pairs, 9, 1.0f, &T[0][0], 9,
                     wt + (size_t)f0 * t->g->c * 9, 9, 0.0f, U, (int)plane_of((size_t)pairs));
}

/* The same values laid out U[p][c][f - f0], as the forward pass reads U (U^T V with U^T in
 * place; laid out by filter, the GEMM transposed U into its panels for every block: 2% of
 * vgg-small's time): a GEMM per channel, the same sums. */
static int weight_transform_by_channel(const tiling *t, const float *wt, int f0, int f1,
                                       float *U)
{
    int nf = f1 - f0, nc = t->g->c;
    float T[MAX_POINTS][9];
    kernel_transform(t, T);
    for (int c = 0; c < nc; c++)
        if (ops_sgemm(0, 1, t->points, nf, 9, 1.0f, &T[0][0], 9,
                      wt + ((size_t)f0 * nc + (size_t)c) * 9, nc * 9, 0.0f, U + (size_t)c * nf,
                      (int)plane_of((size_t)nf * nc)))
            return -1;
    return 0;
}

/* dwt (filters [f0, f1) only) = G^T u G of dU[p][f - f0][c] (or, by_channel, dU[p][c][f -
 * f0]), the adjoint of weight_transform: one GEMM into taps[9][pairs] (with the pairs as its
 * long side: as its 9 columns they ran the micro-kernel on edges, 6% of vgg-small's time),
 * each pair's 9 taps brought together by transposing copies (one at a time, they took 1% of
 * wide-28's time), then written, or added when accumulate. taps: 18 values a pair. */
static int filter_adjoint(const tiling *t, const float *dU, int by_channel, int f0, int f1,
                          float *dwt, int accumulate, float *taps)
{
    int nf = f1 - f0, nc = t->g->c, pairs = nf * nc;
    float T[MAX_POINTS][9], *by_pair = taps + (size_t)9 * pairs;
    kernel_transform(t, T);
    if (ops_sgemm(1, 0, 9, pairs, t->points, 1.0f, &T[0][0], 9, dU, (int)plane_of((size_t)pairs),
                  0.0f, taps, pairs))
        return -1;
    if (!by_channel)
        ops_transpose(taps, pairs, 9, pairs, by_pair, 9);
    else
        for (int c = 0; c < nc; c++)
            ops_transpose(taps + (size_t)c * nf, pairs, 9, nf, by_pair + (size_t)c * 9, nc * 9);
    size_t n = (size_t)9 * pairs;
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        dwt[i] = (accumulate ? dwt[i] : 0.0f) + by_pair[i];
    return 0;
}

/* Where a product's tiles are, for half tiles' runs of columns (winograd_point_cols): by tile,
 * the rows of A and C (COLS_M), or the sum's (COLS_K: A transposed, B not); else neither. */
enum { COLS_NONE, COLS_M, COLS_K };

/* The products C[p] = op(A[p]) op(B[p]) (+ C[p] when add) of every point, each of A, B, C a
 * stack of row-major matrices, over the columns of tiles that take the point; meanwhile what
 * ahead holds (or NULL) is prefetched. */
static int products(const tiling *t, int trans_a, int trans_b, int m, int n, int k, int cols,
                    const float *A, const float *B, float *C, int add, const winograd_ahead *ahead)
{
    int lda = trans_a ? m : k, ldb = trans_b ? k : n;
    for (int p = 0; p < t->points; p++) {
        if (ahead)
            winograd_ahead_fetch(ahead, p, t->points);
        const float *a = A + p * plane_of((size_t)m * k), *b = B + p * plane_of((size_t)k * n);
        float *c = C + p * plane_of((size_t)m * n);
        int mp = m, kp = k, lo, count;
        winograd_point_cols(t, p, &lo, &count);
        if (cols == COLS_M)
            a += (size_t)lo * lda, c += (size_t)lo * n, mp = count;
        else if (cols == COLS_K)
            a += (size_t)lo * lda, b += (size_t)lo * ldb, kp = count;
        if (ops_sgemm(trans_a, trans_b, mp, n, kp, 1.0f, a, lda, b, ldb, add ? 1.0f : 0.0f, c, n))
            return -1;
    }
    return 0;
}

/* One call's scratch: a block's matrices (one per point) of channel rows (V or Z) and of filter
 * rows (M or D), cols values each; nweights sets of weight matrices, filters x channels (U,
 * dU); the filter gradient's taps, by k then by pair (filter_adjoint); the transforms' row
 * buffers. */
typedef struct buffers {
    float *channels, *filters, *weights[2], *taps, *rows;
} buffers;

static int buffers_get(const tiling *t, int nf, int nweights, buffers *b)
{
    size_t cols = block_cols(t), nc = (size_t)t->g->c;
    size_t weights = (size_t)t->points * plane_of((size_t)nf * nc), taps = 18 * (size_t)nf * nc;
    size_t rows = ROW_BUFFERS * (size_t)t->row_len + TILE_ARRAYS * (size_t)t->array_len;
    size_t lanes = WINOGRAD_LANES_LINES * WINOGRAD_LANES_LINE(t) + WINOGRAD_LANES_STAGE(t->g);
    rows = t->v->by_tile && lanes > rows ? lanes : rows;
    b->channels = ops_scratch(SCRATCH_COLUMNS, t->points * plane_of(nc * cols));
    b->filters = ops_scratch(SCRATCH_PARTIALS, t->points * plane_of((size_t)nf * cols));
    float *w = ops_scratch(SCRATCH_INPUT, nweights * weights + taps + rows);
    b->weights[0] = w;
    b->weights[1] = w && nweights > 1 ? w + weights : NULL;
    b->taps = w ? w + nweights * weights : NULL;
    b->rows = w ? b->taps + taps : NULL;
    return b->channels && b->filters && w ? 0 : -1;
}

/* M = U^T V, or by tile M = V U (U laid out by channel either way): the same sums. */
static int forward_products(const tiling *t, const buffers *b, int nf, const winograd_ahead *a)
{
    int nc = t->g->c;
    if (t->v->by_tile)
        return products(t, 0, 0, t->cols, nf, nc, COLS_M, b->channels, b->weights[0], b->filters,
                        0, a);
    return products(t, 1, 0, nf, t->cols, nc, COLS_NONE, b->weights[0], b->channels, b->filters,
                    0, a);
}

/* Adds to a what the block after t's (within samples [n0, n1)) reads from memory: its input
 * rows, then with dy (else NULL) its gradient rows of filters [f0, f1). */
static void ahead_of_next(winograd_ahead *a, const tiling *t, int n0, int n1, conv_input x,
                          const winograd_grad *dy, int f0, int f1)
{
    tiling next = *t;
    if (!next_block(&next, n0, n1))
        return;
    winograd_ahead_input_rows(a, &next, x);
    if (dy)
        winograd_ahead_output_rows(a, &next, dy, f0, f1);
}

int conv_winograd_forward(const conv_geom *g, int m, conv_input x, const float *wt,
                          const float *bias, float *y, int n0, int n1, int f0, int f1,
                          const pool_geom *pool, int32_t *argmax, int relu)
{
    int nf = f1 - f0;
    tiling t = tiling_of(g, m, nf);
    winograd_out out = {y, pool, argmax, relu};
    buffers b;
    if (layout_refused(&t, f0, !x.f) || buffers_get(&t, nf, 1, &b) ||
        weight_transform_by_channel(&t, wt, f0, f1, b.weights[0]))
        return -1;
    while (next_block(&t, n0, n1)) {
        /* prefetched during the products: the rows the output transform writes, then the
         * next block's input rows */
        winograd_ahead ahead = {.n = 0, .total = 0};
        winograd_grad written = {y, pool, argmax, NULL};
        winograd_ahead_output_rows(&ahead, &t, &written, f0, f1);
        ahead_of_next(&ahead, &t, n0, n1, x, NULL, 0, 0);
        t.v->input(&t, x, b.channels, b.rows);
        zero_padding(&t, b.channels, g->c);
        if (forward_products(&t, &b, nf, &ahead))
            return -1;
        t.v->output(&t, b.filters, bias, &out, f0, f1, b.rows);
    }
    return 0;
}

/* dx = the windows of Z = U^T D (by tile, Z = D U), from the current block's D (all
 * filters); Z in place of V. */
static int input_gradient(const tiling *t, const buffers *b, const float *U, float *dx,
                          const winograd_ahead *a)
{
    const conv_geom *g = t->g;
    if (t->v->by_tile
            ? products(t, 0, 0, t->cols, g->c, g->f, COLS_M, b->filters, U, b->channels, 0, a)
            : products(t, 1, 0, g->c, t->cols, g->f, COLS_NONE, U, b->filters, b->channels, 0, a))
        return -1;
    t->v->input_adjoint(t, b->channels, dx, b->rows);
    return 0;
}

int conv_winograd_backward_input(const conv_geom *g, int m, const float *dy, const float *wt,
                                 float *dx, int n0, int n1)
{
    tiling t = tiling_of(g, m, g->f);
    buffers b;
    if (layout_refused(&t, 0, 0) || buffers_get(&t, g->f, 1, &b) ||
        weight_transform(&t, wt, 0, g->f, b.weights[0]))
        return -1;
    winograd_grad src = {dy, NULL, NULL, NULL};
    while (next_block(&t, n0, n1)) {
        t.v->gradient(&t, &src, 0, g->f, b.filters, NULL, b.rows);
        zero_padding(&t, b.filters, g->f);
        if (input_gradient(&t, &b, b.weights[0], dx, NULL))
            return -1;
    }
    return 0;
}

/* Through the relu that gave x (x.relu_output), dx's samples [*done, the last that the current
 * block finished): each sample's rows take sums from the tiles of both blocks at a boundary
 * inside it, so a sample is masked once its last tile row is done; its input rows are still
 * in cache from this block's input transform. */
static void relu_mask_done(const tiling *t, conv_input x, float *dx, int *done)
{
    int finished = t->r1 / t->th;
    if (!x.relu_output || !x.f || !dx || t->g->in_lanes || finished <= *done)
        return;   /* (in lanes: done by the input adjoint, row by row) */
    long per = (long)t->g->c * t->g->h * t->g->w;
    ops_relu_backward(x.f, dx, dx, *done * per, finished * per);
    *done = finished;
}

/* dU (+)= D V^T over the current block's tiles, or dU^T = V D^T by_channel: where the channels
 * would leave the GEMM's register tiles (its columns) part empty and the filters would not
 * (cifar-shaped's 16 channels padded to 32 made its 16 -> 32 layer's backward 25% longer). The
 * same sums in the same order either way; swapped without that, 64 -> 128 layers ran 2-4%
 * slower, 32 -> 64 ones as fast. */
static int filter_products(const tiling *t, const buffers *b, int nf, int by_channel, int add,
                           const winograd_ahead *a)
{
    int nc = t->g->c;
    if (t->v->by_tile)   /* D and V by tile: dU = D^T V, or dU^T = V^T D */
        return by_channel ? products(t, 1, 0, nc, nf, t->cols, COLS_K, b->channels, b->filters,
                                     b->weights[0], add, a)
                          : products(t, 1, 0, nf, nc, t->cols, COLS_K, b->filters, b->channels,
                                     b->weights[0], add, a);
    const float *left = by_channel ? b->channels : b->filters;
    const float *right = by_channel ? b->filters : b->channels;
    return products(t, 0, 1, by_channel ? nc : nf, by_channel ? nf : nc, t->cols, COLS_NONE, left,
                    right, b->weights[0], add, a);
}

int conv_winograd_backward(const conv_geom *g, int m, conv_input x, const float *dy,
                           const float *wt, float *dwt, float *dbias, float *dx, int n0, int n1,
                           int f0, int f1, int accumulate, const pool_geom *pool,
                           const int32_t *argmax, const float *relu_y)
{
    int nf = f1 - f0;
    tiling t = tiling_of(g, m, nf);
    t.relu_x = x.relu_output ? x.f : NULL;
    buffers b;
    if ((dx && nf != g->f) || layout_refused(&t, f0, !x.f) ||
        buffers_get(&t, nf, dx ? 2 : 1, &b) ||
        (dx && weight_transform(&t, wt, 0, g->f, b.weights[1])))
        return -1;
    if (dbias && !accumulate)
        memset(dbias, 0, sizeof(float) * (size_t)nf);
    winograd_grad src = {dy, pool, argmax, relu_y};
    int by_channel = g->c % COL_ALIGN != 0 && nf % COL_ALIGN == 0;
    /* the first block writes dU: zeroing it first, then adding, cost a pass over its 36
     * planes each way (1.2 MB on vgg-small's 64 -> 128 layer, a chunk's only block) */
    int first = 1, masked = n0;
    while (next_block(&t, n0, n1)) {   /* dU and db, summed over the blocks in order */
        /* prefetched during the block's last products (the input gradient's, else the
         * filter gradient's): the input rows that the relu before reads again (its output,
         * x) and dx's, then the next block's input and gradient rows */
        winograd_ahead ahead = {.n = 0, .total = 0};
        if (dx && x.relu_output)
            winograd_ahead_input_rows(&ahead, &t, x);
        if (dx)
            winograd_ahead_input_rows(&ahead, &t, (conv_input){dx, NULL, 0, 0});
        ahead_of_next(&ahead, &t, n0, n1, x, &src, f0, f1);
        t.v->input(&t, x, b.channels, b.rows);
        t.v->gradient(&t, &src, f0, f1, b.filters, dbias, b.rows);
        zero_padding(&t, b.channels, g->c);
        zero_padding(&t, b.filters, nf);
        if (filter_products(&t, &b, nf, by_channel, !first, dx ? NULL : &ahead) ||
            (dx && input_gradient(&t, &b, b.weights[1], dx, &ahead)))
            return -1;
        relu_mask_done(&t, x, dx, &masked);
        first = 0;
    }
    if (first)   /* no samples: a zero gradient */
        memset(b.weights[0], 0, sizeof(float) * (size_t)t.points * plane_of((size_t)nf * g->c));
    return filter_adjoint(&t, b.weights[0], by_channel, f0, f1, dwt, accumulate, b.taps);
}
