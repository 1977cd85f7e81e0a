/* Winograd F(4x4, 3x3)'s transforms, AVX2+FMA build (compiled with -mavx2 -mfma): the input
 * transform's column half takes 8 tiles' window columns straight out of the transformed rows
 * by 4x4 transposes within 128-bit lanes, the input adjoint puts 8 tiles' windows back into
 * their rows the same way, the output gradient's transform takes 8 tiles' 4x4 blocks out of
 * the gradient rows, and the output transform puts 8 tiles' outputs into theirs, pooled or
 * not (winograd_f4_columns_impl.h), where the portable build goes through tile arrays. */
#define ISA avx2
#define F4_OWN_INPUT input_transform_permuted
#define F4_OWN_ADJOINT input_adjoint_permuted
#define F4_OWN_GRADIENT gradient_transform_permuted
#define F4_OWN_OUTPUT output_transform_permuted
#include "ops/winograd_f4_impl.h"

#include "ops/vec_avx2.h"

#include <immintrin.h>

typedef float v8sf __attribute__((vector_size(32)));

/* Inlined whatever GCC thinks: each caller passes constants that its code is specialised on. */
#define INLINE static inline __attribute__((always_inline))

/* 4 values at lo's place, 4 at hi's. */
static inline __m256 join128(__m128 lo, __m128 hi)
{
    return _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
}

/* v through the relu, as relu_forward's (NaN passes). */
static inline __m256 relu8(__m256 v)
{
    return _mm256_andnot_ps(_mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ), v);
}

/* The 4x4 transposes within each 128-bit lane of in[0 .. 4): value m of lane l of out[k] is
 * value k of lane l of in[m]. */
INLINE void transpose_in_lanes(const __m256 in[4], __m256 out[4])
{
    __m256 u0 = _mm256_unpacklo_ps(in[0], in[1]), u1 = _mm256_unpackhi_ps(in[0], in[1]);
    __m256 u2 = _mm256_unpacklo_ps(in[2], in[3]), u3 = _mm256_unpackhi_ps(in[2], in[3]);
    out[0] = _mm256_shuffle_ps(u0, u2, _MM_SHUFFLE(1, 0, 1, 0));
    out[1] = _mm256_shuffle_ps(u0, u2, _MM_SHUFFLE(3, 2, 3, 2));
    out[2] = _mm256_shuffle_ps(u1, u3, _MM_SHUFFLE(1, 0, 1, 0));
    out[3] = _mm256_shuffle_ps(u1, u3, _MM_SHUFFLE(3, 2, 3, 2));
}

/* winograd_f4_columns_impl.h's loads and stores of a group's 8 tiles (n of them). */
static inline v8sf load_tiles8(const float *p, int n) { return (v8sf)load_upto8(p, n); }
static inline void store_tiles8(float *p, v8sf v, int n) { store_upto8(p, (__m256)v, n); }

typedef struct window_index {
    char unused;   /* in-lane shuffles take their order from immediates */
} window_index;

static inline window_index window_index_make(void) { return (window_index){0}; }

/* winograd_f4_columns_impl.h's window columns: tile l's window starts at at[l]; register k
 * holds tiles k and k + 4 (a 128-bit lane each), columns 0 to 3 or 4 to 7, so that a 4x4
 * transpose within lanes gives columns of tiles 0 to 7 in order. */
INLINE void window_columns(const window_index *ix, const float *const s[4], int rows, int x,
                           v8sf c[6])
{
    (void)ix;
    const int per_row = 8 / rows;
    const float *at[8];
#pragma GCC unroll 8
    for (int l = 0; l < 8; l++)
        at[l] = s[l / per_row] + x + 4 * (l % per_row);
    __m256 a[4], b[4];
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        a[k] = join128(_mm_loadu_ps(at[k]), _mm_loadu_ps(at[k + 4]));
        b[k] = join128(_mm_loadu_ps(at[k] + 4), _mm_loadu_ps(at[k + 4] + 4));
    }
    __m256 t[4], w0 = _mm256_unpacklo_ps(b[0], b[1]), w2 = _mm256_unpacklo_ps(b[2], b[3]);
    transpose_in_lanes(a, t);   /* columns 4 and 5: the first half of b's transpose */
