#include "ops/conv.h"
#include "common/env_switches.h"

#include "ops/conv_direct.h"
#include "ops/conv_lanes.h"
#include "ops/conv_winograd.h"
#include "ops/cpu.h"
#include "ops/gemm.h"
#include "ops/layers.h"
#include "ops/scratch.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* a * b * c, unless it overflows or exceeds INT_MAX. */
static int product_fits(long a, long b, long c)
{
    long ab, abc;
    return !__builtin_mul_overflow(a, b, &ab) && !__builtin_mul_overflow(ab, c, &abc) &&
           abc <= INT_MAX;
}

int conv_geom_init(conv_geom *g, int c, int h, int w, int f, int kh, int kw, int stride, int pad)
{
    if (c < 1 || h < 1 || w < 1 || f < 1 || kh < 1 || kw < 1 || stride < 1 || pad < 0)
        return -1;
    long hp = (long)h + 2L * pad, wp = (long)w + 2L * pad;   /* no int overflow on any input */
    if (hp < kh || wp < kw)
        return -1;
    long oh = (hp - kh) / stride + 1, ow = (wp - kw) / stride + 1;
    /* The kernels index a sample's planes, and a filter's weights, with int. */
    if (!product_fits(c, hp, wp) || !product_fits(f, oh, ow) || !product_fits(c, kh, kw))
        return -1;
    *g = (conv_geom){c, h, w, f, kh, kw, stride, pad, (int)oh, (int)ow, 0, 0};
    return 0;
}

static int is_pointwise(const conv_geom *g)
{
    return g->kh == 1 && g->kw == 1 && g->stride == 1 && g->pad == 0;
}

/* One sample's input -> columns: row (c, i, j) of the kernel, column (oy, ox) of the output. */
static void im2col(const conv_geom *g, const float *x, float *col)
{
    int ohw = g->oh * g->ow;
    for (int c = 0; c < g->c; c++)
        for (int i = 0; i < g->kh; i++)
            for (int j = 0; j < g->kw; j++) {
                float *dst = col + (size_t)((c * g->kh + i) * g->kw + j) * ohw;
                const float *src = x + (size_t)c * g->h * g->w;
                for (int oy = 0; oy < g->oh; oy++) {
                    int y = oy * g->stride - g->pad + i;
                    float *d = dst + oy * g->ow;
                    if (y < 0 || y >= g->h) {
                        memset(d, 0, sizeof(float) * (size_t)g->ow);
                        continue;
                    }
                    const float *row = src + (size_t)y * g->w;
                    if (g->stride == 1) {   /* contiguous: copy the valid span, pad the edges */
                        int x0 = j - g->pad;
                        int lo = x0 < 0 ? -x0 : 0;
                        int hi = g->ow;
                        if (x0 + hi > g->w)
                            hi = g->w - x0;
                        for (int ox = 0; ox < lo && ox < g->ow; ox++)
                            d[ox] = 0;
                        if (hi > lo)
                            memcpy(d + lo, row + x0 + lo, sizeof(float) * (size_t)(hi - lo));
                        for (int ox = hi > lo ? hi : lo; ox < g->ow; ox++)
                            d[ox] = 0;
                    } else {
                        for (int ox = 0; ox < g->ow; ox++) {
                            int xx = ox * g->stride - g->pad + j;
                            d[ox] = xx >= 0 && xx < g->w ? row[xx] : 0.0f;
                        }
                    }
                }
            }
}

/* The adjoint of im2col: add columns back into one sample's (zeroed) input gradient. */
static void col2im_add(const conv_geom *g, const float *col, float *dx)
{
    int ohw = g->oh * g->ow;
    for (int c = 0; c < g->c; c++)
        for (int i = 0; i < g->kh; i++)
            for (int j = 0; j < g->kw; j++) {
                const float *src = col + (size_t)((c * g->kh + i) * g->kw + j) * ohw;
                float *dst = dx + (size_t)c * g->h * g->w;
                for (int oy = 0; oy < g->oh; oy++) {
                    int y = oy * g->stride - g->pad + i;
                    if (y < 0 || y >= g->h)
                        continue;
                    float *row = dst + (size_t)y * g->w;
                    const float *s = src + oy * g->ow;
                    for (int ox = 0; ox < g->ow; ox++) {
                        int xx = ox * g->stride - g->pad + j;
                        if (xx >= 0 && xx < g->w)
                            row[xx] += s[ox];
                    }
                }
            }
}

