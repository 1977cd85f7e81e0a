/* Winograd F(4x4, 3x3)'s input and output transforms with the channels (filters) along the
 * vector, a pixel's 16 side by side, VL to a register (winograd_lanes_impl.h), so that a
 * tile's transform is arithmetic between whole registers, without the permutes that taking
 * tiles' windows out of NCHW rows needs (winograd_f4_avx512.c, winograd_f4_avx2.c). V and M are
 * laid out by tile, V[p][col][c] and M[p][col][f - f0] (winograd_tiling.h: by_tile), which the
 * GEMMs read in place, with no transposing copies. The input's rows are transposed into lanes
 * as they are read, 16 channels by 16 columns; the outputs (or pooled windows and argmaxes)
 * transposed back into a tile row's worth of rows, then stored whole; in channel lanes
 * (conv_geom's in_lanes, out_lanes) both are read and stored where they lie. The arithmetic is
 * the other builds' (BT6, AT6, the rows first, then the columns), so the bits are theirs, but
 * for half tiles (winograd_tiling.h: F(2) along a side whose last whole tile would pass the
 * edge by 2 or 3), which the builds by columns do not have. For channels and filters in
 * multiples of 16 (conv_winograd.c). Included by winograd_f4_lanes_avx512.c and
 * winograd_f4_lanes_avx2.c after their ISA's lanes header. */
#ifndef FRUGAL_WINOGRAD_F4_LANES_IMPL_H
#define FRUGAL_WINOGRAD_F4_LANES_IMPL_H

#include "ops/winograd_lanes_impl.h"

#include <string.h>

/* Tile row r's 6 input rows from src in lanes, in[0 .. 6): the two it shares with tile row
 * r - 1 of the same sample (done just before: prev) kept. */
static void lanes_window_rows(const tiling *t, lanes_src src, int r, int prev, float *in[6])
{
    int keep = prev == r - 1 && r % t->th != 0 ? 2 : 0;
    if (keep) {   /* rows 4 and 5 become 0 and 1 */
        float *was0 = in[0], *was1 = in[1];
        in[0] = in[4], in[1] = in[5], in[4] = in[2], in[5] = in[3];
        in[2] = was0, in[3] = was1;
    }
    int y0 = 4 * (r % t->th) - t->g->pad;
    for (int i = keep; i < 6; i++)
        lanes_row(t, src, y0 + i, in[i]);
}

/* The input rows that tile rows [r, r1) of r's sample read from channels [c0, c0 + 16), as
 * floats copied into stage, where they fit (WINOGRAD_LANES_STAGE), else x in place. Read in
 * place, 16 planes' short rows at a time, the transposes waited on 16 cache misses at once
 * wherever x had left the cache; copied in order, the planes stream in (vgg-small's
 * convolution tasks 3.6% shorter in training, docs/kernels.md). Copied planes 4 KB apart
 * (32 x 32) would still share a cache set: the stage's are skewed (the 32 -> 32 layer's
 * forward 1.5-3% shorter, ./build.sh bench ab). */
static lanes_src window_source(const tiling *t, conv_input x, int c0, int r, int r1,
                               float *stage)
{
    const conv_geom *g = t->g;
    lanes_src src = lanes_src_of(g, x, r / t->th, c0);
    if (!WINOGRAD_LANES_STAGE(g))
        return src;
    int first = r / t->th * t->th, last = first + t->th < r1 ? first + t->th : r1;   /* r's sample's */
    int y0 = 4 * (r - first) - g->pad, y1 = 4 * (last - first) + 2 - g->pad;
    y0 = y0 < 0 ? 0 : y0;
    y1 = y1 > g->h ? g->h : y1;
    size_t from = (size_t)y0 * g->w, count = y1 > y0 ? (size_t)(y1 - y0) * g->w : 0;
    size_t skewed = plane_of(src.plane);
    if (src.f)
        copy_planes(stage, skewed, src.f, src.plane, from, count);
    for (int k = 0; k < LANES && !src.f; k++)   /* bytes, converted */
        src_floats(src, k, from, count, stage + (size_t)k * skewed + from);
    return (lanes_src){stage, NULL, 0, skewed, 0};
}

/* B^T d down columns [from, to) of the 6 rows at in (the padded row's column from at in[i]),
 * into the same columns of s. */