#pragma GCC unroll 4
    for (int m = 0; m < 4; m++)
        c[m] = (v8sf)t[m];
    c[4] = (v8sf)_mm256_shuffle_ps(w0, w2, _MM_SHUFFLE(1, 0, 1, 0));
    c[5] = (v8sf)_mm256_shuffle_ps(w0, w2, _MM_SHUFFLE(3, 2, 3, 2));
}

typedef struct line_index {
    int stride;   /* from a group's tile row's line to the next's */
} line_index;

static inline line_index line_index_make(int per_row, int stride)
{
    (void)per_row;   /* window_lines_store takes it as a constant */
    return (line_index){stride};
}

/* Values 0 to 3 of lo's 128-bit lane l, then of hi's: one tile of each. */
INLINE __m256 lanes_of(__m256 lo, __m256 hi, int l)
{
    return l ? _mm256_permute2f128_ps(lo, hi, 0x31) : _mm256_permute2f128_ps(lo, hi, 0x20);
}

/* The 2 floats of v's lane l at p: a tile's columns 4 and 5, where the tile row's line ends. */
INLINE void store_end(float *p, __m256 v, int l)
{
    _mm_storel_pi((__m64 *)p, l ? _mm256_extractf128_ps(v, 1) : _mm256_castps256_ps128(v));
}

/* winograd_f4_columns_impl.h's window rows into their lines, the inverse of window_columns:
 * a 4x4 transpose within lanes turns the columns 0 to 3 back into a[k] (tiles k and k + 4,
 * a lane each), columns 4 and 5 into b[k] (zeros after them); a tile's 4 positions take its
 * a plus the tile before's b (+ 0 for a row's first tile, as input_adjoint adds), stored 8
 * positions at a time, and a tile row's last tile's b ends its line. Tiles past n zeroed. */
