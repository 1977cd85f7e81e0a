/* The wide convolution, vectorised along filters, for layers with many channels and filters
 * (stride 1; conv.c decides). Included by conv_direct{,_avx2,_avx512}.c after
 * conv_direct_impl.h, whose vector helpers and padded planes it shares.
 *
 * The input is padded as for the direct kernel (output pixel q = oy * Wp + ox, tap t reads
 * q + off[t]). Where the direct kernel keeps pixels in a vector and broadcasts weights, this one
 * keeps FV vectors of neighbouring filters (FW of them) and broadcasts input pixels, as oneDNN's
 * kernels do: each broadcast feeds FV FMAs, each weight vector QN pixels, and the filter
 * gradient needs no horizontal sums, because a lane is a filter. */

#define FV 2                   /* filter vectors per register block */
#define FW (FV * VL)           /* filters per block */
#if VEC_BYTES >= 64
#define QN 12                  /* output pixels per forward register block: QN * FV accumulators */
#define TW 9                   /* taps per filter-gradient register block: TW * FV accumulators */
#else
#define QN 6                   /* 16 registers */
#define TW 6
#endif

/* The taps' offsets in a padded plane of row stride ws, padded to whole blocks of TW (with 0:
 * those taps are computed and dropped). */
static void tap_offsets(int kh, int kw, int ws, int *off)
{
    int taps = kh * kw;
    for (int t = 0; t < (int)round_up((size_t)taps, TW); t++)
        off[t] = t < taps ? t / kw * ws + t % kw : 0;
}

/* tile[j][FW] = bias + sum over c, taps of in[c][q0 + j + off[t]] * wg[c][t][FW], j < QN. */
static void wide_block(int cin, int taps, const int *off, const float *in, size_t stride,
                       const float *wg, const float *bias, int q0, float *tile)
{
    vf acc[QN][FV];
#pragma GCC unroll 16
    for (int v = 0; v < FV; v++) {
        vf b = bias ? vload(bias + v * VL) : vsplat(0);
#pragma GCC unroll 16
        for (int j = 0; j < QN; j++)
            acc[j][v] = b;
    }
    for (int c = 0; c < cin; c++) {
        const float *xc = in + (size_t)c * stride + q0, *wc = wg + (size_t)c * taps * FW;
        for (int t = 0; t < taps; t++) {
            const float *s = xc + off[t];
            vf w[FV];
#pragma GCC unroll 16
            for (int v = 0; v < FV; v++)
                w[v] = vload(wc + (size_t)t * FW + v * VL);
#pragma GCC unroll 16
            for (int j = 0; j < QN; j++) {
                vf xb = vsplat(s[j]);
#pragma GCC unroll 16
                for (int v = 0; v < FV; v++)
                    acc[j][v] += xb * w[v];
            }
        }
    }
#pragma GCC unroll 16
    for (int j = 0; j < QN; j++)
#pragma GCC unroll 16
        for (int v = 0; v < FV; v++)
            vstore(tile + (size_t)j * FW + v * VL, acc[j][v]);
}

/* Where a sample's outputs go: position q = r * ws + col of the valid convolution lands at
 * plane[(r - r0) * cols + col - c0] of its output's plane, if inside the window. */
typedef struct wide_window { int ws, r0, rows, c0, cols; } wide_window;

/* Outputs [0, nout) of one sample, from cin padded planes (row stride win.ws, plane stride
 * `stride`) and weights regrouped in blocks of FW outputs ([block][cin][tap][FW]); bias (nout,
 * or NULL) is read FW at a time from bias_fw, a copy padded with zeros. dst: nout planes. A
 * block's outputs gather in outq (FW planes of qstride) before they are copied out a row at a
 * time: scattering the tile straight into planes whose size is a power of two would put every
 * filter's line in the same cache set. */
static void wide_sample(int cin, int kh, int kw, const wide_window *win, const float *in,
                        size_t stride, const float *wg, const float *bias_fw, int nout,
                        float *dst, float *tile, float *outq, size_t qstride)
{
    int taps = kh * kw, q_end = (win->r0 + win->rows) * win->ws, off[CONV_WIDE_MAX_TAPS + TW];
    size_t plane = (size_t)win->rows * win->cols;
    tap_offsets(kh, kw, win->ws, off);
    for (int ob = 0; ob < nout; ob += FW) {
        int no = nout - ob < FW ? nout - ob : FW, q_start = win->r0 * win->ws;
        const float *w = wg + (size_t)(ob / FW) * cin * taps * FW;
        for (int q0 = q_start; q0 < q_end; q0 += QN) {
            wide_block(cin, taps, off, in, stride, w, bias_fw ? bias_fw + ob : NULL, q0, tile);
            for (int j = 0; j < QN; j++)
                for (int o = 0; o < no; o++)
                    outq[(size_t)o * qstride + q0 - q_start + j] = tile[(size_t)j * FW + o];
        }
        for (int o = 0; o < no; o++)
            for (int r = 0; r < win->rows; r++)
                memcpy(dst + (size_t)(ob + o) * plane + (size_t)r * win->cols,
                       outq + (size_t)o * qstride + (size_t)r * win->ws + win->c0,
                       sizeof(float) * (size_t)win->cols);
    }
}

