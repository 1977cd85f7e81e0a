/* The direct convolution, included by conv_direct{,_avx2,_avx512}.c with ISA set to the suffix
 * of the functions to define and VEC_BYTES to the vector width the file is compiled for.
 * Stride 1 only (conv.c decides).
 *
 * The trick: copy the zero-padded input into a plane with row stride Wp and some zero slack. An
 * output pixel (oy, ox) then sits at q = oy * Wp + ox, and tap (ky, kx) reads input q + ky*Wp +
 * kx, so every tap is one long contiguous run over q, with no clipping. The Wp - OW columns past
 * each output row are computed and dropped. A block of FB filters x NV vectors of q stays in
 * registers while all channels and taps stream past: each input vector loaded feeds FB FMAs. */
#include "ops/conv_direct.h"
#include "ops/pool_row.h"
#include "ops/scratch.h"
#include "ops/vec_impl.h"
#if VEC_BYTES >= 32
#include "ops/pool_row_wide.h"
#endif

#include <immintrin.h>
#include <string.h>

#define NAME2(a, b) a##_##b
#define NAME(a, b) NAME2(a, b)

#define VL (VEC_BYTES / 4)     /* floats per vector */
#define FB 4                   /* filters per register block */
#if VEC_BYTES >= 64
#define NV 4                   /* vectors of q per register block: FB * NV accumulators */
#elif VEC_BYTES >= 32
#define NV 3                   /* AVX2's 16 registers: with 4 (16 sums), GCC took every input
                                * vector from memory again in each of its 4 FMAs, and DAHL
                                * 62x84x3's forward ran 1.8x longer */
#else
#define NV 2                   /* SSE has 16 registers */
#endif
#define QB (VL * NV)           /* q positions per register block */
#define QCHUNK (VL * 64)       /* q positions per backward-filter chunk, sized for L1 */
#if VEC_BYTES >= 64
#define KYB 2                  /* kernel rows per backward-filter register block */
#define KXB 3                  /* taps of each: 24 accumulators of 32 registers */
#else
#define KYB 1                  /* 16 registers: 12 sums, the 3 input vectors and a dy vector */
#define KXB 3
#endif

/* acc + w * x, rounded once where the instruction set has FMA: GCC contracts the expression
 * only from -O2, so the bits would differ between the release and the sanitizer builds (and
 * from conv_lanes_avx512.c's, which gives this kernel's forward bits). */
static inline vf vfma(vf w, vf x, vf acc)
{
#if VEC_BYTES >= 64
    return (vf)_mm512_fmadd_ps((__m512)w, (__m512)x, (__m512)acc);
#elif VEC_BYTES >= 32
    return (vf)_mm256_fmadd_ps((__m256)w, (__m256)x, (__m256)acc);
#else
    return acc + w * x;
#endif
}

/* VL bytes at p as floats (GCC's __builtin_convertvector converted them one at a time). */
static inline vf vload_bytes(const uint8_t *p)
{
#if VEC_BYTES >= 64
    __m512 f = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p)));
#elif VEC_BYTES >= 32
    __m256 f = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p)));
#else
    int32_t four;
    memcpy(&four, p, sizeof four);
    __m128i z = _mm_setzero_si128();
    __m128 f = _mm_cvtepi32_ps(_mm_unpacklo_epi16(_mm_unpacklo_epi8(_mm_cvtsi32_si128(four), z), z));
#endif
    vf v;
    memcpy(&v, &f, sizeof v);
    return v;
}

/* How far ahead of a row of bytes its lines are fetched: a first layer reads each sample's
 * bytes from memory, at a shuffled place, and waited on them (DAHL 116x158x3 spent 11% less
 * busy time with 4 KB ahead; 1 KB, 2 KB and 8 KB did less well). */
#define PREFETCH_BYTES 4096

/* dst[i] = src[i] * scale for i < w (a row, or rows end to end): whole vectors, a line of bytes
 * per loop (one vector per loop, with its test for a line to fetch ahead, ran 1-3% slower), the
 * last one overlapping the one before (the compiler's loop left the rest of a row scalar). */
