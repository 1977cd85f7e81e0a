/* A first layer's 3x3 convolution with 16 filters along the vector (conv_lanes.h). Each
 * sample's few channels are copied into zero-padded planes; an input value is broadcast
 * straight from them into the fused multiply-adds of 16 filters. Forward keeps a block of 2
 * output rows x 8 columns in 16 registers, pools its 2x2 windows between registers, and
 * stages a row (or a pooled row) in lanes, turned by 16 x 16 transposes into the rows of a
 * run of the 16 filters' planes, copied out whole. The filter gradient copies the 16
 * filters' gradient planes (and argmaxes, and the relu's output) in whole, turns each output
 * row's gradient into lanes (through the pooling's argmax and the relu), then adds each
 * column's vector times the broadcast input under every tap. An output in channel lanes
 * (out_lanes) needs no transposes: its rows are written, and its gradient's read, where they
 * lie. Compiled with AVX-512 flags. */
#include "ops/conv_lanes.h"
#include "ops/lanes_avx512.h"
#include "ops/scratch.h"

#include <string.h>

enum { SIDE = 3, TAPS = SIDE * SIDE, BLOCK_COLS = 8 };

static int round_up(int n, int to) { return (n + to - 1) / to * to; }

/* A sample's channels, zero-padded: padded column j is input column j - pad; wide and tall
 * enough for whole blocks of 2 rows x BLOCK_COLS columns. */
typedef struct padded {
    int wp;         /* row stride */
    size_t plane;   /* floats per channel */
    float *p;
} padded;

static padded padded_of(const conv_geom *g)
{
    int wp = round_up(g->ow, BLOCK_COLS) + SIDE - 1, hp = round_up(g->oh, 2) + SIDE - 1;
    return (padded){wp, (size_t)wp * hp, ops_scratch(SCRATCH_PACK_A, (size_t)wp * hp * g->c)};
}

/* Sample n of x into d (bytes times the scale: the direct kernel's floats, bit for bit). */
static void pad_sample(const conv_geom *g, conv_input x, int n, const padded *d)
{
    size_t hw = (size_t)g->h * g->w;
    memset(d->p, 0, sizeof(float) * d->plane * g->c);
    for (int c = 0; c < g->c; c++)
        for (int y = 0; y < g->h; y++) {
            float *row = d->p + c * d->plane + (size_t)(y + g->pad) * d->wp + g->pad;
            size_t at = c * hw + (size_t)y * g->w;
            if (x.f) {
                memcpy(row, x.f + (size_t)n * g->c * hw + at, sizeof(float) * (size_t)g->w);
                continue;
            }
            for (int i = 0; i < g->w; i += LANES) {
                __mmask16 keep = first_n(g->w - i);
                __m512i b = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(keep, x.b[n] + at + i));
                __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(b), _mm512_set1_ps(x.scale));
                _mm512_mask_storeu_ps(row + i, keep, v);
            }
        }
}

/* Filters [f, f + nf), nf <= 16, as wl[c * TAPS + tap]: a register of the 16 filters' weights
 * (zeros past nf). */
static void lanes_weights(const conv_geom *g, const float *wt, int f, int nf, v16 *wl)
{
    for (int c = 0; c < g->c; c++)
        for (int t = 0; t < TAPS; t++) {
            float v[LANES] = {0};
            for (int k = 0; k < nf; k++)
                v[k] = wt[((size_t)(f + k) * g->c + c) * TAPS + t];
            wl[c * TAPS + t] = load16(v);
        }
}

/* Per lane: filter f + lane's first output in the argmax numbering (of one sample). */
static __m512i first_outputs(const conv_geom *g, int f)
{
    __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    return _mm512_mullo_epi32(_mm512_add_epi32(lane, _mm512_set1_epi32(f)),
                              _mm512_set1_epi32(g->oh * g->ow));
}

/* count positions of 16 filters at stage[16 i] into the rows of the first nf filters, out +
 * k * plane for filter k: 16 positions at a time, transposed. */