static inline void row_half(const float *const in[6], float *const s[6], int from, int to)
{
    for (size_t at = 0; at < (size_t)LANES * (to - from); at += VL) {
        vl d[6], o[6];
#pragma GCC unroll 16
        for (int i = 0; i < 6; i++)
            d[i] = loadv(in[i] + at);
        BT6(d, o);
#pragma GCC unroll 16
        for (int i = 0; i < 6; i++)
            storev(s[i] + (size_t)LANES * from + at, o[i]);
    }
}

/* row_half for a half tile row (winograd_tiling.h: half_bottom): F(2)'s B^T down its 4 rows,
 * into s[0, 1, 2, 5]. */
static inline void row_half_bottom(const float *const in[6], float *const s[6], int from, int to)
{
    for (size_t at = 0; at < (size_t)LANES * (to - from); at += VL) {
        vl d[4], o[6];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++)
            d[i] = loadv(in[i] + at);
        BT2H(d, o);
        size_t to_at = (size_t)LANES * from + at;
        storev(s[0] + to_at, o[0]), storev(s[1] + to_at, o[1]);
        storev(s[2] + to_at, o[2]), storev(s[5] + to_at, o[5]);
    }
}

/* (B^T d) B across tile q's columns of s (from column 4q), its points into v (plane apart):
 * 6 columns, or 4 for a half tile (BT2H); s's 6 rows, or a half row's 4 slots (bottom). */
INLINE void tile_columns(float *const s[6], int q, float *v, size_t plane, int bottom, int half)
{
#pragma GCC unroll 2
    for (int h = 0; h < LANES; h += VL)
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            if (HALF_SKIPS(bottom, i))
                continue;
            vl d[6], o[6];
#pragma GCC unroll 6
            for (int k = 0; k < 6; k++)
                if (!half || k < 4)
                    d[k] = loadv(s[i] + (size_t)LANES * (4 * q + k) + h);
            if (half)
                BT2H(d, o);
            else
                BT6(d, o);
#pragma GCC unroll 6
            for (int k = 0; k < 6; k++)
                if (!HALF_SKIPS(half, k))
                    storev(v + (6 * i + k) * plane + h, o[k]);
        }
}

/* (B^T d) B: each tile's columns of tile row r's s, its points into V (channels c0 on; plane
 * apart; tiles where winograd_row_cols puts them). */
static inline void column_half(const tiling *t, int r, float *const s[6], float *V, size_t plane)
{
    int first, last, bottom = winograd_row_cols(t, r, &first, &last);
    int whole = t->tw - t->half_right;
    size_t c = (size_t)t->g->c;
    for (int q = 0; q < whole; q++)
        if (bottom)
            tile_columns(s, q, V + (size_t)(first + q) * c, plane, 1, 0);
        else
            tile_columns(s, q, V + (size_t)(first + q) * c, plane, 0, 0);
    if (t->half_right && bottom)
        tile_columns(s, whole, V + (size_t)last * c, plane, 1, 1);
    else if (t->half_right)
        tile_columns(s, whole, V + (size_t)last * c, plane, 0, 1);
}

/* The row half of tile row r: F(4)'s, or F(2)'s for a half row. */
static inline void rows_of(const tiling *t, int r, const float *const in[6], float *const s[6],
                           int from, int to)
{
    if (winograd_half_row(t, r))
        row_half_bottom(in, s, from, to);
    else
        row_half(in, s, from, to);
}

/* Tile row r's 6 input rows of channels [c0, c0 + 16) in channel lanes, where they lie in x
 * (the padded row's column pad, the input's first), or zeros outside the input. */
static void window_rows_in_place(const tiling *t, conv_input x, int c0, int r,
                                 const float *zeros, const float *in[6])
{
    const conv_geom *g = t->g;
    const float *block = lanes_src_of(g, x, r / t->th, c0).f;
    int y0 = 4 * (r % t->th) - g->pad;
    for (int i = 0; i < 6; i++)
        in[i] = y0 + i >= 0 && y0 + i < g->h ? block + (size_t)LANES * (y0 + i) * g->w : zeros;
}

/* winograd_f4_lanes_input from an input in channel lanes, read where it lies (the padding
 * columns left zero in s). Its rows were prefetched while the block before ran its GEMMs
 * (winograd_ahead.h; that took over from prefetching the next tile row's rows here, which
 * then measured the same: docs/kernels.md). (By tile row, each tile's channels written
 * together in whole lines, it ran 1-2% slower: ./build.sh bench ab.) */
