/* Winograd F(4x4, 3x3)'s output gradient transform and input adjoint with the filters
 * (channels) along the vector, a pixel's 16 side by side, VL to a register, as the forward's
 * transforms (winograd_f4_lanes_impl.h): D and Z laid out by tile, D[p][col][f - f0] and
 * Z[p][col][c], which the GEMMs read in place. The output gradient's rows (or the pooled
 * gradient's and its argmax's) are transposed into lanes as they are read; the input
 * gradient's rows are summed in lanes, then transposed back and stored whole. In channel lanes
 * (conv_geom's out_lanes, in_lanes) the gradient's rows are read, and the input gradient's
 * stored (through the relu before, if any), as they are. The arithmetic and its order are the
 * other builds' (A6, B6, the windows' overlaps, the bias gradient's tile_sum), so the bits are
 * theirs, but for half tiles (winograd_tiling.h), which the builds by columns do not have.
 * Included by winograd_f4_lanes_backward_avx512.c and winograd_f4_lanes_backward_avx2.c after
 * their ISA's lanes header. */
#ifndef FRUGAL_WINOGRAD_F4_LANES_BACKWARD_IMPL_H
#define FRUGAL_WINOGRAD_F4_LANES_BACKWARD_IMPL_H

#include "ops/winograd_lanes_impl.h"

#include <string.h>

static int up16(int n) { return (n + LANES - 1) / LANES * LANES; }

/* Row y (of h rows, w wide) of the 16 planes from plane f of sample s, planes of a tensor of
 * nplanes per sample, plane floats apart (h x w for NCHW, more in the stage), into lanes:
 * line[16 x + j], x < width (a multiple of 16), zero past w and for y >= h; values through
 * the relu's output relu (else NULL). Row y + ROWS_AHEAD prefetched. */
static void planes_to_lanes(const float *t, const float *relu, int nplanes, size_t plane, int h,
                            int w, int s, int f, int y, int width, float *line)
{
    if (y >= h) {
        memset(line, 0, sizeof(float) * LANES * (size_t)width);
        return;
    }
    size_t at = ((size_t)s * nplanes + (size_t)f) * plane + (size_t)y * w;
    const float *rows = t + at, *ry = relu ? relu + at : NULL;
    for (int x = 0; x < width; x += LANES)
        rows_to_lanes(rows, ry, plane, LANES, x, w, line);
    if (y + ROWS_AHEAD >= h)
        return;
    size_t ahead = (size_t)ROWS_AHEAD * w;
    for (int x = 0; x < w; x += LANES) {
        prefetch_planes((const char *)(rows + ahead + x), sizeof(float) * plane);
        if (relu)
            prefetch_planes((const char *)(ry + ahead + x), sizeof(float) * plane);
    }
}

/* The same row of a tensor in channel lanes (out_lanes): where it lies when its first need
 * pixels are in it and no relu masks them; else copied into line (through the relu, zeros
 * from w to need); zeros for y >= h. */
static const float *lanes_gradient_row(const float *t, const float *relu, int nplanes, int h,
                                       int w, int s, int f, int y, int need, float *line,
                                       const float *zeros)
{
    if (y >= h)
        return zeros;
    size_t at = ((size_t)s * nplanes + (size_t)f) * h * w + (size_t)LANES * y * w;
    if (!relu && need <= w)
        return t + at;
    lanes_copy(t + at, relu ? relu + at : NULL, w < need ? w : need, line);
    if (need > w)
        memset(line + (size_t)LANES * w, 0, sizeof(float) * LANES * (size_t)(need - w));
    return line;
}

/* A tile's 4x4 block of output gradient of VL filters from lane h: e[a][k] at column 4q + k
 * of g[a] (the tile row's 4 gradient rows in lanes); pooled, spread from the windows'
 * gradients in v[i] and argmaxes in am[i] (the tile row's 2 pooled rows in lanes) to where the
 * argmax is, the positions numbered from plane0 (a lane's filter's plane) and the tile's top
 * left, corner. */