static void lanes_to_rows(const float *stage, int count, int nf, float *out, size_t plane)
{
    for (int x0 = 0; x0 < count; x0 += LANES) {
        __m512 r[LANES];
#pragma GCC unroll 16
        for (int q = 0; q < LANES; q++)
            r[q] = _mm512_loadu_ps(stage + (size_t)LANES * (x0 + q));
        transpose16(r);
        __mmask16 keep = first_n(count - x0);
        for (int k = 0; k < nf; k++)
            _mm512_mask_storeu_ps(out + k * plane + x0, keep, r[k]);
    }
}

/* The inverse: columns [0, count) of the rows at in + k * plane of the first nf filters (zeros
 * for the others), through the relu whose output rows are at relu (else NULL), into stage in
 * lanes. */
static void rows_in_lanes(const float *in, const float *relu, int count, int nf, size_t plane,
                          float *stage)
{
    for (int x0 = 0; x0 < count; x0 += LANES)
        rows_to_lanes(in, relu, plane, nf, x0, count, stage);
}

/* Output rows oy and oy + 1, columns [x0, x0 + BLOCK_COLS), of 16 filters: the bias, then
 * every channel's taps by kernel row and column, the direct kernel's order. A channel's 9
 * weights stay in registers while each input value under the block is broadcast once, for
 * every output it feeds: one taken in order of input rows, then columns, reaches each output
 * by kernel row, then column, as before. Taken tap by tap, GCC kept the broadcasts it shared
 * between taps in registers and spilled the sums to the stack, where their reloads waited on
 * stores to addresses the input's matched modulo 4 KB (2.5x slower in training). */
INLINE void forward_block(const padded *d, int channels, const v16 *wl, v16 bias, int oy,
                          int x0, v16 acc[2][BLOCK_COLS])
{
#pragma GCC unroll 2
    for (int r = 0; r < 2; r++)
#pragma GCC unroll 8
        for (int j = 0; j < BLOCK_COLS; j++)
            acc[r][j] = bias;
    for (int c = 0; c < channels; c++) {
        const float *in = d->p + c * d->plane + (size_t)oy * d->wp + x0;
        __m512 w[TAPS];
#pragma GCC unroll 9
        for (int t = 0; t < TAPS; t++)
            w[t] = (__m512)wl[c * TAPS + t];
#pragma GCC unroll 4
        for (int row = 0; row < 2 + SIDE - 1; row++)
#pragma GCC unroll 10
            for (int col = 0; col < BLOCK_COLS + SIDE - 1; col++) {
                __m512 v = _mm512_set1_ps(in[row * d->wp + col]);
#pragma GCC unroll 2
                for (int r = 0; r < 2; r++)
#pragma GCC unroll 3
                    for (int ky = 0; ky < SIDE; ky++)
#pragma GCC unroll 3
                        for (int kx = 0; kx < SIDE; kx++) {
                            int j = col - kx;
                            if (r + ky != row || j < 0 || j >= BLOCK_COLS)
                                continue;
                            acc[r][j] = (v16)_mm512_fmadd_ps(w[ky * SIDE + kx], v,
                                                             (__m512)acc[r][j]);
                        }
            }
    }
}

/* The block's 4 windows of 2x2 pooled (pool2_lanes), their argmaxes from i00 (lanes: the
 * block's first output in each filter's numbering) on rows ow apart: values into v[0 .. 4),
 * argmaxes into a[0 .. 4). */
INLINE void pool_block(v16 acc[2][BLOCK_COLS], __m512i i00, int ow, int relu, float *v, float *a)
{
#pragma GCC unroll 4
    for (int k = 0; k < BLOCK_COLS / 2; k++) {
        __m512i at;
        __m512 best = pool2_lanes((__m512)acc[0][2 * k], (__m512)acc[0][2 * k + 1],
                                  (__m512)acc[1][2 * k], (__m512)acc[1][2 * k + 1],
                                  _mm512_add_epi32(i00, _mm512_set1_epi32(2 * k)), ow, relu, &at);
        _mm512_storeu_ps(v + LANES * k, best);
        _mm512_storeu_si512(a + LANES * k, at);
    }
}

/* What a forward call adds to the convolution: a pool (2x2, or NULL), a relu. */
typedef struct forward_how {
    const pool_geom *pool;
    int relu;
} forward_how;

