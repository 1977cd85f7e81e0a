/* Winograd F(4x4, 3x3)'s transforms, AVX-512 build, for layers whose channels or filters do
 * not fill 16 lanes (winograd_f4_lanes_impl.h takes the others): winograd_f4_columns_impl.h's,
 * 256-bit arithmetic (faster than 512-bit loops here: Makefile), with two-register permutes
 * (vpermt2ps) taking 8 tiles' window columns and gradient blocks out of rows, and putting
 * windows and outputs (pooled or not) back into theirs, where the AVX2 build needs in-lane
 * transposes. Same arithmetic, same bits. Compiled with AVX-512 flags. */
#define ISA avx512
#define F4_OWN_INPUT input_transform_permuted
#define F4_OWN_ADJOINT input_adjoint_permuted
#define F4_OWN_GRADIENT gradient_transform_permuted
#define F4_OWN_OUTPUT output_transform_permuted
#include "ops/winograd_f4_impl.h"

#include <immintrin.h>

typedef float v8sf __attribute__((vector_size(32)));

/* Inlined whatever GCC thinks: each caller passes constants that its code is specialised on. */
#define INLINE static inline __attribute__((always_inline))

/* Lanes 0 to 7: column 4l + m of the 32 values a register pair holds (lanes 8 to 15 unused). */
static inline __m512i window_column(int m)
{
    return _mm512_add_epi32(
        _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0),
        _mm512_set1_epi32(m));
}

/* The permutes' indexes, built once per call. */
typedef struct window_index {
    __m512i col[4];   /* window_column's */
    __m512i pos[2];   /* row_positions' */
} window_index;

static __m512i row_positions(int h);

static inline window_index window_index_make(void)
{
    return (window_index){{window_column(0), window_column(1), window_column(2),
                           window_column(3)},
                          {row_positions(0), row_positions(1)}};
}

/* Values [x, x + 16) of a transformed row, and [x + 4, x + 20) (the windows' columns 4 and 5
 * are the next tile's 0 and 1). */
INLINE void pair16(const float *s, int x, __m512 *at, __m512 *after)
{
    __m512 a = _mm512_loadu_ps(s + x), b = _mm512_loadu_ps(s + x + 16);
    *at = a;
    *after = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(b),
                                                     _mm512_castps_si512(a), 4));
}

/* winograd_f4_columns_impl.h's window columns: register pairs hold tile l's window column m
 * (m < 4) at value 4l + m, and the same from column 4 on; permutes take the 6 columns out. */
INLINE void window_columns(const window_index *ix, const float *const s[4], int rows, int x,
                           v8sf c[6])
{
    __m512 p[4];   /* the pair from column 0, the pair from column 4 */
    if (rows == 1) {
        pair16(s[0], x, &p[0], &p[2]);
        pair16(s[0], x + 16, &p[1], &p[3]);
    } else if (rows == 2) {
        pair16(s[0], 0, &p[0], &p[2]);
        pair16(s[1], 0, &p[1], &p[3]);
    } else {   /* two tile rows' 8 values per register */
        __m512 a[4], b[4];
        for (int j = 0; j < 4; j++)
            pair16(s[j], 0, &a[j], &b[j]);
        p[0] = _mm512_shuffle_f32x4(a[0], a[1], _MM_SHUFFLE(1, 0, 1, 0));
        p[1] = _mm512_shuffle_f32x4(a[2], a[3], _MM_SHUFFLE(1, 0, 1, 0));
        p[2] = _mm512_shuffle_f32x4(b[0], b[1], _MM_SHUFFLE(1, 0, 1, 0));
        p[3] = _mm512_shuffle_f32x4(b[2], b[3], _MM_SHUFFLE(1, 0, 1, 0));
    }
#pragma GCC unroll 6
    for (int m = 0; m < 6; m++)
        c[m] = (v8sf)_mm512_castps512_ps256(
            _mm512_permutex2var_ps(p[m < 4 ? 0 : 2], ix->col[m % 4], p[m < 4 ? 1 : 3]));
}

/* The first n of 8 values. */
static inline void store_tiles8(float *p, v8sf v, int n)
{
    _mm256_mask_storeu_ps(p, (__mmask8)((1u << n) - 1), (__m256)v);
}