/* The column matrix of sample x: x itself for a pointwise conv, else im2col into scratch. */
static const float *columns(const conv_geom *g, const float *x)
{
    if (is_pointwise(g))
        return x;
    float *col = ops_scratch(SCRATCH_COLUMNS,
                             (size_t)g->c * g->kh * g->kw * (size_t)g->oh * g->ow);
    if (col)
        im2col(g, x, col);
    return col;
}

static int forward_im2col(const conv_geom *g, const float *x, const float *wt, const float *bias,
                          float *y, int n0, int n1, int f0, int f1)
{
    int ohw = g->oh * g->ow, ckk = g->c * g->kh * g->kw, nf = f1 - f0;
    for (int n = n0; n < n1; n++) {
        const float *col = columns(g, x + (size_t)n * g->c * g->h * g->w);
        float *yn = y + ((size_t)n * g->f + f0) * ohw;
        if (!col)
            return -1;
        for (int f = 0; f < nf; f++) {   /* start from the bias, GEMM adds W * col */
            float b = bias ? bias[f0 + f] : 0.0f;
            for (int p = 0; p < ohw; p++)
                yn[(size_t)f * ohw + p] = b;
        }
        if (ops_sgemm(0, 0, nf, ohw, ckk, 1.0f, wt + (size_t)f0 * ckk, ckk, col, ohw, 1.0f, yn, ohw))
            return -1;
    }
    return 0;
}

static int backward_input_im2col(const conv_geom *g, const float *dy, const float *wt, float *dx,
                                 int n0, int n1)
{
    int ohw = g->oh * g->ow, ckk = g->c * g->kh * g->kw, chw = g->c * g->h * g->w;
    for (int n = n0; n < n1; n++) {
        const float *dyn = dy + (size_t)n * g->f * ohw;
        float *dxn = dx + (size_t)n * chw;
        if (is_pointwise(g)) {   /* dx = W^T dy directly */
            if (ops_sgemm(1, 0, ckk, ohw, g->f, 1.0f, wt, ckk, dyn, ohw, 0.0f, dxn, ohw))
                return -1;
            continue;
        }
        float *dcol = ops_scratch(SCRATCH_COLUMNS, (size_t)ckk * ohw);
        if (!dcol || ops_sgemm(1, 0, ckk, ohw, g->f, 1.0f, wt, ckk, dyn, ohw, 0.0f, dcol, ohw))
            return -1;
        memset(dxn, 0, sizeof(float) * (size_t)chw);
        col2im_add(g, dcol, dxn);
    }
    return 0;
}

static int backward_filter_im2col(const conv_geom *g, const float *x, const float *dy, float *dwt,
                                  float *dbias, int n0, int n1, int f0, int f1, int accumulate)
{
    int ohw = g->oh * g->ow, ckk = g->c * g->kh * g->kw, nf = f1 - f0;
    for (int n = n0; n < n1; n++) {
        const float *col = columns(g, x + (size_t)n * g->c * g->h * g->w);
        const float *dyn = dy + ((size_t)n * g->f + f0) * ohw;
        int add = accumulate || n > n0;
        if (!col || ops_sgemm(0, 1, nf, ckk, ohw, 1.0f, dyn, ohw, col, ohw, add ? 1.0f : 0.0f,
                              dwt, ckk))
            return -1;
        if (dbias)
            for (int f = 0; f < nf; f++) {
                float s = 0;
                for (int p = 0; p < ohw; p++)
                    s += dyn[(size_t)f * ohw + p];
                dbias[f] = add ? dbias[f] + s : s;
            }
    }
    return 0;
}

/* Stride 1 never goes to im2col + GEMM: the direct and wide kernels beat it on every shape
 * measured with ./build.sh bench ops (conv_*_direct, _wide and _im2col), from DAHL's 4 filters
 * to 128. */
static int strategy = -1;   /* -1: not read from the environment yet */

void conv_set_strategy(conv_strategy s) { __atomic_store_n(&strategy, (int)s, __ATOMIC_RELEASE); }

static conv_strategy current_strategy(void)
{
    int s = __atomic_load_n(&strategy, __ATOMIC_ACQUIRE);
    if (s >= 0)
        return (conv_strategy)s;
    const char *env = env_switch_value(ENV_CONV);
    s = CONV_AUTO;
    for (int i = CONV_DIRECT; env && i < CONV_STRATEGIES; i++)
        if (!strcmp(env, conv_path_name((conv_strategy)i)))
            s = i;
    conv_set_strategy((conv_strategy)s);
    return (conv_strategy)s;
}