static void bytes_row(float *dst, const uint8_t *src, int w, float scale)
{
    if (w < VL) {
        __builtin_prefetch(src + PREFETCH_BYTES);
        for (int i = 0; i < w; i++)
            dst[i] = (float)src[i] * scale;
        return;
    }
    vf sc = vsplat(scale);
    int i = 0;
    for (; i + 64 <= w; i += 64) {   /* a line of bytes at a time, the line 4 KB on fetched */
        __builtin_prefetch(src + PREFETCH_BYTES + i);
#pragma GCC unroll 16
        for (int k = 0; k < 64; k += VL)
            vstore(dst + i + k, vload_bytes(src + i + k) * sc);
    }
    __builtin_prefetch(src + PREFETCH_BYTES + i);
    for (; i < w; i += VL) {
        if (i + VL > w)
            i = w - VL;   /* the last vector overlapping the one before */
        vstore(dst + i, vload_bytes(src + i) * sc);
    }
}

/* Rows [r0, r0 + nrows) of the zero-padded planes [0, nplanes) of h x w (padded coordinates:
 * row r holds source row r - pad_y), into rows of wp, plane stride `stride`; the slack after the
 * rows is zeroed. Only the padding is cleared, never a whole plane. */
static void pad_rows(const float *f, const uint8_t *b, float scale, int nplanes, int h, int w,
                     int pad_y, int pad_x, int wp, int r0, int nrows, size_t stride, float *dst)
{
    for (int p = 0; p < nplanes; p++) {
        float *d = dst + (size_t)p * stride;
        if (wp == w) {   /* no columns to pad: the rows lie end to end, one run for them all */
            int lo = pad_y - r0, hi = h + pad_y - r0;   /* the rows with a source row */
            lo = lo < 0 ? 0 : lo > nrows ? nrows : lo;
            hi = hi < lo ? lo : hi > nrows ? nrows : hi;
            size_t at = ((size_t)p * h + (size_t)(r0 + lo - pad_y)) * w, n = (size_t)(hi - lo) * w;
            memset(d, 0, sizeof(float) * (size_t)lo * wp);
            if (f)
                memcpy(d + (size_t)lo * wp, f + at, sizeof(float) * n);
            else
                bytes_row(d + (size_t)lo * wp, b + at, (int)n, scale);
            memset(d + (size_t)hi * wp, 0, sizeof(float) * (stride - (size_t)hi * wp));
            continue;
        }
        for (int r = 0; r < nrows; r++) {
            float *row = d + (size_t)r * wp;
            int sy = r0 + r - pad_y;
            if (sy < 0 || sy >= h) {
                memset(row, 0, sizeof(float) * (size_t)wp);
                continue;
            }
            size_t at = ((size_t)p * h + sy) * w;
            memset(row, 0, sizeof(float) * (size_t)pad_x);
            if (f)
                memcpy(row + pad_x, f + at, sizeof(float) * (size_t)w);
            else
                bytes_row(row + pad_x, b + at, w, scale);
            memset(row + pad_x + w, 0, sizeof(float) * (size_t)(wp - pad_x - w));
        }
        memset(d + (size_t)nrows * wp, 0, sizeof(float) * (stride - (size_t)nrows * wp));
    }
}

/* Output rows per band: the band's padded input and its outputs for FB filters stay in L2
 * (about 192 KB), instead of whole planes going out to memory and back. */
static int band_rows(int wp, int planes, int oh, int multiple)
{
    int rows = 49152 / (wp * (planes + FB));
    rows = rows < multiple ? multiple : rows / multiple * multiple;   /* whole pooling windows */
    return rows > oh ? oh : rows;
}

/* out[f][q] = bias[f] + sum over c, taps of wg[c][tap][f] * in[c][q + tap offset], for q in
 * [0, Q) and f < nf <= FB. in: cin planes of row stride wp, plane stride `stride`, with slack;
 * wg: weights regrouped as [c][tap][FB]; out: nf planes of stride ostride >= Q rounded up to QB. */
