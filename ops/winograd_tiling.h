/* Internal to the Winograd convolution: conv_winograd.c drives it, and each tile size has its
 * transforms in a file of its own (winograd_f2_impl.h, winograd_f4_impl.h). F(m x m, 3x3) cuts
 * the output into m x m tiles; each reads an (m + 2) x (m + 2) window of input, and a tile's
 * data in the transform domain has (m + 2)^2 points. */
#ifndef FRUGAL_WINOGRAD_TILING_H
#define FRUGAL_WINOGRAD_TILING_H

#include "ops/conv.h"
#include "ops/pool_row.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <xmmintrin.h>   /* SSE, baseline x86-64: the pooled windows' rows interleaved */

typedef struct winograd_variant winograd_variant;

/* A geometry's tiles: th x tw per sample, taken in blocks of tile rows [r0, r1), where tile
 * row r is row r % th of sample r / th. A block's transformed data has a row of cols values
 * per point and channel (or filter): its tiles, then zeros up to a whole number of GEMM
 * register tiles, so that no product goes through the GEMM's slow edge path. */
typedef struct tiling {
    const conv_geom *g;
    const winograd_variant *v;
    int m, points;          /* outputs per tile side; (m + 2)^2 */
    int th, tw;
    int row_len;            /* the padded input a tile row reads, m * tw + 2 */
    int array_len;          /* a tile array's floats (tile_array): the largest block's cols */
    int r0, r1;             /* the current block; r1 < 0 before the first */
    int tiles, cols;        /* its tiles, (r1 - r0) * tw; cols: tiles rounded up */
    /* Backward through the relu whose output is the input (conv_input.relu_output), else
     * NULL: in channel lanes the input adjoint keeps each row of dx where it is positive as
     * it stores it; otherwise conv_winograd.c masks whole samples after. */
    const float *relu_x;
    /* Half tiles (F(4x4) by lanes only): where a row's last tile would compute 2 or 3 outputs
     * past the output's edge (a side of 4k + 1 or 4k + 2: wide-28's 14 x 14), that tile takes
     * F(2)'s transform along the row (half_right), and each sample's last tile row along the
     * columns (half_bottom): 4 points on that side instead of 6, F(2x2)'s points 0, 1, -1 and
     * infinity being F(4x4)'s first three and last (winograd_f4_matrices.h, BT2H). */
    int half_right, half_bottom;
} tiling;

/* With half tiles, a block's columns (its tiles) come in groups, so that each point's tiles
 * are one run of columns (winograd_point_cols): the last tiles of the rows but samples' last
 * (R), the rest of those rows (I), the rest of the samples' last rows (L), then their last
 * tiles. tile_groups: the columns of R, I and L. */
typedef struct tile_groups {
    int right, inner, lower;
} tile_groups;

static inline int tile_rows_below(const tiling *t, int r)   /* last rows in [r0, r) */
{
    return t->half_bottom ? r / t->th - t->r0 / t->th : 0;
}

static inline tile_groups winograd_tile_groups(const tiling *t)
{
    int lower_rows = tile_rows_below(t, t->r1), rows = t->r1 - t->r0 - lower_rows;
    int per_row = t->tw - t->half_right;
    return (tile_groups){t->half_right ? rows : 0, rows * per_row, lower_rows * per_row};
}

static inline int winograd_half_row(const tiling *t, int r)
{
    return t->half_bottom && r % t->th == t->th - 1;
}

/* Tile row r (of the current block) as half tiles take it: whether it is a sample's last
 * (half_bottom), and where its tiles lie among the block's columns: tile q < tw - 1 at
 * *first + q, the last at *last. Without half tiles, row by row, (r - r0) tw + q. */