/* The first n of 8 values, zeros after. */
static inline v8sf load_tiles8(const float *p, int n)
{
    return (v8sf)(n == 8 ? _mm256_loadu_ps(p)
                         : _mm256_maskz_loadu_ps((__mmask8)((1u << n) - 1), p));
}

/* Where the values of a group's 8 tiles' window rows go in its lines: register b of 3 holds
 * line positions 16b .. 16b + 15, from the windows' columns 0 to 3 (a: indexes into the pairs
 * o0|o1, o2|o3) and columns 4 and 5 (b: into o4|o5), which the next tile's 0 and 1 overlap.
 * A position with no such value is masked to zero. */
typedef struct line_index {
    __m512i a[3], b[3];
    __mmask16 ka[3], kb[3];
} line_index;

/* Lane l is tile l % per_row of the group's tile row l / per_row, whose line starts at
 * (l / per_row) * stride. */
static line_index line_index_make(int per_row, int stride)
{
    int a[48], b[48];
    for (int p = 0; p < 48; p++)
        a[p] = b[p] = -1;
    for (int l = 0; l < 8; l++) {
        int at = l / per_row * stride + 4 * (l % per_row);
        for (int m = 0; m < 4; m++)
            a[at + m] = (m < 2 ? 0 : 16) + 8 * (m % 2) + l;
        for (int m = 0; m < 2; m++)
            b[at + 4 + m] = 8 * m + l;
    }
    line_index mp;
    for (int r = 0; r < 3; r++) {
        int32_t ia[16], ib[16];
        unsigned ka = 0, kb = 0;
        for (int k = 0; k < 16; k++) {
            int p = 16 * r + k;
            ia[k] = a[p] < 0 ? 0 : a[p], ib[k] = b[p] < 0 ? 0 : b[p];
            ka |= (unsigned)(a[p] >= 0) << k, kb |= (unsigned)(b[p] >= 0) << k;
        }
        mp.a[r] = _mm512_loadu_si512(ia), mp.b[r] = _mm512_loadu_si512(ib);
        mp.ka[r] = (__mmask16)ka, mp.kb[r] = (__mmask16)kb;
    }
    return mp;
}

/* Two 8-lane registers as one, lanes past n of each zeroed (keep: both halves' lanes). */
static inline __m512 pair_of(v8sf lo, v8sf hi, __mmask16 keep)
{
    return _mm512_maskz_mov_ps(keep, _mm512_insertf32x8(_mm512_castps256_ps512((__m256)lo),
                                                        (__m256)hi, 1));
}

/* winograd_f4_columns_impl.h's window rows into their lines: each window row's 6 columns
 * permuted into place, overlaps summed (a position no tile reaches: zero). */
INLINE void window_lines_store(const line_index *mp, v8sf o[6][6], int n, int rows,
                               float *const line[6], int at, int join)
{
    (void)rows;   /* in the indexes */
    __mmask16 keep = (__mmask16)((1u << n) - 1);
    keep |= (__mmask16)(keep << 8);
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++) {   /* window row i's columns into its lines */
        __m512 c01 = pair_of(o[i][0], o[i][1], keep), c23 = pair_of(o[i][2], o[i][3], keep);
        __m512 c45 = pair_of(o[i][4], o[i][5], keep), r[3];
#pragma GCC unroll 3
        for (int b = 0; b < 3; b++)
            r[b] = _mm512_add_ps(_mm512_maskz_permutex2var_ps(mp->ka[b], c01, mp->a[b], c23),
                                 _mm512_maskz_permutexvar_ps(mp->kb[b], mp->b[b], c45));
        if (join)
            r[0] = _mm512_add_ps(r[0], _mm512_maskz_loadu_ps(0x3, line[i] + at));
#pragma GCC unroll 3
        for (int b = 0; b < 3; b++)
            _mm512_storeu_ps(line[i] + at + 16 * b, r[b]);
    }
}

/* x into lanes 4i .. 4i + 3 of v (i < 4). */
static inline __m512 insert4(__m512 v, __m128 x, int i)
{
    return i == 0 ? _mm512_insertf32x4(v, x, 0)
           : i == 1 ? _mm512_insertf32x4(v, x, 1)
           : i == 2 ? _mm512_insertf32x4(v, x, 2)
                    : _mm512_insertf32x4(v, x, 3);
}