INLINE void window_lines_store(const line_index *li, v8sf o[6][6], int n, int rows,
                               float *const line[6], int at, int join)
{
    const __m256 zero = _mm256_setzero_ps();
    const __m256 keep = _mm256_castsi256_ps(first_n8(n));
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++) {
        __m256 c[6];
#pragma GCC unroll 6
        for (int k = 0; k < 6; k++)
            c[k] = n == 8 ? (__m256)o[i][k] : _mm256_and_ps((__m256)o[i][k], keep);
        __m256 a[4], t4 = _mm256_unpacklo_ps(c[4], c[5]), t5 = _mm256_unpackhi_ps(c[4], c[5]);
        transpose_in_lanes(c, a);
        __m256 b[4] = {
            _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t4), _mm256_setzero_pd())),
            _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t4), _mm256_setzero_pd())),
            _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t5), _mm256_setzero_pd())),
            _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t5), _mm256_setzero_pd()))};
        float *out = line[i] + at;
        __m256 p[4];
        if (rows == 1) {   /* tiles 0 to 7 of one row; tile 4 follows tile 3 (b[3]'s lane 0) */
            __m128 before = _mm_setzero_ps();   /* the group before's last columns 4 and 5 */
            if (join) {
                double two;
                memcpy(&two, out, sizeof two);
                before = _mm_castpd_ps(_mm_set_sd(two));
            }
            p[0] = _mm256_add_ps(a[0], _mm256_insertf128_ps(_mm256_castps128_ps256(before),
                                                            _mm256_castps256_ps128(b[3]), 1));
            p[1] = _mm256_add_ps(a[1], b[0]);
            p[2] = _mm256_add_ps(a[2], b[1]);
            p[3] = _mm256_add_ps(a[3], b[2]);
            _mm256_storeu_ps(out, lanes_of(p[0], p[1], 0));
            _mm256_storeu_ps(out + 8, lanes_of(p[2], p[3], 0));
            _mm256_storeu_ps(out + 16, lanes_of(p[0], p[1], 1));
            _mm256_storeu_ps(out + 24, lanes_of(p[2], p[3], 1));
            store_end(out + 32, b[3], 1);
        } else if (rows == 2) {   /* tiles 0 to 3 on one tile row's line, 4 to 7 on the next */
            p[0] = _mm256_add_ps(a[0], zero);
            p[1] = _mm256_add_ps(a[1], b[0]);
            p[2] = _mm256_add_ps(a[2], b[1]);
            p[3] = _mm256_add_ps(a[3], b[2]);
#pragma GCC unroll 2
            for (int j = 0; j < 2; j++) {
                float *row = out + (size_t)j * li->stride;
                _mm256_storeu_ps(row, lanes_of(p[0], p[1], j));
                _mm256_storeu_ps(row + 8, lanes_of(p[2], p[3], j));
                store_end(row + 16, b[3], j);
            }
        } else {   /* 2 tiles a tile row: 0 1, 2 3 in lane 0; 4 5, 6 7 in lane 1 */
            p[0] = _mm256_add_ps(a[0], zero);
            p[1] = _mm256_add_ps(a[1], b[0]);
            p[2] = _mm256_add_ps(a[2], zero);
            p[3] = _mm256_add_ps(a[3], b[2]);
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                float *row = out + (size_t)j * li->stride;
                int l = j / 2, second = j % 2;   /* the lane; tiles 2 3 (6 7) */
                _mm256_storeu_ps(row, lanes_of(p[2 * second], p[2 * second + 1], l));
                store_end(row + 8, b[2 * second + 1], l);
            }
        }
    }
}

/* Values 2l + odd of the 16 in lo and hi, l = 0 .. 7 (as pool_row_wide.h splits a row). */
static inline __m256 every_other(__m256 lo, __m256 hi, int odd)
{
    __m256 s = odd ? _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1))
                   : _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
}

/* The group's values of row a of its tiles, tile by tile (tile row j's at j * per, per = 4
 * or 2 values a tile times per_row), from the rows' p + x0 (n of them before the output's
 * edge; zeros after, and for a row NULL): all 32 (of 4 a tile) in v[0 .. 4), or 16 in v[0 ..
 * 2). */
INLINE void group_values(const float *const p[4], int nrows, int per, int all, int x0, int n,
                         __m256 *v)
{
    if (per == 4) {   /* 4 rows of 4 */
        __m128 h[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            h[j] = j < nrows && p[j] ? load_upto4(p[j] + x0, n) : _mm_setzero_ps();
        v[0] = join128(h[0], h[1]), v[1] = join128(h[2], h[3]);
        return;
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
#pragma GCC unroll 4
        for (int h = 0; h < 32; h += 8)
            if (j * per + h < all && h < per)
                v[(j * per + h) / 8] = j < nrows && p[j] ? load_upto8(p[j] + x0 + h, n - h)
                                                         : _mm256_setzero_ps();
}

/* Lane l: at[j] + 4 t for tile l, t-th of tile row j of a group of per_row tiles a row: a
 * number (an argmax's) of each tile's first column, from its row's. Set from registers (an
 * array stored lane by lane and loaded whole stalls on the stores: winograd_f4_avx512.c). */
INLINE __m256i tile_columns(const int32_t at[4], int per_row)
{
    __m256i row = per_row == 8 ? _mm256_set1_epi32(at[0])
                  : per_row == 4
                      ? _mm256_setr_epi32(at[0], at[0], at[0], at[0], at[1], at[1], at[1], at[1])
                      : _mm256_setr_epi32(at[0], at[0], at[1], at[1], at[2], at[2], at[3], at[3]);
    return _mm256_add_epi32(row, per_row == 8   ? _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)
                                 : per_row == 4 ? _mm256_setr_epi32(0, 4, 8, 12, 0, 4, 8, 12)
                                                : _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4));
}