static void valid_block(int cin, int kh, int kw, int wp, size_t stride, const float *in,
                        const float *wg, const float *bias, int nf, float *out, size_t ostride,
                        int Q)
{
    int taps = kh * kw;
    for (int q0 = 0; q0 < Q; q0 += QB) {
        vf acc[FB][NV];
        #pragma GCC unroll 16
        for (int f = 0; f < FB; f++)
            #pragma GCC unroll 16
            for (int v = 0; v < NV; v++)
                acc[f][v] = vsplat(bias && f < nf ? bias[f] : 0.0f);
        for (int c = 0; c < cin; c++) {
            const float *xc = in + (size_t)c * stride + q0;
            const float *wc = wg + (size_t)c * taps * FB;
            for (int ky = 0; ky < kh; ky++)
                for (int kx = 0; kx < kw; kx++) {
                    const float *s = xc + ky * wp + kx;
                    const float *w = wc + (ky * kw + kx) * FB;
                    vf xv[NV];
                    #pragma GCC unroll 16
                    for (int v = 0; v < NV; v++)
                        xv[v] = vload(s + v * VL);
                    #pragma GCC unroll 16
                    for (int f = 0; f < FB; f++) {
                        vf wv = vsplat(w[f]);
                        #pragma GCC unroll 16
                        for (int v = 0; v < NV; v++)
                            acc[f][v] = vfma(wv, xv[v], acc[f][v]);
                    }
                }
        }
        /* Constant bounds and a test inside: a runtime bound would index acc by a variable
         * and push it out of registers. */
        #pragma GCC unroll 16
        for (int f = 0; f < FB; f++)
            #pragma GCC unroll 16
            for (int v = 0; v < NV; v++)
                if (f < nf)
                    vstore(out + (size_t)f * ostride + q0 + v * VL, acc[f][v]);
    }
}

/* Regroups weights of outputs [o0, o0+nf) into [c][tap][FB] (missing outputs get zeros). get(o,
 * c, tap) reads the weight; forward and backward-input differ only in that mapping. */
#define REGROUP(wg, cin, taps, nf, get)                                                        \
    for (int c_ = 0; c_ < (cin); c_++)                                                         \
        for (int t_ = 0; t_ < (taps); t_++)                                                    \
            for (int f_ = 0; f_ < FB; f_++)                                                    \
                (wg)[((size_t)c_ * (taps) + t_) * FB + f_] = f_ < (nf) ? get(f_, c_, t_) : 0.0f;

static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

/* y[0 .. n) = x's, through a relu if asked (relu_forward's: NaN passes). */
static void store_row(float *y, const float *x, int n, int relu)
{
    if (!relu) {
        memcpy(y, x, sizeof(float) * (size_t)n);
        return;
    }
#pragma omp simd
    for (int i = 0; i < n; i++)
        y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

/* d[0 .. n) = dy's through the relu whose output is ry (relu_backward's). */
static void through_relu(float *d, const float *dy, const float *ry, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        float g = dy[i];   /* loaded whatever ry is, as relu_backward does */
        d[i] = ry[i] > 0.0f ? g : 0.0f;
    }
}

/* A row of 2x2 windows (pool_row.h), a vector's worth a block where this build has them. */
static inline void pool2_row(const float *r0, const float *r1, float *y, int32_t *a, int ow,
                             int w, int32_t at, int relu)
{
#if VEC_BYTES >= 32
    if (ow >= POOL2_WIDE) {
        maxpool2_row_wide(r0, r1, y, a, ow, w, at, relu);
        return;
    }
#endif
    maxpool2_row(r0, r1, y, a, ow, w, at, relu);
}

/* Whether unpool_row zeroes its rows' columns [2 * ow, wp) itself. */
static int unpool_row_zeroes_tail(int ow)
{
#if VEC_BYTES >= 32
    return ow >= POOL2_WIDE;
#else
    (void)ow;
    return 0;
#endif
}

/* A row of 2x2 windows' gradient spread over its two rows (pool_row.h), a vector's worth of
 * windows a block where this build has them. */
static inline void unpool_row(const float *gy, const float *ry, const int32_t *a, float *d0,
                              float *d1, int ow, int w, int32_t corner, int wp)
{
#if VEC_BYTES >= 32
    if (ow >= POOL2_WIDE) {
        unpool2_row_wide(gy, ry, a, d0, d1, ow, w, corner, wp);
        return;
    }
#endif
    (void)wp;
    unpool2_row(gy, ry, a, d0, d1, ow, w, corner);
}