/* p[0 .. min(n, len)) into lanes at .. of into, zeros to the rest of those len lanes, the
 * others kept (len 4, 8 or 16, at a multiple of it). Plain loads only, by 16, 8 or 4 values
 * and the last few one at a time: masked loads that missed the cache stalled the transform
 * (it took 16% of vgg-small's time instead of 10%, and twice the AVX2 build's on wide-28). */
INLINE __m512 load_lanes(__m512 into, const float *p, int n, int at, int len)
{
    if (n >= len && len == 16)
        return _mm512_loadu_ps(p);
    if (n >= len && len == 8)
        return at ? _mm512_insertf32x8(into, _mm256_loadu_ps(p), 1)
                  : _mm512_insertf32x8(into, _mm256_loadu_ps(p), 0);
    for (int i = 0; i < len; i += 4)
        into = insert4(into, n - i >= 4 ? _mm_loadu_ps(p + i) : load_upto4(p + i, n - i),
                       (at + i) / 4);
    return into;
}

/* Row a of the group's tiles: the gradient rows (windows, pooled) of each tile row j side by
 * side in v (32 values; 16 windows), and the same of the relu's output (ry) and the argmax
 * (am); first[j], the argmax numbering of row j's column 0. Zeros past the edges. */
INLINE void gradient_rows(const gradient_group *gg, int a, int pooled, int per_row, __m512 v[2],
                          __m512 ry[2], __m512 *am, int32_t first[4])
{
    const tiling *t = gg->t;
    const winograd_grad *dy = gg->dy;
    int per = (pooled ? 2 : 4) * per_row;   /* values of a tile row */
    int width = pooled ? dy->pool->ow : t->g->ow, x0 = per * gg->q / per_row;
    v[0] = v[1] = ry[0] = ry[1] = *am = _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {   /* constant bounds, unrolled: v's indexes constants */
        if (j >= group_tile_rows(per_row) || j >= gg->nrows)
            break;
        int r = gg->r + j;
        gradient_row row = winograd_gradient_row(t, dy, r / t->th, gg->f, 4 * (r % t->th) + a);
        first[j] = row.first;
        if (!row.dy)
            continue;
#pragma GCC unroll 2
        for (int h = 0; h < 32; h += 16) {   /* value P = j * per + h of v */
            if (h >= per)
                break;
            int P = j * per + h, len = per - h < 16 ? per - h : 16, n = width - x0 - h;
            v[P / 16] = load_lanes(v[P / 16], row.dy + x0 + h, n, P % 16, len);
            if (row.relu_y)
                ry[P / 16] = load_lanes(ry[P / 16], row.relu_y + x0 + h, n, P % 16, len);
            if (pooled)
                *am = load_lanes(*am, (const float *)row.argmax + x0 + h, n, P % 16, len);
        }
    }
}

/* winograd_f4_columns_impl.h's gradient tiles: e[k] for k < 4, lane l: column k of tile l,
 * row a of the group's tiles. */
INLINE void gradient_tiles(const window_index *ix, const gradient_group *gg, int a, int pooled,
                           int per_row, v8sf e[4])
{
    __m512 v[2], ry[2], am;
    int32_t first[4] = {0, 0, 0, 0};
    gradient_rows(gg, a, pooled, per_row, v, ry, &am, first);
    if (gg->dy->relu_y)   /* through the relu */
        for (int h = 0; h < 2; h++)
            v[h] = _mm512_maskz_mov_ps(
                _mm512_cmp_ps_mask(ry[h], _mm512_setzero_ps(), _CMP_GT_OQ), v[h]);
    if (!pooled) {   /* value 4l + k of the pair: column k of tile l */
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++)
            e[k] = (v8sf)_mm512_castps512_ps256(_mm512_permutex2var_ps(v[0], ix->col[k], v[1]));
        return;
    }
    /* pooled: tile l's columns 2k' and 2k' + 1 are in window 2l + k'; each takes the window's
     * gradient where its argmax is that column (numbered from its row's first, + 4 per tile) */
    __m512i target = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
        if (j < group_tile_rows(per_row)) {
            __mmask16 lanes = (__mmask16)(((1u << per_row) - 1) << (j * per_row));
            target = _mm512_mask_set1_epi32(target, lanes, first[j] + 4 * gg->q);
        }
    target = _mm512_add_epi32(target, _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0,
                                                        0, 0, 0, 0));
    if (per_row < 8)   /* 4 t, t the tile within its row, not 4 l */
        target = _mm512_sub_epi32(target, _mm512_setr_epi32(0, 0, 0, 0, 16, 16, 16, 16, 0, 0, 0,
                                                             0, 0, 0, 0, 0));
    if (per_row < 4)
        target = _mm512_sub_epi32(target, _mm512_setr_epi32(0, 0, 8, 8, 0, 0, 8, 8, 0, 0, 0, 0,
                                                             0, 0, 0, 0));
    const __m512i two_l = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 0, 0, 0, 0, 0, 0, 0);