/* outq's plane stride for a window: whole blocks, and not a multiple of 4 KB. */
static size_t wide_qstride(const wide_window *win)
{
    return round_up((size_t)win->rows * win->ws, QN) + 16;
}

/* Regroups into blocks of FW outputs: wg[block][c][t][FW] = get(output, c, t), zeros past nout. */
#define REGROUP_WIDE(wg, nout, cin, taps, get)                                                 \
    for (int o_ = 0; o_ < (int)round_up((size_t)(nout), FW); o_++)                             \
        for (int c_ = 0; c_ < (cin); c_++)                                                     \
            for (int t_ = 0; t_ < (taps); t_++)                                                \
                (wg)[(((size_t)(o_ / FW) * (cin) + c_) * (taps) + t_) * FW + o_ % FW] =        \
                    o_ < (nout) ? get(o_, c_, t_) : 0.0f;

/* The padded planes' stride: the rows, then slack for the last block's pixels and taps. */
static size_t wide_stride(int rows, int ws, int kw) { return (size_t)rows * ws + QN + kw + VL; }

int NAME(conv_wide_forward, ISA)(const conv_geom *g, conv_input x, const float *wt,
                                  const float *bias, float *y, int n0, int n1, int f0, int f1)
{
    int wp = g->w + 2 * g->pad, hp = g->h + 2 * g->pad, taps = g->kh * g->kw, nf = f1 - f0;
    size_t stride = wide_stride(hp, wp, g->kw), nw = round_up((size_t)nf, FW);
    float *in = ops_scratch(SCRATCH_PACK_A, stride * g->c);
    float *wg = ops_scratch(SCRATCH_PACK_B, nw * g->c * taps + nw);
    wide_window win = {wp, 0, g->oh, 0, g->ow};
    size_t qstride = wide_qstride(&win);
    float *tile = ops_scratch(SCRATCH_COLUMNS, (size_t)QN * FW + qstride * FW);
    if (!in || !wg || !tile)
        return -1;
    float *bias_fw = wg + nw * g->c * taps;
    for (size_t f = 0; f < nw; f++)
        bias_fw[f] = bias && (int)f < nf ? bias[f0 + f] : 0.0f;
#define FWD_W(fo, ci, ti) wt[((size_t)(f0 + (fo)) * g->c + (ci)) * taps + (ti)]
    REGROUP_WIDE(wg, nf, g->c, taps, FWD_W)
#undef FWD_W
    size_t out = (size_t)g->f * g->oh * g->ow;
    for (int n = n0; n < n1; n++) {
        pad_sample_rows(x, g, n, wp, 0, hp, stride, in);
        wide_sample(g->c, g->kh, g->kw, &win, in, stride, wg, bias_fw, nf,
                    y + n * out + (size_t)f0 * g->oh * g->ow, tile, tile + QN * FW, qstride);
    }
    return 0;
}

/* dx is the valid convolution of dy padded by the kernel size less one, with the weights flipped
 * and transposed; the output window crops the input padding. */
int NAME(conv_wide_backward_input, ISA)(const conv_geom *g, const float *dy, const float *wt,
                                         float *dx, int n0, int n1)
{
    int taps = g->kh * g->kw, py = g->kh - 1, px = g->kw - 1;
    int wd = g->ow + 2 * px, hd = g->oh + 2 * py;
    size_t stride = wide_stride(hd, wd, g->kw), nw = round_up((size_t)g->c, FW);
    float *in = ops_scratch(SCRATCH_PACK_A, stride * g->f);
    float *wg = ops_scratch(SCRATCH_PACK_B, nw * g->f * taps);
    wide_window win = {wd, g->pad, g->h, g->pad, g->w};
    size_t qstride = wide_qstride(&win);
    float *tile = ops_scratch(SCRATCH_COLUMNS, (size_t)QN * FW + qstride * FW);
    if (!in || !wg || !tile)
        return -1;
#define BWD_W(co, fi, ti) wt[((size_t)(fi) * g->c + (co)) * taps + (taps - 1 - (ti))]
    REGROUP_WIDE(wg, g->c, g->f, taps, BWD_W)
#undef BWD_W
    size_t chw = (size_t)g->c * g->h * g->w;
    for (int n = n0; n < n1; n++) {
        pad_rows(dy + (size_t)n * g->f * g->oh * g->ow, NULL, 0, g->f, g->oh, g->ow, py, px, wd,
                 0, hd, stride, in);
        wide_sample(g->f, g->kh, g->kw, &win, in, stride, wg, NULL, g->c, dx + n * chw, tile,
                    tile + QN * FW, qstride);
    }
    return 0;
}

/* dW[f][c][t] += sum over samples s and pixels q of dyT[s][q][f] * in[s][c][q + off[t]]: FW
 * filters x TW taps of one channel in registers, over all samples before they are added. */