/* A group's outputs, laid out as in y (and argmax): nf planes of plane floats, written a row
 * of every plane at a time (the transposes' order) into run, then copied out in one pass.
 * Written straight into y, 16 planes' short rows at a time, the stores missed the cache in
 * 32 places at once whenever y had left it, and stalled the multiply-adds behind them: in
 * training, wide-28's first layer ran 2.5 times slower than alone. An output in channel
 * lanes (out_lanes) is written in order where it lies: the run is y's block itself. */
typedef struct group_run {
    float *values, *argmaxes;   /* the run; argmaxes NULL without a pool */
    size_t plane;               /* floats per output plane */
    int lanes;
} group_run;

/* count positions of 16 filters at stage into the run's rows from position at: as they are
 * in channel lanes, else the first nf filters' rows (lanes_to_rows). */
static void stage_to_run(const group_run *run, const float *stage, int count, int nf,
                         float *rows, size_t at)
{
    if (run->lanes)
        memcpy(rows + (size_t)LANES * at, stage, sizeof(float) * LANES * (size_t)count);
    else
        lanes_to_rows(stage, count, nf, rows + at, run->plane);
}

/* Filters [f, f + nf) of a sample, its padded channels in d, their weights wl and bias b,
 * into run. stage: 2 rows of cols positions in lanes (pooled: values, then argmaxes); in
 * channel lanes, the run's rows themselves where the blocks of columns stay within them. */
static void forward_filters(const conv_geom *g, const padded *d, const v16 *wl, v16 b,
                            const forward_how *o, int f, int nf, const group_run *run,
                            float *stage, int cols)
{
    const pool_geom *p = o->pool;
    __m512i plane0 = first_outputs(g, f);
    for (int oy = 0; oy < (p ? 2 * p->oh : g->oh); oy += 2) {
        /* a pooled row's last block may spill a few windows into the next row, which is
         * written after it; an unpooled pair's rows are written block by block, together */
        int whole = g->ow % BLOCK_COLS == 0;
        int in_place = run->lanes && (p ? whole || oy / 2 + 1 < p->oh : whole && oy + 1 < g->oh);
        float *first = stage, *second = stage + (size_t)LANES * cols;
        int stride = cols;   /* between the pair of rows, unpooled */
        if (in_place && p) {
            first = run->values + (size_t)LANES * (oy / 2) * p->ow;
            second = run->argmaxes + (size_t)LANES * (oy / 2) * p->ow;
        } else if (in_place) {
            first = run->values + (size_t)LANES * oy * g->ow, stride = g->ow;
        }
        for (int x0 = 0; x0 < g->ow; x0 += BLOCK_COLS) {
            v16 acc[2][BLOCK_COLS];
            forward_block(d, g->c, wl, b, oy, x0, acc);
            if (p) {
                __m512i i00 = _mm512_add_epi32(plane0, _mm512_set1_epi32(oy * g->ow + x0));
                pool_block(acc, i00, g->ow, o->relu, first + LANES * (x0 / 2),
                           second + LANES * (x0 / 2));
                continue;
            }
#pragma GCC unroll 2
            for (int r = 0; r < 2; r++)
#pragma GCC unroll 8
                for (int j = 0; j < BLOCK_COLS; j++)
                    store16(first + (size_t)LANES * (r * stride + x0 + j),
                            o->relu ? relu_lanes(acc[r][j]) : acc[r][j]);
        }
        if (in_place)
            continue;
        if (p) {
            size_t at = (size_t)(oy / 2) * p->ow;
            stage_to_run(run, first, p->ow, nf, run->values, at);
            stage_to_run(run, second, p->ow, nf, run->argmaxes, at);
            continue;
        }
        for (int r = 0; r < 2 && oy + r < g->oh; r++)
            stage_to_run(run, r ? first + (size_t)LANES * cols : first, g->ow, nf, run->values,
                         (size_t)(oy + r) * g->ow);
    }
}