const char *conv_path_name(conv_strategy s)
{
    static const char *const names[CONV_STRATEGIES] = {"auto",   "direct",   "wide",
                                                        "im2col", "winograd", "winograd4"};
    return s >= 0 && s < CONV_STRATEGIES ? names[s] : "auto";
}

/* The wide kernel wins where its sums are long and its vectors of filters (or channels) full:
 * the filter gradient from 32 channels and 17 filters up (below, the direct one, fused with
 * the max-pool after it, is faster in training); forward and input gradient from 64 channels. */
static int wide_wins(const conv_geom *g, conv_pass pass)
{
    if (pass == CONV_BACKWARD_FILTER)
        return g->f > CONV_DIRECT_MAX_FILTERS && g->c >= 32;
    return g->f > CONV_DIRECT_MAX_FILTERS && g->c >= 64;
}

/* Winograd needs sums long enough over channels, and filters enough, for its GEMMs to outrun
 * the transforms. Measured in training (a 28x28 network whose second layer, 14x14, took each
 * shape; AVX-512 and AVX2 alike): from 4 channels and 16 filters, or 8 and 8, it beats the
 * direct and wide kernels, which cannot fuse the max-pool where the input gradient is wanted
 * (deeper's 8 -> 16 layer: 1.4x, 16 -> 16 1.7x, 32 -> 16 2.4x, 4 -> 16 1.15x, 8 -> 8 1.05x);
 * below, it loses (4 -> 8 0.87x, 16 -> 4 0.62x). First layers (1 to 3 channels) keep the
 * direct kernel, fused without an input gradient. */
static int winograd_wins(const conv_geom *g)
{
    return g->c >= 4 && g->f >= 8 && g->c * g->f >= 64;
}

/* Multiplies per sample and channel pair on the F(mxm) path: whole tiles, wasted outputs too. */
static int winograd_points(const conv_geom *g, int m)
{
    return ((g->oh + m - 1) / m) * ((g->ow + m - 1) / m) * (m + 2) * (m + 2);
}

/* F(4x4) computes whole 4x4 tiles and wastes the outputs past the edge (but for its half tiles
 * by lanes: conv_winograd4_points); it wins where it still needs a fifth fewer multiplies than
 * F(2x2). Where the sides are multiples of 4 (44% fewer) it is a quarter faster (./build.sh
 * bench ops, 32x32x32 to 32, every pass; vgg-small trains 5% faster); on wide-28's 14x14 in
 * whole tiles (27% fewer, 31% of its outputs wasted) it is 10% faster in bench ops and wide-28
 * trains 18% faster. */
static int winograd4_wins(const conv_geom *g)
{
    return 5 * conv_winograd4_points(g) <= 4 * winograd_points(g, 2);
}

double conv_executed_share(const conv_geom *g, conv_strategy s)
{
    double direct = (double)g->oh * g->ow * 9;   /* Winograd's kernels are 3x3 */
    if (s == CONV_WINOGRAD)
        return winograd_points(g, 2) / direct;
    return s == CONV_WINOGRAD4 ? conv_winograd4_points(g) / direct : 1;
}

conv_strategy conv_path(const conv_geom *g, conv_pass pass)
{
    conv_strategy s = current_strategy();
    if (conv_winograd_fits(g) && (s == CONV_WINOGRAD || s == CONV_WINOGRAD4))
        return s;
    if (conv_winograd_fits(g) && s == CONV_AUTO && winograd_wins(g))
        return winograd4_wins(g) ? CONV_WINOGRAD4 : CONV_WINOGRAD;
    if (s == CONV_WINOGRAD || s == CONV_WINOGRAD4)   /* a shape it does not compute: as auto */
        s = CONV_AUTO;
    if (g->stride != 1 || s == CONV_IM2COL)
        return CONV_IM2COL;
    if (g->kh * g->kw > CONV_WIDE_MAX_TAPS)
        return CONV_DIRECT;
    return s == CONV_WIDE || (s == CONV_AUTO && wide_wins(g, pass)) ? CONV_WIDE : CONV_DIRECT;
}

int conv_uses_direct(const conv_geom *g)
{
    return conv_path(g, CONV_FORWARD) == CONV_DIRECT &&
           conv_path(g, CONV_BACKWARD_FILTER) == CONV_DIRECT;
}