/* Rows [r0, r0 + nrows) of sample n of x, padded. */
static void pad_sample_rows(conv_input x, const conv_geom *g, int n, int wp, int r0, int nrows,
                            size_t stride, float *dst)
{
    const float *f = x.f ? x.f + (size_t)n * g->c * g->h * g->w : NULL;
    pad_rows(f, f ? NULL : x.b[n], x.scale, g->c, g->h, g->w, g->pad, g->pad, wp, r0, nrows,
             stride, dst);
}

int NAME(conv_direct_forward, ISA)(const conv_geom *g, conv_input x, const float *wt,
                                    const float *bias, float *y, int n0, int n1, int f0, int f1,
                                    const pool_geom *pool, int32_t *argmax, int relu)
{
    int wp = g->w + 2 * g->pad, taps = g->kh * g->kw, nblocks = (f1 - f0 + FB - 1) / FB;
    int band = band_rows(wp, g->c, g->oh, pool ? pool->stride : 1), rows_in = band + g->kh - 1;
    size_t stride = (size_t)rows_in * wp + QB + g->kw + wp;
    size_t ostride = round_up((size_t)band * wp, QB), wblock = (size_t)g->c * taps * FB;
    float *in = ops_scratch(SCRATCH_PACK_A, stride * g->c);
    float *out = ops_scratch(SCRATCH_COLUMNS, ostride * FB);
    float *wg = ops_scratch(SCRATCH_PACK_B, wblock * nblocks);
    if (!in || !out || !wg)
        return -1;
    for (int fb = f0; fb < f1; fb += FB) {   /* every filter block's weights, once */
        int nf = f1 - fb < FB ? f1 - fb : FB;
        float *w = wg + (size_t)((fb - f0) / FB) * wblock;
#define FWD_W(fo, ci, ti) wt[(((size_t)(fb + (fo)) * g->c) + (ci)) * taps + (ti)]
        REGROUP(w, g->c, taps, nf, FWD_W)
#undef FWD_W
    }
    size_t ohw = (size_t)g->oh * g->ow, pohw = pool ? (size_t)pool->oh * pool->ow : 0;
    for (int n = n0; n < n1; n++)
        for (int oy0 = 0; oy0 < g->oh; oy0 += band) {
            int nb = g->oh - oy0 < band ? g->oh - oy0 : band;
            pad_sample_rows(x, g, n, wp, oy0, nb + g->kh - 1, stride, in);
            for (int fb = f0; fb < f1; fb += FB) {
                int nf = f1 - fb < FB ? f1 - fb : FB;
                valid_block(g->c, g->kh, g->kw, wp, stride, in,
                            wg + (size_t)((fb - f0) / FB) * wblock, bias ? bias + fb : NULL, nf,
                            out, ostride, nb * wp);
                for (int f = 0; f < nf; f++) {
                    const float *o = out + (size_t)f * ostride;
                    size_t plane = (size_t)n * g->f + fb + f;
                    if (!pool) {
                        for (int r = 0; r < nb; r++)
                            store_row(y + (plane * g->oh + oy0 + r) * g->ow, o + (size_t)r * wp,
                                      g->ow, relu);
                        continue;
                    }
                    /* pooled while in cache: the windows whose rows are all in this band */
                    for (int py = oy0 / pool->stride; py < pool->oh; py++) {
                        int r = py * pool->stride - oy0;
                        if (r + pool->size > nb)
                            break;
                        size_t at = plane * pohw + (size_t)py * pool->ow;
                        int32_t first = (int32_t)((fb + f) * ohw + (size_t)(oy0 + r) * g->ow);
                        if (pool->size == 2)   /* inline, for this file's instruction set */
                            pool2_row(o + (size_t)r * wp, o + (size_t)(r + 1) * wp, y + at,
                                      argmax + at, pool->ow, g->ow, first, relu);
                        else
                            ops_maxpool_row(pool, o + (size_t)r * wp, (size_t)wp, y + at,
                                            argmax + at, first, relu);
                    }
                }
            }
        }
    return 0;
}

/* dx is the valid convolution of dy, padded by the kernel size less one, with the weights flipped
 * and transposed (channels become outputs, filters inputs); then the input padding is cropped. */