static inline int winograd_row_cols(const tiling *t, int r, int *first, int *last)
{
    if (!t->half_right && !t->half_bottom) {
        *first = (r - t->r0) * t->tw;
        *last = *first + t->tw - 1;
        return 0;
    }
    tile_groups g = winograd_tile_groups(t);
    int per_row = t->tw - t->half_right, lower = tile_rows_below(t, r);
    int bottom = winograd_half_row(t, r), upper = r - t->r0 - lower;
    *first = bottom ? g.right + g.inner + lower * per_row : g.right + upper * per_row;
    *last = !t->half_right ? *first + t->tw - 1
            : bottom       ? g.right + g.inner + g.lower + lower
                           : upper;
    return bottom;
}

/* The columns [*lo, *lo + *n) of point p's matrices whose tiles take p: every column (the
 * padding too) but where half tiles leave p out, F(4x4)'s points 2 and -2 along their half
 * side (rows 3 and 4 of the 6 x 6, or columns 3 and 4). */
static inline void winograd_point_cols(const tiling *t, int p, int *lo, int *n)
{
    int side = t->m + 2, i = p / side, k = p % side;
    int right = t->half_right && (k == 3 || k == 4), bottom = t->half_bottom && (i == 3 || i == 4);
    *lo = 0, *n = t->cols;
    if (!right && !bottom)
        return;
    tile_groups g = winograd_tile_groups(t);
    *lo = right ? g.right : 0;
    *n = (bottom ? g.right + g.inner : g.right + g.inner + g.lower) - *lo;
}

/* The points' matrices lie one after another, elems values each, then SKEW more: were they a
 * multiple of 4 KB apart, a transform's streams would share one set of cache lines. */
#define SKEW 16
static inline size_t plane_of(size_t elems) { return elems + SKEW; }

/* The transforms' row buffers, row_len floats each, that every transform's rows fit in. */
#define ROW_BUFFERS 16

/* After them, TILE_ARRAYS arrays of one value per tile of a block, where a transform gathers
 * its tiles' values so that its arithmetic runs over a whole block at once: rows of a few
 * tiles (4 on a 16 x 16 output) leave SIMD loops too short. */
#define TILE_ARRAYS 36
static inline float *tile_array(const tiling *t, float *rows, int i)
{
    return rows + ROW_BUFFERS * (size_t)t->row_len + (size_t)i * t->array_len;
}

/* An input transform's row buffers, laid out in its rows: n padded rows s, whose columns
 * [lo, hi) are the input's (the rest, the padding, zeroed here once); n rows for bytes turned
 * into floats; a row of zeros for input rows outside the image. */
typedef struct winograd_rows {
    float *s[6], *tmp[6];
    const float *zeros;
    int lo, hi;
} winograd_rows;
winograd_rows ops_winograd_rows_init(const tiling *t, float *rows, int n);

/* Row y of channel c of sample n, w floats: in place for a float input, converted into tmp for
 * bytes, zeros outside the input. Inline: called for each of a tile row's 6 rows, the call
 * took 1.6% of vgg-small's time. */
static inline const float *winograd_input_row(const tiling *t, conv_input x, int n, int c,
                                              int y, const float *zeros, float *tmp)
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

/* Where a forward pass puts its output: y, or, fused with the 2x2 stride-2 max-pool after the
 * convolution (pool not NULL), the pooled output y and its argmax, as maxpool_forward gives
 * them; with relu, what is stored goes through a relu first, as relu_forward's. */
typedef struct winograd_out {
    float *y;
    const pool_geom *pool;
    int32_t *argmax;
    int relu;
} winograd_out;

/* Output rows oy .. oy + nrows - 1 of filter f of sample n, ow values each in rows[a] (rows
 * past the output's last are skipped), plus b, into o->y (not pooled: see winograd_pooled). */
static inline void winograd_store_rows(const tiling *t, const winograd_out *o, int n, int f,
                                       int oy, float *const *rows, int nrows, float b)
{
    const conv_geom *g = t->g;
    for (int a = 0; a < nrows && oy + a < g->oh; a++) {
        const float *row = rows[a];
        float *y = o->y + (((size_t)n * g->f + f) * g->oh + (size_t)(oy + a)) * g->ow;
        if (o->relu) {   /* in the same loop: reading the stored row back stalled on it */
#pragma omp simd
            for (int i = 0; i < g->ow; i++) {
                float v = row[i] + b;
                y[i] = v < 0.0f ? 0.0f : v;
            }
            continue;
        }
#pragma omp simd
        for (int i = 0; i < g->ow; i++)
            y[i] = row[i] + b;
    }
}