INLINE void gradient_block(const float *const g[4], const float *const v[2],
                           const float *const am[2], int pooled, int q, int h, vli plane0,
                           int32_t corner, int ow, vl e[4][4])
{
    if (!pooled) {
#pragma GCC unroll 4
        for (int a = 0; a < 4; a++)
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++)
                e[a][k] = loadv(g[a] + (size_t)LANES * (4 * q + k) + h);
        return;
    }
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++)
#pragma GCC unroll 2
        for (int j = 0; j < 2; j++) {
            size_t at = (size_t)LANES * (2 * q + j) + (size_t)h;
            vli d = (vli)loadv(v[i] + at), a = (vli)loadv(am[i] + at);
            vli i00 = plane0 + (corner + 2 * i * ow + 2 * j);
            const int step[4] = {0, 1, ow, ow + 1};
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++)
                e[2 * i + k / 2][2 * j + k % 2] = (vl)(d & (a == i00 + step[k]));
        }
}

/* The transform of a tile's block e, A e A^T, rows first, into D at d (plane apart), and the
 * sum of the block's gradients (row 1 of A e, as gradient_transform sums them). */
INLINE vl gradient_tile(vl e[4][4], float *d, size_t plane)
{
    vl A[6][4];
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {   /* A e: rows */
        vl in[4] = {e[0][k], e[1][k], e[2][k], e[3][k]}, o[6];
        A6(in, o);
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++)
            A[i][k] = o[i];
    }
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++) {   /* (A e) A^T: columns */
        vl o[6];
        A6(A[i], o);
#pragma GCC unroll 6
        for (int k = 0; k < 6; k++, d += plane)
            storev(d, o[k]);
    }
    return (A[1][0] + A[1][1]) + (A[1][2] + A[1][3]);
}

/* gradient_tile for a tile with a half side (winograd_tiling.h): F(2)'s A down the columns of
 * a half row (bottom), into 4 of the 6 rows of points, or along the rows of a half tile (half),
 * into 4 of each row's 6. The sum for the bias is gradient_tile's (the outputs past F(2)'s 2
 * are past the output's edge: zero). */
INLINE vl half_gradient_tile(vl e[4][4], float *d, size_t plane, int bottom, int half)
{
    vl A[6][4];
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        vl in[4] = {e[0][k], e[1][k], e[2][k], e[3][k]}, o[6];
        if (bottom)
            A2H(in, o);
        else
            A6(in, o);
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++)
            if (!HALF_SKIPS(bottom, i))
                A[i][k] = o[i];
    }
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++) {
        if (HALF_SKIPS(bottom, i))
            continue;
        vl o[6];
        if (half)
            A2H(A[i], o);
        else
            A6(A[i], o);
#pragma GCC unroll 6
        for (int k = 0; k < 6; k++)
            if (!HALF_SKIPS(half, k))
                storev(d + (6 * i + k) * plane, o[k]);
    }
    return (A[1][0] + A[1][1]) + (A[1][2] + A[1][3]);
}

/* Tile q of a tile row (a half row: bottom) into D at d: gradient_tile, or for a tile with a
 * half side, half_gradient_tile. */
static inline vl gradient_of(const tiling *t, int q, int bottom, vl e[4][4], float *d,
                              size_t plane)
{
    int half = t->half_right && q == t->tw - 1;
    if (!bottom && !half)
        return gradient_tile(e, d, plane);
    if (bottom && half)
        return half_gradient_tile(e, d, plane, 1, 1);
    if (bottom)
        return half_gradient_tile(e, d, plane, 1, 0);
    return half_gradient_tile(e, d, plane, 0, 1);
}

/* sums[col % 8] summed as tile_sum sums n tiles: the lanes of its last group past the tiles
 * get a zero added too. */
static vl tile_sums(vl sums[8], int n)
{
    for (int j = n % 8; j < 8; j++)
        sums[j] += (vl){0};
    return ((sums[0] + sums[1]) + (sums[2] + sums[3])) + ((sums[4] + sums[5]) + (sums[6] + sums[7]));
}

/* Rows [y0, y1) of the planes of filters [f, f + 16) of sample s (of nplanes, h x w) of each
 * of dy's arrays copied into stage, one after another, planes skewed (plane_of), read there
 * as sample 0's filters [0, 16): as window_source does for the input
 * (winograd_f4_lanes_avx512.c), from planes of fewer than 4096 values; else dy itself
 * (wide-28's convolution tasks 3.7% shorter). *plane: the planes' stride where they are. */