static void input_in_place(const tiling *t, conv_input x, float *V, float *rows)
{
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)g->c * t->cols), line = WINOGRAD_LANES_LINE(t);
    int lo = g->pad, hi = g->pad + g->w < t->row_len ? g->pad + g->w : t->row_len;
    float *zeros = rows, *s[6];   /* zeros: rows outside the input */
    memset(zeros, 0, sizeof(float) * line);
    for (int i = 0; i < 6; i++) {
        s[i] = rows + (6 + i) * line;
        memset(s[i], 0, sizeof(float) * LANES * (size_t)lo);
        memset(s[i] + (size_t)LANES * hi, 0, sizeof(float) * LANES * (size_t)(t->row_len - hi));
    }
    const float *in[6];
    for (int c0 = 0; c0 < g->c; c0 += LANES)
        for (int r = t->r0; r < t->r1; r++) {
            window_rows_in_place(t, x, c0, r, zeros, in);
            rows_of(t, r, in, s, lo, hi);
            column_half(t, r, s, V + c0, plane);
        }
}

/* V[p][col][c] = (B^T d B)[p] for every tile of the block and channel: per 16 channels and
 * tile row, its 6 input rows in lanes, B^T down each column (the row half), then B across
 * each tile's 6 columns. rows: 12 lines (WINOGRAD_LANES_LINE). */
void LANES_ISA(winograd_f4_lanes_input)(const tiling *t, conv_input x, float *V, float *rows)
{
    const conv_geom *g = t->g;
    if (g->in_lanes) {
        input_in_place(t, x, V, rows);
        return;
    }
    size_t plane = plane_of((size_t)g->c * t->cols), line = WINOGRAD_LANES_LINE(t);
    float *buf[6], *s[6];
    const float *in[6];
    for (int i = 0; i < 6; i++)
        buf[i] = rows + i * line, s[i] = rows + (6 + i) * line;
    float *stage = rows + WINOGRAD_LANES_LINES * line;
    lanes_src src;
    for (int c0 = 0; c0 < g->c; c0 += LANES)
        for (int r = t->r0; r < t->r1; r++) {
            if (r == t->r0 || r % t->th == 0)   /* a sample's rows */
                src = window_source(t, x, c0, r, t->r1, stage);
            lanes_window_rows(t, src, r, r > t->r0 ? r - 1 : -1, buf);
            for (int i = 0; i < 6; i++)
                in[i] = buf[i];
            rows_of(t, r, in, s, 0, t->row_len);
            column_half(t, r, s, V + c0, plane);
        }
}

/* A tile's 4x4 outputs A^T m A of VL filters, from its 36 points at m, plane apart: across
 * the columns first, then down (TILE_OUTPUTS' order). */
static inline void tile_outputs(const float *m, size_t plane, vl out[4][4])
{
    vl s[6][4];
#pragma GCC unroll 16
    for (int i = 0; i < 6; i++) {
        vl in[6];
#pragma GCC unroll 16
        for (int k = 0; k < 6; k++, m += plane)   /* a pointer stepped: 36 offsets spilled */
            in[k] = loadv(m);
        AT6(in, s[i]);
    }
#pragma GCC unroll 16
    for (int k = 0; k < 4; k++) {
        vl in[6] = {s[0][k], s[1][k], s[2][k], s[3][k], s[4][k], s[5][k]}, c[4];
        AT6(in, c);
#pragma GCC unroll 16
        for (int a = 0; a < 4; a++)
            out[a][k] = c[a];
    }
}

/* tile_outputs for a tile with a half side: the half row's 4 slots (bottom) and F(2)'s A^T
 * down the columns, or the half tile's 4 slots (half) and F(2)'s A^T along the rows; the
 * outputs past F(2)'s 2 zero (past the output's edge, never stored). */
INLINE void half_tile_outputs(const float *m, size_t plane, vl out[4][4], int bottom,
                              int half)
{
    vl s[6][4];
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++) {
        if (HALF_SKIPS(bottom, i))
            continue;
        vl in[6];
        load_point_row(m, plane, i, half, in);
        if (half) {
            AT2H(in, s[i]);
            s[i][2] = s[i][3] = (vl){0};
        } else {
            AT6(in, s[i]);
        }
    }
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        vl in[6], c[4];
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++)
            if (!HALF_SKIPS(bottom, i))
                in[i] = s[i][k];
        if (bottom) {
            AT2H(in, c);
            c[2] = c[3] = (vl){0};
        } else {
            AT6(in, c);
        }
#pragma GCC unroll 4
        for (int a = 0; a < 4; a++)
            out[a][k] = c[a];
    }
}

/* Tile q of a tile row (a half row: bottom) from its points at m: tile_outputs, or for a
 * tile with a half side, half_tile_outputs. */