/* Where an input adjoint (the variants' input_adjoint) puts row i of tile row r's windows:
 * input row y of its sample, if inside the input. */
static inline int winograd_window_row(const tiling *t, int r, int i, int *y)
{
    *y = t->m * (r % t->th) - t->g->pad + i;
    return *y >= 0 && *y < t->g->h;
}

/* Row y of channel c's input gradient of tile row r's sample, from line, the row of the tile
 * row's windows summed along it (padded: column x of the input is line[x + pad]): stored where
 * this tile row is the first whose windows hold row y, added to what the one above stored
 * otherwise (windows overlap by 2 rows). So each sample's tile rows must come in order. */
static inline void winograd_store_input_row(const tiling *t, float *dx, int c, int r, int i,
                                            int y, const float *line)
{
    const conv_geom *g = t->g;
    int first = i >= 2 || r % t->th == 0;
    float *out = dx + (((size_t)(r / t->th) * g->c + c) * g->h + (size_t)y) * g->w;
    const float *in = line + g->pad;
    if (first) {   /* two loops: with the test inside, GCC left one scalar (AVX-512 build) */
#pragma omp simd
        for (int x = 0; x < g->w; x++)
            out[x] = 0.0f + in[x];
        return;
    }
#pragma omp simd
    for (int x = 0; x < g->w; x++)
        out[x] += in[x];
}

/* The 2x2 stride-2 max-pool fused into the output transform, straight from the tiles: a tile's
 * m x m outputs hold (m / 2)^2 whole windows, pooled for all the block's tiles at once
 * (maxpool2_window), into v[k] and a[k] for window k = row * (m / 2) + column; corner[q]: the
 * argmax numbering of tile q's top left within its filter's plane. In tile arrays 0 to 8. */
typedef struct winograd_pooled {
    float *v[4];
    int32_t *a[4];
    int32_t *corner;
} winograd_pooled;

static inline winograd_pooled winograd_pooled_init(const tiling *t, float *rows)
{
    winograd_pooled w;
    for (int k = 0; k < 4; k++) {
        w.v[k] = tile_array(t, rows, k);
        w.a[k] = (int32_t *)tile_array(t, rows, 4 + k);
    }
    w.corner = (int32_t *)tile_array(t, rows, 8);
    for (int r = t->r0, q = 0; r < t->r1; r++)
        for (int col = 0; col < t->tw; col++, q++)
            w.corner[q] = t->m * ((r % t->th) * t->g->ow + col);
    return w;
}

/* p[0 .. n) = v[0 .. n), n <= 4 of v's values; none for n <= 0 (a negative odd n once
 * stored one before p: the last pooled value of rows 3, 9, 11, ... wide was overwritten). */
static inline void store_upto4(float *p, __m128 v, int n)
{
    if (n <= 0)
        return;
    if (n >= 4) {
        _mm_storeu_ps(p, v);
        return;
    }
    if (n >= 2)
        _mm_storel_pi((__m64 *)p, v);
    if (n & 1)
        _mm_store_ss(p + n - 1, n == 3 ? _mm_movehl_ps(v, v) : v);
}

/* y[2q + k] = v[k][q], the windows of a row of tiles with two per tile interleaved, for
 * 2q + k < ow: by 4 tiles in SSE registers (argmax values go through as bit patterns). The
 * last 4 may read up to 3 values past v's tiles: the next tile array's, never stored. */
static inline void interleave_pairs(const float *v0, const float *v1, int ow, float *y)
{
    int q = 0;
    for (; 2 * q < ow; q += 4) {
        __m128 a = _mm_loadu_ps(v0 + q), b = _mm_loadu_ps(v1 + q);
        store_upto4(y + 2 * q, _mm_unpacklo_ps(a, b), ow - 2 * q);
        store_upto4(y + 2 * q + 4, _mm_unpackhi_ps(a, b), ow - 2 * q - 4);
    }
}