static winograd_grad gradient_source(const tiling *t, const winograd_grad *dy, int nplanes,
                                     int h, int w, int s, int f, int y0, int y1, float *stage,
                                     int *staged, size_t *plane)
{
    *staged = WINOGRAD_LANES_STAGE(t->g) != 0;
    *plane = (size_t)h * w;
    if (!*staged)
        return *dy;
    winograd_grad out = *dy;
    const float **arrays[3] = {&out.dy, &out.relu_y, (const float **)&out.argmax};
    y1 = y1 < h ? y1 : h;
    size_t from = (size_t)y0 * w, skewed = plane_of(*plane);
    size_t count = y1 > y0 ? (size_t)(y1 - y0) * w : 0;
    for (int a = 0; a < 3; a++) {
        const float *in = *arrays[a];
        if (!in)
            continue;
        float *to = stage + (size_t)a * LANES * skewed;
        copy_planes(to, skewed, in + ((size_t)s * nplanes + f) * *plane, *plane, from, count);
        *arrays[a] = to;
    }
    *plane = skewed;
    return out;
}

/* D[p][col][f - f0] = (A e A^T)[p] for the block's tiles and filters [f0, f1), e a tile's 4x4
 * output gradients (zero past the output's edge); with dbias (else NULL), each filter's
 * gradients summed over the block's tiles in tile_sum's order added to dbias[f - f0]. rows:
 * the tile row's 4 gradient rows in lanes, or its 2 pooled rows and their argmaxes. */
void LANES_ISA(winograd_f4_lanes_gradient)(const tiling *t, const winograd_grad *dy, int f0, int f1,
                                float *D, float *dbias, float *rows)
{
    const conv_geom *g = t->g;
    const pool_geom *p = dy->pool;
    int nf = f1 - f0, width = up16(p ? 2 * t->tw : 4 * t->tw);   /* outputs or windows */
    size_t plane = plane_of((size_t)nf * t->cols), line = (size_t)LANES * width;
    const float *gl[4] = {rows, rows + line, rows + 2 * line, rows + 3 * line};
    const float *v[2] = {gl[0], gl[1]}, *am[2] = {gl[2], gl[3]};
    float *stage = rows + WINOGRAD_LANES_LINES * WINOGRAD_LANES_LINE(t), *zeros = rows + 4 * line;
    if (g->out_lanes)
        memset(zeros, 0, sizeof(float) * line);
    for (int f = f0; f < f1; f += LANES) {
        vli plane0[LANES / VL];
        vl sums[LANES / VL][8] = {{{0}}};
        for (int h = 0; h < LANES; h += VL)
            plane0[h / VL] = first_outputs_vl(f, h, g->oh * g->ow);
        float *d = D + (f - f0);
        winograd_grad src = *dy;
        int staged = 0, nplanes = p ? p->c : g->f, h = p ? p->oh : g->oh, w = p ? p->ow : g->ow;
        size_t stride = 0;   /* between the planes read, where they are */
        for (int r = t->r0, col = 0; r < t->r1; r++) {
            int s = r / t->th, tr = r % t->th, per = p ? 2 : 4;
            if (g->out_lanes) {   /* read where they lie, or copied into the row buffers */
                int need = p ? 2 * t->tw : 4 * t->tw;
                for (int i = 0; i < per; i++) {
                    const float *grad = dy->dy, *argmax = (const float *)dy->argmax;
                    float *buf = rows + i * line;
                    *(p ? &v[i] : &gl[i]) = lanes_gradient_row(grad, dy->relu_y, nplanes, h, w, s,
                                                               f, per * tr + i, need, buf, zeros);
                    if (p)
                        am[i] = lanes_gradient_row(argmax, NULL, nplanes, h, w, s, f, per * tr + i,
                                                   need, buf + 2 * line, zeros);
                }
            } else {
                if (r == t->r0 || tr == 0) {   /* a sample's rows, of the block's tile rows */
                    int last = s * t->th + t->th < t->r1 ? t->th : t->r1 - s * t->th;
                    src = gradient_source(t, dy, nplanes, h, w, s, f, per * tr, per * last, stage,
                                          &staged, &stride);
                }
                int ss = staged ? 0 : s, ff = staged ? 0 : f, np = staged ? LANES : nplanes;
                for (int i = 0; i < per; i++) {   /* past the pooled rows: zeros, any argmax */
                    planes_to_lanes(src.dy, src.relu_y, np, stride, h, w, ss, ff, per * tr + i,
                                    width, rows + i * line);
                    if (p)
                        planes_to_lanes((const float *)src.argmax, NULL, np, stride, h, w, ss, ff,
                                        2 * tr + i, width, rows + (2 + i) * line);
                }
            }
            int first, last, bottom = winograd_row_cols(t, r, &first, &last);
            for (int q = 0; q < t->tw; q++, col++) {   /* col: the bias sums' order */
                size_t at = (size_t)(q == t->tw - 1 ? last : first + q) * nf;
#pragma GCC unroll 2
                for (int h = 0; h < LANES; h += VL) {
                    vl e[4][4];
                    gradient_block(gl, v, am, p != NULL, q, h, plane0[h / VL],
                                   4 * tr * g->ow + 4 * q, g->ow, e);
                    sums[h / VL][col % 8] += gradient_of(t, q, bottom, e, d + at + h, plane);
                }
            }
        }
        for (int h = 0; dbias && h < LANES; h += VL) {
            float *db = dbias + (f - f0) + h;
            storev(db, loadv(db) + tile_sums(sums[h / VL], t->tiles));
        }
    }
}