int conv_lanes_forward(const conv_geom *g, conv_input x, const float *wt, const float *bias,
                       float *y, int n0, int n1, int f0, int f1, const pool_geom *pool,
                       int32_t *argmax, int relu)
{
    int groups = (f1 - f0 + LANES - 1) / LANES, cols = round_up(g->ow, LANES);
    size_t plane = pool ? (size_t)pool->oh * pool->ow : (size_t)g->oh * g->ow;
    if (g->out_lanes && (f0 % LANES || (f1 - f0) % LANES))
        return -1;   /* whole blocks of 16 filters only */
    padded d = padded_of(g);
    v16 *wl = (v16 *)ops_scratch(SCRATCH_PACK_B, (size_t)groups * g->c * TAPS * LANES);
    float *stage = ops_scratch(SCRATCH_COLUMNS, (size_t)2 * cols * LANES);
    float *out = ops_scratch(SCRATCH_PARTIALS, (size_t)2 * LANES * plane);
    if (!d.p || !wl || !stage || !out)
        return -1;
    for (int k = 0; k < groups; k++) {
        int f = f0 + LANES * k, nf = f1 - f < LANES ? f1 - f : LANES;
        lanes_weights(g, wt, f, nf, wl + (size_t)k * g->c * TAPS);
    }
    forward_how o = {pool, relu};
    group_run run = {out, pool ? out + LANES * plane : NULL, plane, g->out_lanes};
    for (int n = n0; n < n1; n++) {
        pad_sample(g, x, n, &d);
        for (int k = 0; k < groups; k++) {
            int f = f0 + LANES * k, nf = f1 - f < LANES ? f1 - f : LANES;
            v16 b = {0};
            if (bias)
                b = (v16)_mm512_maskz_loadu_ps(first_n(nf), bias + f);
            size_t at = ((size_t)n * g->f + f) * plane, bytes = sizeof(float) * nf * plane;
            if (run.lanes)
                run.values = y + at, run.argmaxes = pool ? (float *)argmax + at : NULL;
            forward_filters(g, &d, wl + (size_t)k * g->c * TAPS, b, &o, f, nf, &run, stage,
                            cols);
            if (run.lanes)
                continue;
            memcpy(y + at, run.values, bytes);
            if (pool)
                memcpy(argmax + at, run.argmaxes, bytes);
        }
    }
    return 0;
}

/* What a filter-gradient call reads besides the input: the gradient (of the pooled output
 * with a pool, else of the output), the argmaxes, the relu's output (else NULL); by planes
 * of `plane` floats, or with lanes in channel lanes, by blocks of 16 planes' floats. */
typedef struct gradient_in {
    const float *dy;
    const pool_geom *pool;
    const int32_t *argmax;
    const float *relu_y;
    size_t plane;
    int lanes;
} gradient_in;

/* in's planes of filters [f, f + nf) of sample n copied into buf, one run each (the planes of
 * consecutive filters lie in one run): out reads them there. Read in place, 16 planes' short
 * rows at a time, they missed the cache in 48 places at once (as forward's stores did). */
static void copy_gradients(const conv_geom *g, const gradient_in *in, int n, int f, int nf,
                           float *buf, gradient_in *out)
{
    size_t at = ((size_t)n * g->f + f) * in->plane, count = (size_t)nf * in->plane;
    if (in->lanes) {   /* in order already: read where they lie */
        *out = (gradient_in){in->dy + at, in->pool, in->pool ? in->argmax + at : NULL,
                             in->relu_y ? in->relu_y + at : NULL, in->plane, 1};
        return;
    }
    *out = (gradient_in){buf, in->pool, NULL, NULL, in->plane, 0};
    memcpy(buf, in->dy + at, sizeof(float) * count);
    if (in->pool) {
        out->argmax = (const int32_t *)memcpy(buf + count, in->argmax + at, sizeof(float) * count);
        buf += count;
    }
    if (in->relu_y)
        out->relu_y = memcpy(buf + count, in->relu_y + at, sizeof(float) * count);
}

/* count positions of a row of the first nf of in's planes k from the first (t: the gradient
 * or the argmaxes, relu: the relu's output or NULL), from position pos of a plane, into stage
 * in lanes: transposed from NCHW rows, copied from channel lanes. */
static void row_in_lanes(const gradient_in *in, const float *t, const float *relu, size_t k,
                         size_t pos, int count, int nf, float *stage)
{
    size_t at = k * in->plane + (in->lanes ? LANES * pos : pos);
    if (in->lanes)
        lanes_copy(t + at, relu ? relu + at : NULL, count, stage);
    else
        rows_in_lanes(t + at, relu ? relu + at : NULL, count, nf, in->plane, stage);
}