/* Filter f's pooled windows of the block, into the pooled output (those past its edge
 * dropped). */
static inline void winograd_store_pooled(const tiling *t, const winograd_out *o,
                                         const winograd_pooled *w, int f)
{
    const pool_geom *p = o->pool;
    int half = t->m / 2;
    for (int r = t->r0; r < t->r1; r++) {
        int at = (r - t->r0) * t->tw;
        for (int i = 0; i < half; i++) {
            int py = half * (r % t->th) + i;
            if (py >= p->oh)
                break;
            size_t row = (((size_t)(r / t->th) * p->c + f) * p->oh + py) * p->ow;
            float *y = o->y + row;
            float *a = (float *)(o->argmax + row);
            if (half == 1) {
                memcpy(y, w->v[0] + at, sizeof(float) * (size_t)p->ow);
                memcpy(a, w->a[0] + at, sizeof(float) * (size_t)p->ow);
            } else {
                interleave_pairs(w->v[2 * i] + at, w->v[2 * i + 1] + at, p->ow, y);
                interleave_pairs((float *)w->a[2 * i] + at, (float *)w->a[2 * i + 1] + at,
                                 p->ow, a);
            }
        }
    }
}

/* Where a backward pass reads the output gradient: dy, whole (pool NULL), or, fused with the
 * 2x2 stride-2 max-pool, the pooled gradient dy and its argmax, as maxpool_backward would
 * spread it (without spreading it into memory first). With relu_y (else NULL), the output of
 * a relu after them (the same shape as dy), that the gradient goes through first, as
 * relu_backward's: dy where relu_y > 0, else 0. */
typedef struct winograd_grad {
    const float *dy;
    const pool_geom *pool;
    const int32_t *argmax;
    const float *relu_y;
} winograd_grad;

/* Output row oy of filter f of sample n in a gradient: whole, the row (dy), NULL past the
 * output; pooled, its windows' row (dy and argmax, pool->ow of each) and first, the argmax
 * numbering of the output row's column 0, or NULL where no window holds the row. relu_y: the
 * same row of the relu's output, or NULL without one. */
typedef struct gradient_row {
    const float *dy;
    const int32_t *argmax;
    const float *relu_y;
    int32_t first;
} gradient_row;

/* Value i of a gradient row through its relu, if any (relu_backward's). */
static inline float winograd_through_relu(const gradient_row *r, int i)
{
    float g = r->dy[i];   /* loaded whatever relu_y is, as relu_backward does */
    return !r->relu_y || r->relu_y[i] > 0.0f ? g : 0.0f;
}

static inline gradient_row winograd_gradient_row(const tiling *t, const winograd_grad *s, int n,
                                                 int f, int oy)
{
    const conv_geom *g = t->g;
    const pool_geom *p = s->pool;
    gradient_row row = {NULL, NULL, NULL, 0};
    if (oy >= g->oh || (p && oy / 2 >= p->oh))
        return row;
    size_t at = p ? (((size_t)n * p->c + f) * p->oh + (size_t)(oy / 2)) * p->ow
                  : (((size_t)n * g->f + f) * g->oh + (size_t)oy) * g->ow;
    row.dy = s->dy + at;
    row.relu_y = s->relu_y ? s->relu_y + at : NULL;
    if (p) {
        row.argmax = s->argmax + at;
        row.first = (int32_t)(((size_t)f * g->oh + (size_t)oy) * g->ow);
    }
    return row;
}

/* The tile rows of a group of 8 tiles whose rows hold per_row tiles each (8: a group is 8
 * tiles of one row, longer rows taking several groups). */
static inline int group_tile_rows(int per_row) { return per_row == 8 ? 1 : 8 / per_row; }

/* The output gradient of a group of 8 tiles (one, 2 or 4 tile rows of 8, 4 or 2 tiles from
 * tile row r, tile q on; nrows of them in the block), as load_gradient_row gives it: zero past
 * the output's edges, unpooled through the argmax, through the relu. The functions below take
 * pooled and per_row (tiles of a tile row in the group) as constants, so that each case gets
 * code of its own with its registers indexed by constants (indexed at run time, they went
 * through the stack and the transform ran slower than AVX2's). */