/* Tile q's 6x6 window B z B^T of 16 channels, from its 36 points at z (plane apart), in a
 * loop over the channels as input_adjoint's over tiles (WINDOW_ADJOINT), joined into the tile
 * row's 6 lines in lanes: columns 0 and 1 added to the tile before's 4 and 5 (to a zero for
 * the first tile), 4 and 5 stored for the next tile to add to. */
INLINE void adjoint_tile(const float *z, size_t plane, int q, float *const lines[6])
{
    float win[6][6][LANES];
#pragma omp simd
    for (int j = 0; j < LANES; j++)
        WINDOW_ADJOINT(z, plane, j, win);
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++)
#pragma GCC unroll 6
        for (int k = 0; k < 6; k++)
#pragma GCC unroll 2
            for (int h = 0; h < LANES; h += VL) {
                float *at = lines[i] + (size_t)LANES * (4 * q + k) + h;
                vl w = loadv(win[i][k] + h);
                if (k < 2)
                    storev(at, w + (q ? loadv(at) : (vl){0}));
                else
                    storev(at, w);
            }
}

/* adjoint_tile for a tile with a half side, VL channels from lane h: F(2)'s B^T's adjoint
 * (B2H) along the rows of a half tile (half: a window 4 columns wide) or down the columns of a
 * half row (bottom: 4 rows), on vectors (the builds by columns have no half tiles: no bits to
 * match but AVX2's and AVX-512's by lanes, fenced alike: FUSE_FENCE). The window's rows and
 * columns past F(2)'s 4 are past the input's edge, never stored. */
INLINE void half_adjoint_vl(const float *z, size_t plane, int q, float *const lines[6], int h,
                            int bottom, int half)
{
    vl hz[6][6];   /* hz[i][k]: row i of points, column k of the window */
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++) {
        if (HALF_SKIPS(bottom, i))
            continue;
        vl in[6];
        load_point_row(z, plane, i, half, in);
        if (half)
            B2H(in, hz[i]);
        else
            B6(in, hz[i]);
#pragma GCC unroll 6
        for (int k = 0; k < 6; k++)
            FUSE_FENCE(hz[i][k]);
    }
#pragma GCC unroll 6
    for (int k = 0; k < 6; k++) {
        if (half && k >= 4)
            break;
        vl in[6], w[6];
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++)
            if (!HALF_SKIPS(bottom, i))
                in[i] = hz[i][k];
        if (bottom)
            B2H(in, w);
        else
            B6(in, w);
#pragma GCC unroll 6
        for (int a = 0; a < 6; a++) {
            if (bottom && a >= 4)
                break;
            float *at = lines[a] + (size_t)LANES * (4 * q + k) + h;
            FUSE_FENCE(w[a]);
            storev(at, k < 2 ? w[a] + (q ? loadv(at) : (vl){0}) : w[a]);
        }
    }
}