/* v where the argmax a is x, else 0. */
static inline v8sf at_argmax8(__m256 a, __m256i x, __m256 v)
{
    return (v8sf)_mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_castps_si256(a), x)),
                               v);
}

/* winograd_f4_columns_impl.h's gradient tiles: e[k] lane l = column k of row a of tile l. The
 * group's gradient rows loaded whole (zeros past the output's edge and its last row, as
 * load_gradient_row's), through the relu; then unpooled, tiles k and k + 4 put in a vector's
 * two lanes and its columns taken by a 4x4 transpose within lanes; pooled, each tile's two
 * windows split apart, and each column takes its window's gradient where the argmax is that
 * column. */
INLINE void gradient_tiles(const window_index *ix, const gradient_group *gg, int a, int pooled,
                           int per_row, v8sf e[4])
{
    (void)ix;
    const tiling *t = gg->t;
    const winograd_grad *dy = gg->dy;
    int per = (pooled ? 2 : 4) * per_row, nrows = group_tile_rows(per_row);
    int x0 = per * gg->q / per_row, n = (pooled ? dy->pool->ow : t->g->ow) - x0;
    nrows = gg->nrows < nrows ? gg->nrows : nrows;
    const float *g[4] = {NULL, NULL, NULL, NULL}, *ry[4] = {NULL, NULL, NULL, NULL};
    const float *am[4] = {NULL, NULL, NULL, NULL};
    int32_t first[4] = {0, 0, 0, 0};
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        if (j >= nrows)
            break;
        int r = gg->r + j;
        gradient_row row = winograd_gradient_row(t, dy, r / t->th, gg->f, 4 * (r % t->th) + a);
        g[j] = row.dy, ry[j] = row.dy ? row.relu_y : NULL;
        am[j] = (const float *)row.argmax, first[j] = row.first + 4 * gg->q;
    }
    __m256 v[4], y[4];
    int all = pooled ? 16 : 32;
    group_values(g, nrows, per, all, x0, n, v);
    if (dy->relu_y) {   /* relu_backward's: a value passes where the output is above 0 */
        group_values(ry, nrows, per, all, x0, n, y);
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++)
            if (8 * k < all)
                v[k] = _mm256_and_ps(_mm256_cmp_ps(y[k], _mm256_setzero_ps(), _CMP_GT_OQ), v[k]);
    }
    if (!pooled) {   /* tile l's values at 4l .. 4l + 3 */
        __m256 c[4] = {_mm256_permute2f128_ps(v[0], v[2], 0x20),
                       _mm256_permute2f128_ps(v[0], v[2], 0x31),
                       _mm256_permute2f128_ps(v[1], v[3], 0x20),
                       _mm256_permute2f128_ps(v[1], v[3], 0x31)};
        __m256 t[4];
        transpose_in_lanes(c, t);
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++)
            e[k] = (v8sf)t[k];
        return;
    }
    __m256 w[2];   /* tile l's windows at 2l, 2l + 1 */
    group_values(am, nrows, per, all, x0, n, w);
    __m256 g0 = every_other(v[0], v[1], 0), g1 = every_other(v[0], v[1], 1);
    __m256 a0 = every_other(w[0], w[1], 0), a1 = every_other(w[0], w[1], 1);
    __m256i x = tile_columns(first, per_row), one = _mm256_set1_epi32(1);
    __m256i x2 = _mm256_add_epi32(x, _mm256_add_epi32(one, one));
    e[0] = at_argmax8(a0, x, g0);
    e[1] = at_argmax8(a0, _mm256_add_epi32(x, one), g0);
    e[2] = at_argmax8(a1, x2, g1);
    e[3] = at_argmax8(a1, _mm256_add_epi32(x2, one), g1);
}