int NAME(conv_direct_backward_input, ISA)(const conv_geom *g, const float *dy, const float *wt,
                                           float *dx, int n0, int n1)
{
    int taps = g->kh * g->kw, py = g->kh - 1, px = g->kw - 1;
    int wd = g->ow + 2 * px, hd = g->oh + 2 * py;   /* padded dy */
    int hp = g->h + 2 * g->pad;                      /* output grid: the padded input */
    int Q = hp * wd;
    size_t stride = (size_t)hd * wd + QB + g->kw + wd, ostride = round_up((size_t)Q, QB);
    float *in = ops_scratch(SCRATCH_PACK_A, stride * g->f);
    float *out = ops_scratch(SCRATCH_COLUMNS, ostride * FB);
    float *wg = ops_scratch(SCRATCH_PACK_B, (size_t)g->f * taps * FB * ((g->c + FB - 1) / FB));
    if (!in || !out || !wg)
        return -1;
    for (int cb = 0; cb < g->c; cb += FB) {   /* regroup all channel blocks once */
        int nc = g->c - cb < FB ? g->c - cb : FB;
        float *w = wg + (size_t)(cb / FB) * g->f * taps * FB;
#define BWD_W(co, fi, ti) wt[(((size_t)(fi) * g->c) + cb + (co)) * taps + (taps - 1 - (ti))]
        REGROUP(w, g->f, taps, nc, BWD_W)
#undef BWD_W
    }
    for (int n = n0; n < n1; n++) {
        pad_rows(dy + (size_t)n * g->f * g->oh * g->ow, NULL, 0, g->f, g->oh, g->ow, py, px, wd,
                 0, hd, stride, in);
        for (int cb = 0; cb < g->c; cb += FB) {
            int nc = g->c - cb < FB ? g->c - cb : FB;
            valid_block(g->f, g->kh, g->kw, wd, stride, in,
                        wg + (size_t)(cb / FB) * g->f * taps * FB, NULL, nc, out, ostride, Q);
            for (int c = 0; c < nc; c++)
                for (int iy = 0; iy < g->h; iy++)
                    memcpy(dx + (((size_t)n * g->c + cb + c) * g->h + iy) * g->w,
                           out + (size_t)c * ostride + (size_t)(iy + g->pad) * wd + g->pad,
                           sizeof(float) * (size_t)g->w);
        }
    }
    return 0;
}

/* The band's rows [*lo, *hi) that 2x2 pooling windows (stride 2) lie in whole, of the band of
 * nb rows from output row oy0: their rows are written whole by unpool2_row. */
static void unpooled_rows(const pool_geom *pool, int oy0, int nb, int *lo, int *hi)
{
    int first = (oy0 + 1) / 2, end = (oy0 + nb) / 2;   /* windows [first, end) */
    end = end < pool->oh ? end : pool->oh;
    *lo = 2 * first - oy0;
    *hi = end > first ? 2 * end - oy0 : *lo;
}

/* Zeroes used values of a band's plane of row stride wp, except rows [lo, hi)'s first cols
 * values (lo <= hi), which the caller writes: clearing the whole plane first wrote it twice
 * (dy_band's memset was 5% of DAHL 116x158x3's time). */
static void zero_band_except(float *d, int lo, int hi, int cols, int wp, size_t used)
{
    memset(d, 0, sizeof(float) * (size_t)lo * wp);
    for (int r = lo; r < hi && cols < wp; r++)
        memset(d + (size_t)r * wp + cols, 0, sizeof(float) * (size_t)(wp - cols));
    memset(d + (size_t)hi * wp, 0, sizeof(float) * (used - (size_t)hi * wp));
}

/* Rows [oy0, oy0 + nb) of dy for filters [fb, fb + nf), on the input's row stride wp with
 * zeros in the dropped columns, into dband (FB planes of dstride, zeros past the band and for
 * missing filters). With a pool, dy is the pooled gradient: each window's goes to its argmax,
 * through the relu after the pool where relu_y (the pooled output) is not NULL. */