/* half_adjoint_vl on all 16 channels. */
INLINE void half_adjoint_tile(const float *z, size_t plane, int q, float *const lines[6],
                              int bottom, int half)
{
#pragma GCC unroll 2
    for (int h = 0; h < LANES; h += VL)
        half_adjoint_vl(z + h, plane, q, lines, h, bottom, half);
}

/* Tile q of a tile row (a half row: bottom) from its points at z into lines: adjoint_tile, or
 * for a tile with a half side, half_adjoint_tile. */
static inline void adjoint_of(const tiling *t, int q, int bottom, const float *z, size_t plane,
                              float *const lines[6])
{
    int half = t->half_right && q == t->tw - 1;
    if (!bottom && !half)
        adjoint_tile(z, plane, q, lines);
    else if (bottom && half)
        half_adjoint_tile(z, plane, q, lines, 1, 1);
    else if (bottom)
        half_adjoint_tile(z, plane, q, lines, 1, 0);
    else
        half_adjoint_tile(z, plane, q, lines, 0, 1);
}

/* Row y of 16 channels of a sample's input gradient, into out (channel j's row at out + j *
 * plane): 0 + line, or (base + 0) + line, the sum input_adjoint makes (base: what the tile
 * row above gave, added to a zero when it was made, and the same bits again, or NULL), from
 * lines in lanes (padded: input column x at pad + x), transposed back, 16 columns at a time.
 * In channel lanes, stored as it is, and where gate is not NULL (the relu's output row) kept
 * where that is positive, relu_backward's.
 * Added here, as the rows are stored: a pass of its own over the lines took 40% of the
 * adjoint's time. */
static void store_lanes_row(const tiling *t, float *out, size_t plane, const float *line,
                            const float *base, const float *gate)
{
    const conv_geom *g = t->g;
    size_t from = (size_t)LANES * g->pad;
    if (g->in_lanes) {   /* dx in channel lanes: the row as it is, through the relu at gate */
        for (size_t at = 0; at < (size_t)LANES * g->w; at += VL) {
            vl b = base ? loadv(base + from + at) + (vl){0} : (vl){0};
            vl v = b + loadv(line + from + at);
            if (gate)
                v = (vl)((vli)v & (loadv(gate + at) > (vl){0}));
            storev(out + at, v);
        }
        return;
    }
    for (int x = 0; x < g->w; x += LANES) {
        size_t at = from + (size_t)LANES * x;
        lanes_sum_to_rows(line + at, base ? base + at : NULL, out + x, plane, g->w - x);
    }
}

/* Where the adjoint stores a sample's rows of 16 channels: where dx's planes are a multiple
 * of 4 KB apart (a 32 x 32 layer's), the 16 rows stored at once share one cache set, and
 * took a third of the adjoint's time; there into stage, planes skewed (plane_of), copied out
 * whole once the sample's rows of the block are done (adjoint_flush): vgg-small's 32 -> 32
 * layer's backward 5% shorter (./build.sh bench ab), where 16 x 16 planes (cifar-shaped's)
 * were 2% slower staged. Else, and for planes of 4096 values and more (no stage), in place. */
typedef struct adjoint_out {
    float *dx, *stage;
    size_t plane, stage_plane;   /* dx's, stage's */
    int lo, hi;                  /* the rows staged, of the sample at hand */
} adjoint_out;

/* Channel c0's plane of sample s in dx, the first of the 16. */
static float *dx_planes(const tiling *t, const adjoint_out *o, int s, int c0)
{
    return o->dx + ((size_t)s * t->g->c + (size_t)c0) * o->plane;
}

static float *adjoint_row(const tiling *t, adjoint_out *o, int s, int c0, int y, size_t *plane)
{
    const conv_geom *g = t->g;
    if (!o->stage) {   /* in channel lanes, a row of the 16 channels' block */
        *plane = o->plane;
        return dx_planes(t, o, s, c0) + (size_t)y * g->w * (g->in_lanes ? LANES : 1);
    }
    o->lo = o->lo < y ? o->lo : y;
    o->hi = o->hi > y + 1 ? o->hi : y + 1;
    *plane = o->stage_plane;
    return o->stage + (size_t)y * g->w;
}