/* Values [4 per_row j, 4 per_row (j + 1)) of the 32 in v (8 a vector), the tiles of tile row j
 * of a group of per_row tiles a row, stored at y up to n of them. */
INLINE void store_tile_row(float *y, const __m256 v[4], int j, int per_row, int n)
{
    if (per_row == 8)
#pragma GCC unroll 4
        for (int h = 0; h < 4; h++)
            store_upto8(y + 8 * h, v[h], n - 8 * h);
    else if (per_row == 4)
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++)
            store_upto8(y + 8 * h, v[2 * j + h], n - 8 * h);
    else
        store_upto8(y, v[j], n);
}

/* winograd_f4_columns_impl.h's output row: the inverse of window_columns' transpose puts tile
 * k's 4 columns and tile k + 4's in a vector's two lanes, whose lanes then line the 8 tiles'
 * 32 values up in order. */
INLINE void store_output_row(const window_index *ix, const output_group *og, v8sf o[4][4],
                             int a, int per_row)
{
    (void)ix;
    const tiling *t = og->t;
    const conv_geom *g = t->g;
    const __m256 cols[4] = {(__m256)o[a][0], (__m256)o[a][1], (__m256)o[a][2], (__m256)o[a][3]};
    __m256 c[4];   /* tiles k and k + 4 */
    transpose_in_lanes(cols, c);
    __m256 v[4] = {_mm256_permute2f128_ps(c[0], c[1], 0x20),
                   _mm256_permute2f128_ps(c[2], c[3], 0x20),
                   _mm256_permute2f128_ps(c[0], c[1], 0x31),
                   _mm256_permute2f128_ps(c[2], c[3], 0x31)};   /* tiles 0 1, 2 3, 4 5, 6 7 */
#pragma GCC unroll 4
    for (int h = 0; h < 4; h++) {
        v[h] = _mm256_add_ps(v[h], _mm256_set1_ps(og->b));
        if (og->o->relu)
            v[h] = relu8(v[h]);
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        if (j >= group_tile_rows(per_row) || j >= og->nrows)
            break;
        int r = og->r + j, oy = 4 * (r % t->th) + a;
        if (oy >= g->oh)
            continue;
        float *y = og->o->y + (((size_t)(r / t->th) * g->f + og->f) * g->oh + oy) * g->ow;
        int x = per_row == 8 ? 4 * og->q : 0;
        store_tile_row(y + x, v, j, per_row, g->ow - x);
    }
}

/* a where keep says so, else b. */
static inline __m256i blend_i(__m256i b, __m256i a, __m256 keep)
{
    return _mm256_castps_si256(
        _mm256_blendv_ps(_mm256_castsi256_ps(b), _mm256_castsi256_ps(a), keep));
}

/* winograd_f4_columns_impl.h's pooled rows: each tile's windows compared in registers as
 * maxpool2_window does (the first maximum kept), each window row's two windows of the 8 tiles
 * interleaved into a row's order. */
INLINE void store_pooled_rows(const window_index *ix, const output_group *og, v8sf o[4][4],
                              int per_row)
{
    (void)ix;
    const tiling *t = og->t;
    const conv_geom *g = t->g;
    const pool_geom *p = og->o->pool;
    int ow = g->ow;
    int32_t corner[4] = {0, 0, 0, 0};   /* winograd_pooled_init's, + the filter's plane */
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        if (j >= group_tile_rows(per_row))
            break;
        int r = og->r + j, col = per_row == 8 ? og->q : 0;
        corner[j] = (int32_t)((size_t)og->f * g->oh * ow) + 4 * ((r % t->th) * ow + col);
    }
    __m256i c = tile_columns(corner, per_row);
    v8sf bias = {og->b, og->b, og->b, og->b, og->b, og->b, og->b, og->b};