#pragma GCC unroll 2
    for (int half = 0; half < 2; half++) {
        __m512i w = _mm512_add_epi32(two_l, _mm512_set1_epi32(half));
        __m512 g = _mm512_permutexvar_ps(w, v[0]);
        __m512i at = _mm512_permutexvar_epi32(w, _mm512_castps_si512(am));
#pragma GCC unroll 2
        for (int c = 0; c < 2; c++) {
            __m512i x = _mm512_add_epi32(target, _mm512_set1_epi32(2 * half + c));
            e[2 * half + c] = (v8sf)_mm512_castps512_ps256(
                _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(at, x), g));
        }
    }
}

/* Lane 2l + j: window j of tile l, from (window 0 | window 1) of 8 tiles each: a row of pooled
 * windows in order. */
static inline __m512i pooled_positions(void)
{
    return _mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
}

/* Lane 4(l - 4h) + k: column k of tile l, tiles 4h to 4h + 3, from the pair (column 0 |
 * column 1) for k < 2, else (column 2 | column 3): 16 values of an output row in order. */
static inline __m512i row_positions(int h)
{
    int32_t idx[16];
    for (int p = 0; p < 16; p++) {
        int l = 4 * h + p / 4, k = p % 4;
        idx[p] = (k >= 2 ? 16 : 0) + 8 * (k % 2) + l;
    }
    return _mm512_loadu_si512(idx);
}

/* v's lanes from `from` on moved down to lane 0. */
static inline __m512 lanes_from(__m512 v, int from)
{
    return from ? _mm512_permutexvar_ps(
                      _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                                                         12, 13, 14, 15),
                                       _mm512_set1_epi32(from)),
                      v)
                : v;
}

/* p[0 .. min(n, 16)) = v's first lanes (nothing when n <= 0). */
static inline void store_upto16(float *p, __m512 v, int n)
{
    if (n > 0)
        _mm512_mask_storeu_ps(p, (__mmask16)(n >= 16 ? 0xffff : (1u << n) - 1), v);
}

/* v through the relu, as relu_forward's (NaN passes). */
static inline __m512 relu16(__m512 v)
{
    return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ),
                              _mm512_setzero_ps());
}

/* Row a of the group's outputs (+ b, through the relu) into output row a of each of its tile
 * rows: the 4 columns of each tile interleaved by permutes, stored up to the output's width. */
INLINE void store_output_row(const window_index *ix, const output_group *og, v8sf o[4][4],
                             int a, int per_row)
{
    const tiling *t = og->t;
    const conv_geom *g = t->g;
    __m512 c01 = pair_of(o[a][0], o[a][1], 0xffff), c23 = pair_of(o[a][2], o[a][3], 0xffff);
    __m512 v[2];
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        v[h] = _mm512_add_ps(_mm512_permutex2var_ps(c01, ix->pos[h], c23), _mm512_set1_ps(og->b));
        if (og->o->relu)
            v[h] = relu16(v[h]);
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        if (j >= group_tile_rows(per_row) || j >= og->nrows)
            break;
        int r = og->r + j, oy = 4 * (r % t->th) + a;
        if (oy >= g->oh)
            continue;
        float *y = og->o->y + (((size_t)(r / t->th) * g->f + og->f) * g->oh + oy) * g->ow;
        if (per_row == 8) {
            int x = 4 * og->q;
            store_upto16(y + x, v[0], g->ow - x);
            store_upto16(y + x + 16, v[1], g->ow - x - 16);
        } else {   /* tile row j's 4 per_row values, from position 4 per_row j */
            int at = 4 * per_row * j, width = 4 * per_row;
            store_upto16(y, lanes_from(v[at / 16], at % 16), g->ow < width ? g->ow : width);
        }
    }
}