static inline void outputs_of(const tiling *t, int q, int bottom, const float *m, size_t plane,
                              vl out[4][4])
{
    int half = t->half_right && q == t->tw - 1;
    if (!bottom && !half)
        tile_outputs(m, plane, out);
    else if (bottom && half)
        half_tile_outputs(m, plane, out, 1, 1);
    else if (bottom)
        half_tile_outputs(m, plane, out, 1, 0);
    else
        half_tile_outputs(m, plane, out, 0, 1);
}

/* n floats from in to out. */
static inline void copy_row(float *out, const float *in, int n)
{
    memcpy(out, in, sizeof(float) * (size_t)n);
}

/* The tile's outputs (the bias added, through the relu if asked) of VL filters, transposed
 * back to a filter a register, into stage at those filters' rows: 16 filters' 4 rows of the
 * tile row, 4 tw columns each, filter j's from 4 j width. Staged so that the output's rows are
 * then written whole (store_staged): stored 4 values at a time straight into 16 planes 4 KB
 * apart (32 x 32 outputs), whose lines share a cache set, the stores took most of the output
 * transform's time. */
INLINE void stage_tile(const winograd_out *o, int q, int width, vl out[4][4], float *stage)
{
    if (o->relu)
#pragma GCC unroll 4
        for (int a = 0; a < 4; a++)
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++)
                out[a][k] = relu_lanes(out[a][k]);
    stage_tile_vl(out, stage + 4 * q, width);
}

/* The staged rows of filters [f, f + 16) of tile row tr of sample s into o->y: rows past the
 * output's last and columns past its width left out. */
static void store_staged(const tiling *t, const winograd_out *o, int s, int f, int tr,
                         const float *stage)
{
    const conv_geom *g = t->g;
    int oy = 4 * tr, rows = g->oh - oy < 4 ? g->oh - oy : 4, width = 4 * t->tw;
    for (int j = 0; j < LANES; j++)
        for (int a = 0; a < rows; a++) {
            const float *in = stage + (size_t)(4 * j + a) * width;
            float *y = o->y + (((size_t)s * g->f + (size_t)(f + j)) * g->oh + oy + a) * g->ow;
            copy_row(y, in, g->ow);
        }
}

/* The tile's 2x2 windows of VL filters pooled as maxpool2_window does it (the first of equal
 * values kept, through the relu if asked), the argmax numbered within each filter's output
 * plane, from plane0 (lanes: the filters' planes' first) and the tile's top left, corner:
 * w[i][j] and a[i][j] for window row i, column j. */
INLINE void pool_tile(const winograd_out *o, int ow, vli plane0, int32_t corner, vl out[4][4],
                      vl w[2][2], vli a[2][2])
{
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++)
#pragma GCC unroll 2
        for (int j = 0; j < 2; j++) {
            vli i00 = plane0 + (corner + 2 * i * ow + 2 * j);
            w[i][j] = pool2_vl(out[2 * i][2 * j], out[2 * i][2 * j + 1], out[2 * i + 1][2 * j],
                               out[2 * i + 1][2 * j + 1], i00, ow, o->relu, &a[i][j]);
        }
}

/* The staged pooled rows of filters [f, f + 16) of tile row tr of sample s into o->y and
 * o->argmax (a filter's 2 pooled rows of 2 tw windows, values then argmaxes: stage_pooled_vl):
 * rows past the pooled output's last and windows past its width left out. */
static void store_pooled(const tiling *t, const winograd_out *o, int s, int f, int tr,
                         const float *stage)
{
    const pool_geom *p = o->pool;
    int row = 2 * t->tw;
    for (int j = 0; j < LANES; j++)
        for (int i = 0; i < 2 && 2 * tr + i < p->oh; i++) {
            size_t at = (((size_t)s * p->c + (size_t)(f + j)) * p->oh + 2 * tr + i) * p->ow;
            const float *in = stage + (size_t)j * 4 * row + (size_t)i * row;
            copy_row(o->y + at, in, p->ow);
            copy_row((float *)o->argmax + at, in + 2 * row, p->ow);
        }
}

/* The tile's outputs (through the relu if asked) of filters [f + h, f + h + VL) of sample s
 * into y in channel lanes, where they lie: rows and columns past the output's edge left out. */