#define DISPATCH_ISA(fn, ...)                                                               \
    (ops_isa_active() == OPS_ISA_AVX512 ? fn##_avx512(__VA_ARGS__)                          \
     : ops_isa_active() == OPS_ISA_AVX2 ? fn##_avx2(__VA_ARGS__)                            \
                                        : fn##_portable(__VA_ARGS__))
#define DISPATCH(fn, ...) DISPATCH_ISA(conv_direct_##fn, __VA_ARGS__)
#define DISPATCH_WIDE(fn, ...) DISPATCH_ISA(conv_wide_##fn, __VA_ARGS__)

/* On AVX-512, the direct path of a first layer (3x3, few channels, filters by 16) runs along
 * filters (conv_lanes.h): wide-28's 1 -> 64 layer took 13% of its training time along output
 * pixels (docs/kernels.md). By the layer's shape alone, so that every pass of a layer, fused
 * or not, on any range of filters, sums in the same order. */
static int lanes_fit(const conv_geom *g)
{
    return ops_isa_active() == OPS_ISA_AVX512 && g->stride == 1 && g->kh == 3 && g->kw == 3 &&
           g->c <= CONV_LANES_MAX_CHANNELS && g->f % CONV_LANES_FILTERS == 0;
}

int conv_lanes_layout(const conv_geom *g, const pool_geom *pool, int which,
                      int with_input_gradient)
{
    if (ops_isa_active() < OPS_ISA_AVX2 || g->f % CONV_LANES_FILTERS ||
        (pool && (pool->size != 2 || pool->stride != 2)))
        return 0;
    if (conv_path(g, CONV_FORWARD) == CONV_WINOGRAD4)
        return conv_winograd4_by_lanes(g);   /* winograd_f4_lanes_impl.h */
    return which == CONV_LANES_OUTPUT && !with_input_gradient && conv_uses_direct(g) &&
           lanes_fit(g);
}

/* A call in channel lanes on a path that cannot take them fails: its results would be read
 * in the wrong places. */
static int layout_refused(const conv_geom *g, const pool_geom *p, int with_input_gradient)
{
    int dx = with_input_gradient;
    return (g->in_lanes && !conv_lanes_layout(g, p, CONV_LANES_INPUT, dx)) ||
           (g->out_lanes && !conv_lanes_layout(g, p, CONV_LANES_OUTPUT, dx));
}

/* The direct path's forward (pooled 2x2 on the lanes kernel; other windows on the direct
 * kernel, which gives the same bits). */
static int direct_forward(const conv_geom *g, conv_input x, const float *wt, const float *bias,
                          float *y, int n0, int n1, int f0, int f1, const pool_geom *p,
                          int32_t *argmax, int relu)
{
    if (lanes_fit(g) && (!p || (p->size == 2 && p->stride == 2)))
        return conv_lanes_forward(g, x, wt, bias, y, n0, n1, f0, f1, p, argmax, relu);
    return DISPATCH(forward, g, x, wt, bias, y, n0, n1, f0, f1, p, argmax, relu);
}

static int direct_backward_filter(const conv_geom *g, conv_input x, const float *dy, float *dwt,
                                  float *dbias, int n0, int n1, int f0, int f1, int accumulate,
                                  const pool_geom *p, const int32_t *argmax, const float *relu_y)
{
    if (lanes_fit(g))
        return conv_lanes_backward_filter(g, x, dy, dwt, dbias, n0, n1, f0, f1, accumulate, p,
                                          argmax, relu_y);
    return DISPATCH(backward_filter, g, x, dy, dwt, dbias, n0, n1, f0, f1, accumulate, p,
                    argmax, relu_y);
}

/* The Winograd tile's side: every pass of a layer takes the same path. */
static int winograd_tile(const conv_geom *g)
{
    return conv_path(g, CONV_FORWARD) == CONV_WINOGRAD4 ? 4 : 2;
}

int ops_conv2d_forward(const conv_geom *g, const float *x, const float *wt, const float *bias,
                   float *y, int n0, int n1, int f0, int f1)
{
    return ops_conv2d_forward_in(g, (conv_input){x, NULL, 0, 0}, wt, bias, y, n0, n1, f0, f1);
}

/* One sample of bytes as floats, for the im2col path. */
static const float *bytes_to_floats(const conv_geom *g, const uint8_t *x, float scale)
{
    size_t n = (size_t)g->c * g->h * g->w;
    float *f = ops_scratch(SCRATCH_INPUT, n);
    if (f)
        for (size_t i = 0; i < n; i++)
            f[i] = (float)x[i] * scale;
    return f;
}

int ops_conv2d_forward_in(const conv_geom *g, conv_input x, const float *wt, const float *bias,
                      float *y, int n0, int n1, int f0, int f1)
{
    if (layout_refused(g, NULL, 0))
        return -1;
    switch (conv_path(g, CONV_FORWARD)) {
    case CONV_DIRECT:
        return direct_forward(g, x, wt, bias, y, n0, n1, f0, f1, NULL, NULL, 0);
    case CONV_WIDE:
        return DISPATCH_WIDE(forward, g, x, wt, bias, y, n0, n1, f0, f1);
    case CONV_WINOGRAD:
    case CONV_WINOGRAD4:
        return conv_winograd_forward(g, winograd_tile(g), x, wt, bias, y, n0, n1, f0, f1, NULL,
                                     NULL, 0);
    default:
        break;
    }
    if (x.f)
        return forward_im2col(g, x.f, wt, bias, y, n0, n1, f0, f1);
    size_t out = (size_t)g->f * g->oh * g->ow;
    for (int n = n0; n < n1; n++) {
        const float *xf = bytes_to_floats(g, x.b[n], x.scale);
        if (!xf || forward_im2col(g, xf, wt, bias, y + n * out, 0, 1, f0, f1))
            return -1;
    }
    return 0;
}

int ops_conv2d_backward_input(const conv_geom *g, const float *dy, const float *wt, float *dx,
                          int n0, int n1)
{
    if (layout_refused(g, NULL, 1))
        return -1;
    switch (conv_path(g, CONV_BACKWARD_INPUT)) {
    case CONV_DIRECT:
        return DISPATCH(backward_input, g, dy, wt, dx, n0, n1);
    case CONV_WIDE:
        return DISPATCH_WIDE(backward_input, g, dy, wt, dx, n0, n1);
    case CONV_WINOGRAD:
    case CONV_WINOGRAD4:
        return conv_winograd_backward_input(g, winograd_tile(g), dy, wt, dx, n0, n1);
    default:
        return backward_input_im2col(g, dy, wt, dx, n0, n1);
    }
}

int ops_conv2d_backward_filter(const conv_geom *g, const float *x, const float *dy, float *dwt,
                           float *dbias, int n0, int n1, int f0, int f1, int accumulate)
{
    return ops_conv2d_backward_filter_in(g, (conv_input){x, NULL, 0, 0}, dy, dwt, dbias, n0, n1,
                                         f0, f1, accumulate);
}

int ops_conv2d_backward_filter_in(const conv_geom *g, conv_input x, const float *dy, float *dwt,
                              float *dbias, int n0, int n1, int f0, int f1, int accumulate)
{
    if (layout_refused(g, NULL, 0))
        return -1;
    switch (conv_path(g, CONV_BACKWARD_FILTER)) {
    case CONV_DIRECT:
        return direct_backward_filter(g, x, dy, dwt, dbias, n0, n1, f0, f1, accumulate, NULL,
                                      NULL, NULL);
    case CONV_WIDE:
        return DISPATCH_WIDE(backward_filter, g, x, dy, dwt, dbias, n0, n1, f0, f1, accumulate);
    case CONV_WINOGRAD:
    case CONV_WINOGRAD4:
        return conv_winograd_backward(g, winograd_tile(g), x, dy, NULL, dwt, dbias, NULL, n0, n1,
                                      f0, f1, accumulate, NULL, NULL, NULL);
    default:
        break;
    }
    if (x.f)
        return backward_filter_im2col(g, x.f, dy, dwt, dbias, n0, n1, f0, f1, accumulate);
    size_t out = (size_t)g->f * g->oh * g->ow;
    for (int n = n0; n < n1; n++) {   /* in order, as the float function sums them */
        const float *xf = bytes_to_floats(g, x.b[n], x.scale);
        if (!xf || backward_filter_im2col(g, xf, dy + n * out, dwt, dbias, 0, 1, f0, f1,
                                          accumulate || n > n0))
            return -1;
    }
    return 0;
}

/* The Winograd paths, all three passes the same (winograd_tile). */
static int uses_winograd(const conv_geom *g)
{
    conv_strategy s = conv_path(g, CONV_FORWARD);
    return s == CONV_WINOGRAD || s == CONV_WINOGRAD4;
}

int ops_conv2d_backward(const conv_geom *g, conv_input x, const float *dy, const float *wt,
                    float *dwt, float *dbias, float *dx, int n0, int n1)
{
    if (layout_refused(g, NULL, dx != NULL))
        return -1;
    if (uses_winograd(g))
        return conv_winograd_backward(g, winograd_tile(g), x, dy, wt, dwt, dbias, dx, n0, n1, 0,
                                      g->f, 0, NULL, NULL, NULL);
    if (ops_conv2d_backward_filter_in(g, x, dy, dwt, dbias, n0, n1, 0, g->f, 0) ||
        (dx && ops_conv2d_backward_input(g, dy, wt, dx, n0, n1)))
        return -1;
    long per = (long)g->c * g->h * g->w;
    if (dx && x.relu_output && x.f)
        ops_relu_backward(x.f, dx, dx, n0 * per, n1 * per);
    return 0;
}

int conv_pool_fusable(const conv_geom *g, const pool_geom *p)
{
    int windows = p->size == p->stride && p->c == g->f && p->h == g->oh && p->w == g->ow;
    return windows && (conv_uses_direct(g) || (uses_winograd(g) && p->size == 2));
}

int conv_pool_fusable_with_input_gradient(const conv_geom *g, const pool_geom *p)
{
    return conv_pool_fusable(g, p) && uses_winograd(g);
}

/* The fused passes, with a pool or without (p NULL), on the Winograd or the direct path. */
static int forward_fused(const conv_geom *g, conv_input x, const float *wt, const float *bias,
                         const pool_geom *p, int relu, float *y, int32_t *argmax, int n0, int n1)
{
    if (layout_refused(g, p, 0))
        return -1;
    if (uses_winograd(g))   /* pooled and through the relu as each row is stored */
        return conv_winograd_forward(g, winograd_tile(g), x, wt, bias, y, n0, n1, 0, g->f, p,
                                     argmax, relu);
    /* the relu on each pooled value before it is stored (a pass over the pooled rows after
     * them stalled on the stores just made) */
    return direct_forward(g, x, wt, bias, y, n0, n1, 0, g->f, p, argmax, relu);
}

static int backward_fused(const conv_geom *g, conv_input x, const pool_geom *p,
                          const float *relu_y, const float *dy, const int32_t *argmax,
                          const float *wt, float *dwt, float *dbias, float *dx, int n0, int n1,
                          int accumulate)
{
    if (layout_refused(g, p, dx != NULL))
        return -1;
    if (uses_winograd(g))   /* through the relu and unpooled as each row is read */
        return conv_winograd_backward(g, winograd_tile(g), x, dy, wt, dwt, dbias, dx, n0, n1, 0,
                                      g->f, accumulate, p, argmax, relu_y);
    return dx ? -1 : direct_backward_filter(g, x, dy, dwt, dbias, n0, n1, 0, g->f, accumulate, p,
                                            argmax, relu_y);
}

int ops_conv2d_forward_maxpool(const conv_geom *g, conv_input x, const float *wt, const float *bias,
                           const pool_geom *p, int relu, float *y, int32_t *argmax, int n0, int n1)
{
    return forward_fused(g, x, wt, bias, p, relu, y, argmax, n0, n1);
}

int ops_conv2d_backward_maxpool(const conv_geom *g, conv_input x, const pool_geom *p,
                            const float *relu_y, const float *dy, const int32_t *argmax,
                            const float *wt, float *dwt, float *dbias, float *dx, int n0, int n1,
                            int accumulate)
{
    return backward_fused(g, x, p, relu_y, dy, argmax, wt, dwt, dbias, dx, n0, n1, accumulate);
}

int conv_relu_fusable(const conv_geom *g, int with_input_gradient)
{
    return uses_winograd(g) || (conv_uses_direct(g) && !with_input_gradient);
}

int ops_conv2d_forward_relu(const conv_geom *g, conv_input x, const float *wt, const float *bias,
                            float *y, int n0, int n1)
{
    return conv_relu_fusable(g, 0) ? forward_fused(g, x, wt, bias, NULL, 1, y, NULL, n0, n1) : -1;
}

int ops_conv2d_backward_relu(const conv_geom *g, conv_input x, const float *relu_y,
                             const float *dy, const float *wt, float *dwt, float *dbias,
                             float *dx, int n0, int n1)
{
    return conv_relu_fusable(g, dx != NULL)
               ? backward_fused(g, x, NULL, relu_y, dy, NULL, wt, dwt, dbias, dx, n0, n1, 0)
               : -1;
}