/* Output row oy's gradient of filters [f, f + nf) in lanes, into row (or where it lies, in
 * channel lanes already), from in's planes k from the first (copy_gradients'). With a pool,
 * each position gets its window's gradient where the window's argmax names it (zero
 * elsewhere, and outside every window): the window row's gradients and argmaxes are turned
 * into lanes (pooled) on its first row, or read where they lie. */
static const float *gradient_row(const conv_geom *g, const gradient_in *in, size_t k, int f,
                                 int nf, int oy, float *row, float *pooled, int pcols)
{
    const pool_geom *p = in->pool;
    if (!p && in->lanes && !in->relu_y)   /* in lanes already: read where it lies */
        return in->dy + k * in->plane + (size_t)LANES * oy * g->ow;
    if (!p) {
        row_in_lanes(in, in->dy, in->relu_y, k, (size_t)oy * g->ow, g->ow, nf, row);
        return row;
    }
    int py = oy / p->stride, inside = py < p->oh;
    size_t at = (size_t)py * p->ow;
    const float *values = pooled, *argmaxes = pooled + (size_t)LANES * pcols;
    if (inside && in->lanes && !in->relu_y) {   /* the window row where it lies */
        values = in->dy + k * in->plane + LANES * at;
        argmaxes = (const float *)in->argmax + k * in->plane + LANES * at;
    } else if (inside && oy % p->stride == 0) {
        row_in_lanes(in, in->dy, in->relu_y, k, at, p->ow, nf, pooled);
        row_in_lanes(in, (const float *)in->argmax, NULL, k, at, p->ow, nf,
                     pooled + (size_t)LANES * pcols);
    }
    __m512i at_ox = _mm512_add_epi32(first_outputs(g, f), _mm512_set1_epi32(oy * g->ow));
    int ox = 0;
    for (int px = 0; inside && px < p->ow; px++) {   /* a window's columns */
        __m512i a = _mm512_loadu_si512(argmaxes + LANES * px);
        __m512 v = _mm512_loadu_ps(values + LANES * px);
        for (int j = 0; j < p->stride; j++, ox++) {
            __mmask16 hit = _mm512_cmpeq_epi32_mask(a, at_ox);
            _mm512_storeu_ps(row + LANES * ox, _mm512_maskz_mov_ps(hit, v));
            at_ox = _mm512_add_epi32(at_ox, _mm512_set1_epi32(1));
        }
    }
    for (; ox < g->ow; ox++)   /* outside every window */
        _mm512_storeu_ps(row + LANES * ox, _mm512_setzero_ps());
    return row;
}

/* sums[k][c * TAPS + tap] += the gradient of group k's row (rows[k], in lanes) times channel c
 * of the padded input under the tap, column by column; sums[k][channels * TAPS] += the
 * gradient (the bias's). groups: 1 or 2 (a constant where inlined), each broadcast input value
 * then feeding both: with one group, the broadcasts took as long as the multiply-adds. */
INLINE void add_rows(const padded *d, int channels, int oy, int ow, int groups,
                     const float *const rows[2], v16 *const sums[2])
{
    for (int c = 0; c < channels; c++) {
        const float *in = d->p + c * d->plane + (size_t)oy * d->wp;
        __m512 acc[2][TAPS], bias[2];
#pragma GCC unroll 2
        for (int k = 0; k < groups; k++) {
            bias[k] = (__m512)sums[k][channels * TAPS];
#pragma GCC unroll 9
            for (int t = 0; t < TAPS; t++)
                acc[k][t] = (__m512)sums[k][c * TAPS + t];
        }
        for (int ox = 0; ox < ow; ox++) {
            __m512 gv[2];
#pragma GCC unroll 2
            for (int k = 0; k < groups; k++) {
                gv[k] = _mm512_loadu_ps(rows[k] + LANES * ox);
                bias[k] = _mm512_add_ps(bias[k], gv[k]);   /* dropped unless c == 0 */
            }
#pragma GCC unroll 3
            for (int ky = 0; ky < SIDE; ky++)
#pragma GCC unroll 3
                for (int kx = 0; kx < SIDE; kx++) {
                    __m512 v = _mm512_set1_ps(in[ky * d->wp + ox + kx]);
#pragma GCC unroll 2
                    for (int k = 0; k < groups; k++)
                        acc[k][ky * SIDE + kx] = _mm512_fmadd_ps(gv[k], v, acc[k][ky * SIDE + kx]);
                }
        }
#pragma GCC unroll 2
        for (int k = 0; k < groups; k++) {
            if (c == 0)
                sums[k][channels * TAPS] = (v16)bias[k];
#pragma GCC unroll 9
            for (int t = 0; t < TAPS; t++)
                sums[k][c * TAPS + t] = (v16)acc[k][t];
        }
    }
}