INLINE void store_tile_lanes(const tiling *t, const winograd_out *o, int s, int f, int h,
                             int tr, int q, vl out[4][4])
{
    const conv_geom *g = t->g;
    int oy = 4 * tr, ox = 4 * q, rows = g->oh - oy, cols = g->ow - ox;
    float *y = o->y + ((size_t)s * g->f + (size_t)f) * g->oh * g->ow +
               ((size_t)oy * g->ow + (size_t)ox) * LANES + h;
#pragma GCC unroll 4
    for (int a = 0; a < 4; a++)
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++)
            if (a < rows && k < cols)
                storev(y + ((size_t)a * g->ow + (size_t)k) * LANES,
                       o->relu ? relu_lanes(out[a][k]) : out[a][k]);
}

/* The tile's pooled windows and their argmaxes likewise, into o->y and o->argmax. */
INLINE void store_pooled_lanes(const winograd_out *o, int s, int f, int h, int tr, int q,
                               vl w[2][2], vli a[2][2])
{
    const pool_geom *p = o->pool;
    size_t block = ((size_t)s * p->c + (size_t)f) * p->oh * p->ow + (size_t)h;
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++)
#pragma GCC unroll 2
        for (int j = 0; j < 2; j++) {
            if (2 * tr + i >= p->oh || 2 * q + j >= p->ow)
                continue;
            size_t at = block + ((size_t)(2 * tr + i) * p->ow + (size_t)(2 * q + j)) * LANES;
            storev(o->y + at, w[i][j]);
            storevi(o->argmax + at, a[i][j]);
        }
}

/* Tile q of tile row r (of sample s, tr in it; a half row: bottom), filters [f + h, f + h +
 * VL), from its points at m: the outputs, plus the bias b, pooled or not (plane0: the
 * filters' first outputs in the argmax numbering), staged in rows or stored where they lie. */
INLINE void output_tile(const tiling *t, const winograd_out *o, int s, int tr, int q,
                        int bottom, int f, int h, const float *m, size_t plane, vl b, vli plane0,
                        float *rows)
{
    const conv_geom *g = t->g;
    vl out[4][4];
    outputs_of(t, q, bottom, m, plane, out);
#pragma GCC unroll 16
    for (int a = 0; a < 4; a++)
#pragma GCC unroll 16
        for (int k = 0; k < 4; k++)
            out[a][k] += b;
    if (o->pool) {
        vl w[2][2];
        vli a[2][2];
        pool_tile(o, g->ow, plane0, 4 * tr * g->ow + 4 * q, out, w, a);
        if (g->out_lanes)
            store_pooled_lanes(o, s, f, h, tr, q, w, a);
        else
            stage_pooled_vl(w, a, rows + (size_t)h * 8 * t->tw + 2 * q, 2 * t->tw);
    } else if (g->out_lanes) {
        store_tile_lanes(t, o, s, f, h, tr, q, out);
    } else {
        stage_tile(o, q, 4 * t->tw, out, rows + (size_t)h * 16 * t->tw);
    }
}

/* The outputs A^T m A + bias for filters [f0, f1) from M[p][col][f - f0] into o, pooled or
 * not, through the relu or not: as output_transform, VL filters of a tile at a time, a tile
 * row's staged in rows (stage_tile, stage_pooled_vl), then stored whole; in channel lanes
 * (out_lanes), each tile's stored where it lies. */
void LANES_ISA(winograd_f4_lanes_output)(const tiling *t, const float *M, const float *bias,
                                         const winograd_out *o, int f0, int f1, float *rows)
{
    const conv_geom *g = t->g;
    int nf = f1 - f0;
    size_t plane = plane_of((size_t)nf * t->cols);
    for (int r = t->r0; r < t->r1; r++) {
        int first, last, bottom = winograd_row_cols(t, r, &first, &last);
        int s = r / t->th, tr = r % t->th;
        for (int f = 0; f < nf; f += LANES) {
            vl b[LANES / VL];
            vli plane0[LANES / VL];
            for (int h = 0; h < LANES; h += VL) {
                b[h / VL] = bias ? loadv(bias + f0 + f + h) : (vl){0};
                plane0[h / VL] = first_outputs_vl(f0 + f, h, g->oh * g->ow);
            }
            for (int q = 0; q < t->tw; q++) {
                const float *m = M + (size_t)(q == t->tw - 1 ? last : first + q) * nf + f;
#pragma GCC unroll 2
                for (int h = 0; h < LANES; h += VL)
                    output_tile(t, o, s, tr, q, bottom, f0 + f, h, m + h, plane, b[h / VL],
                                plane0[h / VL], rows);
            }
            if (g->out_lanes)
                continue;
            if (o->pool)
                store_pooled(t, o, s, f0 + f, tr, rows);
            else
                store_staged(t, o, s, f0 + f, tr, rows);
        }
    }
}

#endif