static void adjoint_flush(const tiling *t, adjoint_out *o, int s, int c0)
{
    const conv_geom *g = t->g;
    if (o->stage && o->lo < o->hi)
        copy_planes(dx_planes(t, o, s, c0), o->plane, o->stage, o->stage_plane,
                    (size_t)o->lo * g->w, (size_t)(o->hi - o->lo) * g->w);
    o->lo = g->h, o->hi = 0;
}

/* dx = the windows of Z[p][col][c] summed where they overlap, as input_adjoint: per 16
 * channels and tile row, its windows joined into 6 lines (adjoint_tile); a line's row of dx is
 * 0 + the line, or where the tile row above covered it too (rows 0 and 1), what that one
 * gave (kept in lanes when it was done just before, else read back from dx) + the line.
 * rows: 8 lines of row_len + 16 columns in lanes, then the stage. */
void LANES_ISA(winograd_f4_lanes_input_adjoint)(const tiling *t, const float *Z, float *dx, float *rows)
{
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)g->c * t->cols), line = WINOGRAD_LANES_LINE(t);
    float *lines[6], *above[2] = {rows + 6 * line, rows + 7 * line};
    for (int i = 0; i < 6; i++)
        lines[i] = rows + i * line;
    size_t dx_plane = (size_t)g->h * g->w;
    int staged = WINOGRAD_LANES_STAGE(g) && sizeof(float) * dx_plane % 4096 == 0 && !g->in_lanes;
    adjoint_out o = {dx, staged ? rows + WINOGRAD_LANES_LINES * line : NULL, dx_plane,
                     plane_of(dx_plane), g->h, 0};
    for (int c0 = 0; c0 < g->c; c0 += LANES)
        for (int r = t->r0; r < t->r1; r++) {
            int s = r / t->th, tr = r % t->th, y0 = 4 * tr - g->pad;
            int first, last, bottom = winograd_row_cols(t, r, &first, &last);
            for (int q = 0; q < t->tw; q++) {
                size_t at = (size_t)(q == t->tw - 1 ? last : first + q) * g->c + c0;
                adjoint_of(t, q, bottom, Z + at, plane, lines);
            }
            int kept = r > t->r0 && tr > 0;   /* rows 0 and 1's base in above */
            int keep = r + 1 < t->r1 && tr + 1 < t->th;   /* the next tile row adds to 4, 5 */
            const float *relu = NULL;   /* the relu's output, whose rows gate dx's */
            if (g->in_lanes && t->relu_x)
                relu = lanes_src_of(g, (conv_input){t->relu_x, NULL, 0, 0}, s, c0).f;
            for (int i = 0; i < 6; i++) {
                int y = y0 + i;
                if (y < 0 || y >= g->h)
                    continue;
                const float *base = NULL;
                if (i < 2 && tr > 0) {
                    if (!kept)
                        lanes_row(t, lanes_src_of(g, (conv_input){dx, NULL, 0, 0}, s, c0), y,
                                  above[i]);
                    base = above[i];
                }
                if (i >= 4 && keep) {   /* stored by the next tile row, with its rows 0, 1 */
                    float *was = above[i - 4];
                    above[i - 4] = lines[i], lines[i] = was;
                } else {
                    size_t stride;
                    float *out = adjoint_row(t, &o, s, c0, y, &stride);
                    /* (a row the next block adds to is kept so twice: the same) */
                    const float *gate = relu ? relu + (size_t)LANES * y * g->w : NULL;
                    store_lanes_row(t, out, stride, lines[i], base, gate);
                }
            }
            if (r + 1 == t->r1 || tr + 1 == t->th)   /* the sample's rows of the block done */
                adjoint_flush(t, &o, s, c0);
        }
}

/* For channels and filters in multiples of 16: all four transforms by lanes. */
const winograd_variant LANES_ISA(winograd_f4_lanes) = {
    .m = 4,
    .G = F4_G,
    .input = LANES_ISA(winograd_f4_lanes_input),
    .output = LANES_ISA(winograd_f4_lanes_output),
    .gradient = LANES_ISA(winograd_f4_lanes_gradient),
    .input_adjoint = LANES_ISA(winograd_f4_lanes_input_adjoint),
    .by_tile = 1,
};

#endif