#pragma GCC unroll 4
    for (int a = 0; a < 4; a++)
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++)
            o[a][k] += bias;
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++) {
        __m256 v[2], am[2];
#pragma GCC unroll 2
        for (int j = 0; j < 2; j++) {   /* window (i, j) of each tile */
            __m256 v01 = (__m256)o[2 * i][2 * j + 1];
            __m256 v10 = (__m256)o[2 * i + 1][2 * j], v11 = (__m256)o[2 * i + 1][2 * j + 1];
            __m256i i00 = _mm256_add_epi32(c, _mm256_set1_epi32(2 * i * ow + 2 * j)), at = i00;
            __m256 best = (__m256)o[2 * i][2 * j];
            __m256 gt = _mm256_cmp_ps(v01, best, _CMP_GT_OQ);
            at = blend_i(at, _mm256_add_epi32(i00, _mm256_set1_epi32(1)), gt);
            best = _mm256_blendv_ps(best, v01, gt);
            gt = _mm256_cmp_ps(v10, best, _CMP_GT_OQ);
            at = blend_i(at, _mm256_add_epi32(i00, _mm256_set1_epi32(ow)), gt);
            best = _mm256_blendv_ps(best, v10, gt);
            gt = _mm256_cmp_ps(v11, best, _CMP_GT_OQ);
            at = blend_i(at, _mm256_add_epi32(i00, _mm256_set1_epi32(ow + 1)), gt);
            v[j] = _mm256_blendv_ps(best, v11, gt);
            am[j] = _mm256_castsi256_ps(at);
        }
        __m256 lo = _mm256_unpacklo_ps(v[0], v[1]), hi = _mm256_unpackhi_ps(v[0], v[1]);
        __m256 alo = _mm256_unpacklo_ps(am[0], am[1]), ahi = _mm256_unpackhi_ps(am[0], am[1]);
        __m256 pv[4] = {_mm256_permute2f128_ps(lo, hi, 0x20), _mm256_permute2f128_ps(lo, hi, 0x31)};
        __m256 pa[4] = {_mm256_permute2f128_ps(alo, ahi, 0x20),
                        _mm256_permute2f128_ps(alo, ahi, 0x31)};   /* tiles 0-3, 4-7 */
        if (og->o->relu)
            pv[0] = relu8(pv[0]), pv[1] = relu8(pv[1]);
        if (per_row == 2) {   /* a tile row's 4 windows: a lane each */
            pv[3] = _mm256_permute2f128_ps(pv[1], pv[1], 0x11);
            pv[2] = pv[1];
            pv[1] = _mm256_permute2f128_ps(pv[0], pv[0], 0x11);
            pa[3] = _mm256_permute2f128_ps(pa[1], pa[1], 0x11);
            pa[2] = pa[1];
            pa[1] = _mm256_permute2f128_ps(pa[0], pa[0], 0x11);
        }
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            if (j >= group_tile_rows(per_row) || j >= og->nrows)
                break;
            int r = og->r + j, py = 2 * (r % t->th) + i;
            if (py >= p->oh)
                continue;
            size_t row = (((size_t)(r / t->th) * p->c + og->f) * p->oh + py) * p->ow;
            int x = per_row == 8 ? 2 * og->q : 0, n = p->ow - x;
            n = per_row < 8 && n > 2 * per_row ? 2 * per_row : n;
            if (per_row == 8) {
                store_upto8(og->o->y + row + x, pv[0], n);
                store_upto8(og->o->y + row + x + 8, pv[1], n - 8);
                store_upto8((float *)og->o->argmax + row + x, pa[0], n);
                store_upto8((float *)og->o->argmax + row + x + 8, pa[1], n - 8);
            } else {
                store_upto8(og->o->y + row, pv[j], n);
                store_upto8((float *)og->o->argmax + row, pa[j], n);
            }
        }
    }
}

#include "ops/winograd_f4_columns_impl.h"