static void dy_band(const conv_geom *g, const float *dy, const pool_geom *pool,
                    const int32_t *argmax, const float *relu_y, int n, int fb, int nf, int oy0,
                    int nb, int wp, size_t dstride, float *dband)
{
    size_t used = round_up((size_t)nb * wp, VL), ohw = (size_t)g->oh * g->ow;
    int lo = 0, hi = 0, cols = pool ? 2 * pool->ow : 0;   /* rows [lo, hi)'s first cols values:
                                                            * unpool_row writes them below */
    if (pool && pool->size == 2 && pool->stride == 2) {
        unpooled_rows(pool, oy0, nb, &lo, &hi);
        cols = unpool_row_zeroes_tail(pool->ow) ? wp : cols;
    }
    for (int f = 0; f < FB; f++)
        zero_band_except(dband + (size_t)f * dstride, f < nf ? lo : 0, f < nf ? hi : 0, cols,
                         wp, used);
    for (int f = 0; f < nf; f++) {
        float *d = dband + (size_t)f * dstride;
        size_t plane = (size_t)n * g->f + fb + f;
        if (!pool) {
            for (int r = 0; r < nb; r++)
                memcpy(d + (size_t)r * wp, dy + (plane * g->oh + oy0 + r) * g->ow,
                       sizeof(float) * (size_t)g->ow);
            continue;
        }
        /* windows that overlap the band; a window's maximum may fall either side of its edge */
        size_t pohw = (size_t)pool->oh * pool->ow, base = (size_t)(fb + f) * ohw;
        for (int py = oy0 / pool->stride; py < pool->oh && py * pool->stride < oy0 + nb; py++) {
            size_t at = plane * pohw + (size_t)py * pool->ow;
            int r0 = py * 2 - oy0;
            if (pool->size == 2 && pool->stride == 2 && r0 >= 0 && r0 + 1 < nb) {
                /* 2x2 windows inside the band: both rows written whole, branch-free, so that
                 * it vectorises (each window puts its gradient in one of its four places) */
                float *d0 = d + (size_t)r0 * wp;
                unpool_row(dy + at, relu_y ? relu_y + at : NULL, argmax + at, d0, d0 + wp,
                           pool->ow, g->ow, (int32_t)(base + (size_t)(py * 2) * g->ow), wp);
                continue;
            }
            long corner = (long)py * pool->stride * g->ow;   /* the windows' first row */
            for (int px = 0; px < pool->ow; px++) {
                /* row and column within the window: no division, and no branch on which
                 * row held the maximum (that is a coin toss, and mispredicted half the time) */
                long off = (long)argmax[at + px] - (long)base - corner - (long)px * pool->stride;
                int wy = 0;
                for (int i = 1; i < pool->size; i++)
                    wy += off >= (long)i * g->ow;
                off -= (long)wy * g->ow;
                int row = py * pool->stride + wy - oy0;
                if (row >= 0 && row < nb)
                    d[(size_t)row * wp + (size_t)px * pool->stride + (size_t)off] =
                        !relu_y || relu_y[at + px] > 0.0f ? dy[at + px] : 0.0f;
            }
        }
    }
}

/* The filter gradient's register block: FB filters x kyb <= KYB kernel rows x KXB neighbouring
 * taps of each, from ky and kx on; each dy vector loaded feeds kyb * KXB taps, each input
 * vector FB filters. Sums q in [q0, q1) of dband's FB planes times the input plane at the taps'
 * offsets, added to pt[(row * kw + tap) * FB + filter] for the taps < kw - kx that exist: the
 * others read the plane's slack (the padding's columns past the band's, zeros past q1 in
 * dband) and are dropped. kyb is a constant where this is inlined: a 3x3 kernel's last row
 * alone, instead of a pair whose second row is dropped (a quarter of the FMAs). */