/* The group's outputs + b pooled by the 2x2 windows inside each tile, as pooled_output (the
 * same comparisons, maxpool2_window's), the pooled rows (through the relu) and their argmax
 * stored in their places. */
INLINE void store_pooled_rows(const window_index *ix, const output_group *og, v8sf o[4][4],
                              int per_row)
{
    (void)ix;
    const tiling *t = og->t;
    const conv_geom *g = t->g;
    const pool_geom *p = og->o->pool;
    int ow = g->ow;
    /* lane l's corner, as winograd_pooled_init's, + the filter's plane: set by tile row in
     * registers (an array of them, stored one by one and loaded whole, stalled on the stores:
     * 17% of this function's time) */
    __m256i c = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        if (j >= group_tile_rows(per_row))
            break;
        int r = og->r + j, col = per_row == 8 ? og->q : 0;
        int32_t at = (int32_t)((size_t)og->f * g->oh * ow) + 4 * ((r % t->th) * ow + col);
        c = _mm256_mask_set1_epi32(c, (__mmask8)(((1u << per_row) - 1) << (j * per_row)), at);
    }
    c = _mm256_add_epi32(c, per_row == 8 ? _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)
                            : per_row == 4 ? _mm256_setr_epi32(0, 4, 8, 12, 0, 4, 8, 12)
                                           : _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4));
    v8sf bias = {og->b, og->b, og->b, og->b, og->b, og->b, og->b, og->b};
#pragma GCC unroll 4
    for (int a = 0; a < 4; a++)
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++)
            o[a][k] += bias;
    __m512i interleave = pooled_positions();
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++) {
        __m256 v[2];
        __m256i am[2];
#pragma GCC unroll 2
        for (int j = 0; j < 2; j++) {   /* window (i, j) of each tile */
            __m256 v00 = (__m256)o[2 * i][2 * j], v01 = (__m256)o[2 * i][2 * j + 1];
            __m256 v10 = (__m256)o[2 * i + 1][2 * j], v11 = (__m256)o[2 * i + 1][2 * j + 1];
            __m256i i00 = _mm256_add_epi32(c, _mm256_set1_epi32(2 * i * ow + 2 * j));
            __m256 best = v00;
            __m256i at = i00;
            __mmask8 gt = _mm256_cmp_ps_mask(v01, best, _CMP_GT_OQ);
            at = _mm256_mask_add_epi32(at, gt, i00, _mm256_set1_epi32(1));
            best = _mm256_mask_mov_ps(best, gt, v01);
            gt = _mm256_cmp_ps_mask(v10, best, _CMP_GT_OQ);
            at = _mm256_mask_add_epi32(at, gt, i00, _mm256_set1_epi32(ow));
            best = _mm256_mask_mov_ps(best, gt, v10);
            gt = _mm256_cmp_ps_mask(v11, best, _CMP_GT_OQ);
            at = _mm256_mask_add_epi32(at, gt, i00, _mm256_set1_epi32(ow + 1));
            v[j] = _mm256_mask_mov_ps(best, gt, v11);
            am[j] = at;
        }
        __m512 pv = _mm512_permutexvar_ps(
            interleave, _mm512_insertf32x8(_mm512_castps256_ps512(v[0]), v[1], 1));
        __m512 pa = _mm512_permutexvar_ps(
            interleave, _mm512_castsi512_ps(_mm512_inserti32x8(
                            _mm512_castsi256_si512(am[0]), am[1], 1)));
        if (og->o->relu)
            pv = relu16(pv);
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            if (j >= group_tile_rows(per_row) || j >= og->nrows)
                break;
            int r = og->r + j, py = 2 * (r % t->th) + i;
            if (py >= p->oh)
                continue;
            size_t row = (((size_t)(r / t->th) * p->c + og->f) * p->oh + py) * p->ow;
            int at = per_row == 8 ? 0 : 2 * per_row * j, x = per_row == 8 ? 2 * og->q : 0;
            int n = per_row == 8 || p->ow - x < 2 * per_row ? p->ow - x : 2 * per_row;
            store_upto16(og->o->y + row + x, lanes_from(pv, at), n);
            store_upto16((float *)og->o->argmax + row + x, lanes_from(pa, at), n);
        }
    }
}

#include "ops/winograd_f4_columns_impl.h"