static void wide_filter_block(int ns, int Q, const int *off, const float *in, size_t in_sample,
                              const float *dyt, size_t dyt_sample, size_t fr, float *acc_out)
{
    vf acc[TW][FV];
#pragma GCC unroll 16
    for (int t = 0; t < TW; t++)
#pragma GCC unroll 16
        for (int v = 0; v < FV; v++)
            acc[t][v] = vsplat(0);
    for (int s = 0; s < ns; s++) {
        const float *xs = in + (size_t)s * in_sample, *ds = dyt + (size_t)s * dyt_sample;
        for (int q = 0; q < Q; q++) {
            vf d[FV];
#pragma GCC unroll 16
            for (int v = 0; v < FV; v++)
                d[v] = vload(ds + (size_t)q * fr + v * VL);
#pragma GCC unroll 16
            for (int t = 0; t < TW; t++) {
                vf xb = vsplat(xs[q + off[t]]);
#pragma GCC unroll 16
                for (int v = 0; v < FV; v++)
                    acc[t][v] += xb * d[v];
            }
        }
    }
#pragma GCC unroll 16
    for (int t = 0; t < TW; t++)
#pragma GCC unroll 16
        for (int v = 0; v < FV; v++)
            vstore(acc_out + (size_t)t * FW + v * VL, acc[t][v]);
}

/* dy of filters [f0, f0 + nf) of sample n, transposed to [q][fr] on the input's row stride wp:
 * zeros in the dropped columns and past nf. */
static void transpose_dy(const conv_geom *g, const float *dy, int n, int f0, int nf, int wp,
                         size_t fr, float *dyt)
{
    memset(dyt, 0, sizeof(float) * (size_t)g->oh * wp * fr);
    size_t ohw = (size_t)g->oh * g->ow;
    for (int f = 0; f < nf; f++) {
        const float *d = dy + ((size_t)n * g->f + f0 + f) * ohw;
        for (int oy = 0; oy < g->oh; oy++)
            for (int ox = 0; ox < g->ow; ox++)
                dyt[((size_t)oy * wp + ox) * fr + f] = d[(size_t)oy * g->ow + ox];
    }
}

int NAME(conv_wide_backward_filter, ISA)(const conv_geom *g, conv_input x, const float *dy,
                                          float *dwt, float *dbias, int n0, int n1, int f0,
                                          int f1, int accumulate)
{
    int wp = g->w + 2 * g->pad, hp = g->h + 2 * g->pad, taps = g->kh * g->kw, nf = f1 - f0;
    int ns = n1 > n0 ? n1 - n0 : 0, room = ns ? ns : 1, Q = g->oh * wp, off[64 * 64 + TW];
    size_t stride = wide_stride(hp, wp, g->kw), fr = round_up((size_t)nf, FW);
    size_t in_sample = stride * g->c, dyt_sample = (size_t)Q * fr;
    float *in = ops_scratch(SCRATCH_PACK_A, in_sample * room);
    float *dyt = ops_scratch(SCRATCH_COLUMNS, dyt_sample * room);
    float *acc = ops_scratch(SCRATCH_PARTIALS, (size_t)TW * FW);
    if (!in || !dyt || !acc)
        return -1;
    if (!accumulate) {
        memset(dwt, 0, sizeof(float) * (size_t)nf * g->c * taps);
        if (dbias)
            memset(dbias, 0, sizeof(float) * (size_t)nf);
    }
    for (int s = 0; s < ns; s++) {
        pad_sample_rows(x, g, n0 + s, wp, 0, hp, stride, in + s * in_sample);
        transpose_dy(g, dy, n0 + s, f0, nf, wp, fr, dyt + s * dyt_sample);
    }
    for (int fb = 0; fb < nf && dbias; fb += FW)   /* lane f - fb is filter f */
        for (int v = 0; v < FV; v++) {
            vf b = vsplat(0);
            for (int s = 0; s < ns; s++)
                for (int q = 0; q < Q; q++)
                    b += vload(dyt + s * dyt_sample + (size_t)q * fr + fb + v * VL);
            for (int i = 0; i < VL && fb + v * VL + i < nf; i++)
                dbias[fb + v * VL + i] += b[i];
        }
    tap_offsets(g->kh, g->kw, wp, off);
    for (int fb = 0; fb < nf; fb += FW)
        for (int c = 0; c < g->c; c++)
            for (int t0 = 0; t0 < taps; t0 += TW) {
                wide_filter_block(ns, Q, off + t0, in + (size_t)c * stride, in_sample, dyt + fb,
                                  dyt_sample, fr, acc);
                for (int t = t0; t < taps && t < t0 + TW; t++)
                    for (int f = fb; f < nf && f < fb + FW; f++)
                        dwt[((size_t)f * g->c + c) * taps + t] += acc[(t - t0) * FW + f - fb];
            }
    return 0;
}

#undef FV
#undef FW
#undef QN
#undef TW