static inline __attribute__((always_inline)) void filter_taps(const float *dband, size_t dstride,
                                                              const float *plane, int wp, int q0,
                                                              int q1, int kyb, int ky, int kw,
                                                              int kx, vf *pt)
{
    const float *s = plane + ky * wp + kx;
    vf acc[FB][KYB][KXB];
#pragma GCC unroll 16
    for (int f = 0; f < FB; f++)
#pragma GCC unroll 16
        for (int j = 0; j < KYB; j++)
#pragma GCC unroll 16
            for (int k = 0; k < KXB; k++)
                acc[f][j][k] = vsplat(0);
    for (int q = q0; q < q1; q += VL) {
#if VEC_BYTES >= 64
        vf d[FB];
#pragma GCC unroll 16
        for (int f = 0; f < FB; f++) {
            d[f] = vload(dband + (size_t)f * dstride + q);
            /* in a register: for a last row alone GCC loaded it again for each of its FMAs,
             * 15 loads for 12 FMAs, more than a Zen 4 core loads in their time */
            __asm__("" : "+v"(d[f]));
        }
#pragma GCC unroll 16
        for (int j = 0; j < KYB; j++)
#pragma GCC unroll 16
            for (int k = 0; k < KXB; k++) {
                if (j >= kyb)
                    continue;
                vf xv = vload(s + j * wp + q + k);
#pragma GCC unroll 16
                for (int f = 0; f < FB; f++)
                    acc[f][j][k] = vfma(d[f], xv, acc[f][j][k]);
            }
#else
        /* the row's input vectors first, then each filter's dy vector for its KXB sums: a
         * 3-tap row in one block (in blocks of 2, a quarter of the FMAs were for a dropped
         * fourth tap) */
        vf xv[KXB];
#pragma GCC unroll 16
        for (int k = 0; k < KXB; k++) {
            xv[k] = vload(s + q + k);
            __asm__("" : "+v"(xv[k]));
        }
#pragma GCC unroll 16
        for (int f = 0; f < FB; f++) {
            vf d = vload(dband + (size_t)f * dstride + q);
#pragma GCC unroll 16
            for (int k = 0; k < KXB; k++)
                acc[f][0][k] = vfma(d, xv[k], acc[f][0][k]);
        }
#endif
    }
    /* constant bounds and tests inside: acc stays in registers */
#pragma GCC unroll 16
    for (int j = 0; j < KYB; j++)
#pragma GCC unroll 16
        for (int k = 0; k < KXB; k++)
#pragma GCC unroll 16
            for (int f = 0; f < FB; f++)
                if (j < kyb && k < kw - kx)
                    pt[((size_t)j * kw + k) * FB + f] += acc[f][j][k];
}

/* Every tap of a channel's kernel, by register blocks of KYB rows (one for the last). */
_Static_assert(KYB <= 2, "channel_taps leaves a last block of one row");
static void channel_taps(const float *dband, size_t dstride, const float *plane, int wp, int q0,
                         int q1, int kh, int kw, vf *pt)
{
    for (int ky = 0; ky < kh; ky += KYB)
        for (int kx = 0; kx < kw; kx += KXB) {
            vf *at = pt + ((size_t)ky * kw + kx) * FB;
            if (kh - ky >= KYB)
                filter_taps(dband, dstride, plane, wp, q0, q1, KYB, ky, kw, kx, at);
            else
                filter_taps(dband, dstride, plane, wp, q0, q1, 1, ky, kw, kx, at);
        }
}

/* bs[f] += dband's plane f, lane-wise (the band is zero where dy is not), each lane's sum in
 * order of q. The filters side by side: one after another, each add waited on the one before
 * (2% of DAHL 62x84x3's fused backward). */
static void bias_sums(const float *dband, size_t dstride, int nf, int Q, vf *bs)
{
    vf s[FB];
#pragma GCC unroll 16
    for (int f = 0; f < FB; f++)
        s[f] = f < nf ? bs[f] : vsplat(0);
    for (int q = 0; q < Q; q += VL)
#pragma GCC unroll 16
        for (int f = 0; f < FB; f++)
            if (f < nf)
                s[f] += vload(dband + (size_t)f * dstride + q);
#pragma GCC unroll 16
    for (int f = 0; f < FB; f++)
        if (f < nf)
            bs[f] = s[f];
}

/* dW[f][c][tap] = sum over q of dy[f][q] * in[c][q + tap offset], with dy laid on the same
 * row stride as the padded input (zeros in the dropped columns). Input and dy are laid out a
 * band of rows at a time; chunks of q stay in L1 while every (channel, tap) pair passes over
 * them. With a pool, dy is the gradient of the pooled output (see dy_band). */