typedef struct gradient_group {
    const tiling *t;
    const winograd_grad *dy;
    int f, r, q, nrows;
} gradient_group;

/* The outputs of a group of 8 tiles (one, 2 or 4 tile rows of 8, 4 or 2 tiles from tile row
 * r, tile q on; nrows of them in the block) of filter f. As gradient_group, the functions below
 * take pooled and per_row as constants. */
typedef struct output_group {
    const tiling *t;
    const winograd_out *o;
    int f, r, q, nrows;
    float b;   /* the bias, added to every output (0 without one, as output_transform does) */
} output_group;

/* One tile size's transforms, on the current block of t; rows: the row buffers and the tile
 * arrays.
 * input: V[p][c][col], the input windows in the transform domain. output: the tiles' outputs
 * from M[p][f - f0][col], plus the bias, for filters [f0, f1), into o. gradient: D[p][f -
 * f0][col], the output gradient's tiles in the transform domain (the adjoint of output), and
 * with dbias (else NULL) each filter's gradient summed over the block's tiles added to
 * dbias[f - f0], in an order that does not depend on where the gradient came from.
 * input_adjoint: dx = the windows of Z[p][c][col] (the adjoint of input), overlapping windows
 * summed, for the block's samples (every dx value of a sample is written once the block that
 * holds its last tile row is done). */
struct winograd_variant {
    int m;
    float G[6][3];   /* the filter transform, (m + 2) x 3: U = G g G^T */
    void (*input)(const tiling *t, conv_input x, float *V, float *rows);
    void (*output)(const tiling *t, const float *M, const float *bias, const winograd_out *o,
                   int f0, int f1, float *rows);
    void (*gradient)(const tiling *t, const winograd_grad *dy, int f0, int f1, float *D,
                     float *dbias, float *rows);
    void (*input_adjoint)(const tiling *t, const float *Z, float *dx, float *rows);
    /* Set: V, M, D and Z laid out by tile, V[p][col][c], M[p][col][f - f0] and so on, the
     * channels (filters) of a tile side by side (winograd_f4_lanes_impl.h). */
    int by_tile;
};

extern const winograd_variant winograd_f2_portable, winograd_f2_avx2;
extern const winograd_variant winograd_f4_portable, winograd_f4_avx2, winograd_f4_avx512;
/* By tile, a pixel's 16 channels (filters) side by side, 16 (AVX-512) or 8 (AVX2) to a
 * register: for channels and filters in multiples of WINOGRAD_LANES. Its transforms' rows:
 * WINOGRAD_LANES_LINES lines of WINOGRAD_LANES_LINE floats (16 x row_len + 16 columns), then
 * WINOGRAD_LANES_STAGE floats where the planes a transform reads (16 of the input, or of the
 * output gradient, the relu's output and the argmaxes) are copied first, skewed (plane_of) so
 * that the 16 rows read at once do not share a cache set; none for planes of 4096 values and
 * more, which are read in place. */
extern const winograd_variant winograd_f4_lanes_avx512, winograd_f4_lanes_avx2;
#define WINOGRAD_LANES 16
#define WINOGRAD_LANES_LINES 12
#define WINOGRAD_LANES_LINE(t) ((size_t)WINOGRAD_LANES * (size_t)((t)->row_len + WINOGRAD_LANES))
#define WINOGRAD_LANES_PLANE(g) \
    ((size_t)((g)->h * (g)->w > (g)->oh * (g)->ow ? (g)->h * (g)->w : (g)->oh * (g)->ow))
#define WINOGRAD_LANES_STAGE(g)                                                            \
    (WINOGRAD_LANES_PLANE(g) < 4096                                                        \
         ? 3 * (size_t)WINOGRAD_LANES * plane_of(WINOGRAD_LANES_PLANE(g))                  \
         : 0)

#endif