/* The lanes of sums (per group of 16 filters: channels x taps, then the bias) into dwt and
 * dbias, written or added. */
static void store_sums(const conv_geom *g, const v16 *sums, int f0, int f1, float *dwt,
                       float *dbias, int accumulate)
{
    int per = g->c * TAPS;
    for (int f = f0; f < f1; f++) {
        const v16 *s = sums + (size_t)((f - f0) / LANES) * (per + 1);
        int lane = (f - f0) % LANES;
        for (int ct = 0; ct < per; ct++) {
            float *o = dwt + (size_t)(f - f0) * per + ct;
            *o = accumulate ? *o + s[ct][lane] : s[ct][lane];
        }
        if (dbias)
            dbias[f - f0] = accumulate ? dbias[f - f0] + s[per][lane] : s[per][lane];
    }
}

int conv_lanes_backward_filter(const conv_geom *g, conv_input x, const float *dy, float *dwt,
                               float *dbias, int n0, int n1, int f0, int f1, int accumulate,
                               const pool_geom *pool, const int32_t *argmax,
                               const float *relu_y)
{
    if (g->out_lanes && (f0 % LANES || (f1 - f0) % LANES))
        return -1;   /* whole blocks of 16 filters only */
    int groups = (f1 - f0 + LANES - 1) / LANES, per = g->c * TAPS + 1;
    int cols = round_up(g->ow, LANES), pcols = pool ? round_up(pool->ow, LANES) : 0;
    padded d = padded_of(g);
    v16 *sums = (v16 *)ops_scratch(SCRATCH_PARTIALS, (size_t)groups * per * LANES);
    float *row = ops_scratch(SCRATCH_COLUMNS, (size_t)2 * LANES * (cols + 2 * pcols));
    size_t plane = pool ? (size_t)pool->oh * pool->ow : (size_t)g->oh * g->ow;
    float *copies = ops_scratch(SCRATCH_INPUT, (size_t)3 * 2 * LANES * plane);
    if (!d.p || !sums || !row || !copies)
        return -1;
    memset(sums, 0, sizeof(v16) * (size_t)groups * per);
    gradient_in in = {dy, pool, argmax, relu_y, plane, g->out_lanes}, pair_in;
    for (int n = n0; n < n1; n++) {
        pad_sample(g, x, n, &d);
        for (int k = 0; k < groups; k += 2) {   /* groups by pairs, and one alone */
            int pair = groups - k >= 2 ? 2 : 1, f = f0 + LANES * k;
            const float *rows[2];
            v16 *at[2];
            copy_gradients(g, &in, n, f, f1 - f < pair * LANES ? f1 - f : pair * LANES, copies,
                           &pair_in);
            for (int oy = 0; oy < g->oh; oy++) {
                for (int i = 0; i < pair; i++) {
                    int nf = f1 - f - LANES * i < LANES ? f1 - f - LANES * i : LANES;
                    float *r = row + (size_t)i * LANES * (cols + 2 * pcols);
                    rows[i] = gradient_row(g, &pair_in, (size_t)LANES * i, f + LANES * i, nf, oy,
                                           r, r + (size_t)LANES * cols, pcols);
                    at[i] = sums + (size_t)(k + i) * per;
                }
                if (pair == 2)
                    add_rows(&d, g->c, oy, g->ow, 2, rows, at);
                else
                    add_rows(&d, g->c, oy, g->ow, 1, rows, at);
            }
        }
    }
    store_sums(g, sums, f0, f1, dwt, dbias, accumulate);
    return 0;
}