int NAME(conv_direct_backward_filter, ISA)(const conv_geom *g, conv_input x, const float *dy,
                                            float *dwt, float *dbias, int n0, int n1, int f0,
                                            int f1, int accumulate, const pool_geom *pool,
                                            const int32_t *argmax, const float *relu_y)
{
    int wp = g->w + 2 * g->pad, taps = g->kh * g->kw, nblocks = (f1 - f0 + FB - 1) / FB;
    /* the same bands with or without a pool: the same summation order, the same result */
    int band = band_rows(wp, g->c, g->oh, 1), rows_in = band + g->kh - 1;
    size_t stride = (size_t)rows_in * wp + QCHUNK + g->kw + wp, pblock = (size_t)FB * g->c * taps;
    size_t dstride = round_up((size_t)band * wp, QCHUNK);
    float *in = ops_scratch(SCRATCH_PACK_A, stride * g->c);
    float *dband = ops_scratch(SCRATCH_COLUMNS, dstride * FB);
    vf *part = (vf *)ops_scratch(SCRATCH_PARTIALS,
                                 (size_t)VL * (pblock + FB) * nblocks);
    /* Through a relu without a pool: a sample's gradient masked at once into a buffer that
     * stays in cache for its bands (masked as the bands read it, a row at a time, the loads
     * of the two streams stalled: the backward took 10% longer than with relu apart). */
    size_t per_sample = (size_t)g->f * g->oh * g->ow;
    float *masked = relu_y && !pool ? ops_scratch(SCRATCH_PACK_B, per_sample) : NULL;
    if (!in || !dband || !part || (relu_y && !pool && !masked))
        return -1;
    vf *bsum = part + pblock * nblocks;   /* the bias sums, by lane, FB per block */
    if (!accumulate)
        for (int f = f0; f < f1; f++) {
            memset(dwt + (size_t)(f - f0) * g->c * taps, 0, sizeof(float) * (size_t)g->c * taps);
            if (dbias)
                dbias[f - f0] = 0;
        }
    /* Vector partial sums per (filter, channel, tap), over all the samples, reduced once at
     * the end: reducing them per sample cost a tenth of the function on cifar-shaped's first
     * layer. The samples go in order: a fixed summation order. */
    memset(part, 0, sizeof(vf) * (pblock + FB) * nblocks);
    for (int n = n0; n < n1; n++) {
        if (masked)   /* then read as sample 0 */
            through_relu(masked, dy + n * per_sample, relu_y + n * per_sample, per_sample);
        for (int oy0 = 0; oy0 < g->oh; oy0 += band) {
            int nb = g->oh - oy0 < band ? g->oh - oy0 : band, Q = nb * wp;
            pad_sample_rows(x, g, n, wp, oy0, nb + g->kh - 1, stride, in);
            for (int fb = f0; fb < f1; fb += FB) {
                int nf = f1 - fb < FB ? f1 - fb : FB;
                vf *pb = part + (size_t)((fb - f0) / FB) * pblock;
                if (masked)
                    dy_band(g, masked, NULL, NULL, NULL, 0, fb, nf, oy0, nb, wp, dstride, dband);
                else
                    dy_band(g, dy, pool, argmax, relu_y, n, fb, nf, oy0, nb, wp, dstride,
                            dband);
                bias_sums(dband, dstride, nf, Q, bsum + (size_t)((fb - f0) / FB) * FB);
                for (int q0 = 0; q0 < Q; q0 += QCHUNK) {
                    int q1 = q0 + QCHUNK < Q ? q0 + QCHUNK : Q;
                    for (int c = 0; c < g->c; c++)
                        channel_taps(dband, dstride, in + (size_t)c * stride, wp, q0, q1, g->kh,
                                     g->kw, pb + (size_t)c * taps * FB);
                }
            }
        }
    }
    for (int fb = f0; fb < f1; fb += FB) {
        int nf = f1 - fb < FB ? f1 - fb : FB;
        const vf *pb = part + (size_t)((fb - f0) / FB) * pblock;
        for (int f = 0; f < nf; f++)
            for (int ct = 0; ct < g->c * taps; ct++) {
                float sum = 0;
                for (int i = 0; i < VL; i++)
                    sum += pb[(size_t)ct * FB + f][i];
                dwt[((size_t)(fb - f0 + f) * g->c) * taps + ct] += sum;
            }
    }
    if (dbias)
        for (int f = f0; f < f1; f++) {
            float s = 0;
            for (int i = 0; i < VL; i++)
                s += bsum[(size_t)((f - f0) / FB) * FB + (f - f0) % FB][i];
            dbias[f - f0] += s;
        }
    return 0;
}
