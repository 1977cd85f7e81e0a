/* frugal's OpenCL kernels (OpenCL C 1.2, float32, NCHW): the device versions of the CPU kernels
 * in ops/, one work-item per output value unless said. A work-item finds its place with 32-bit
 * divisions (kernels.c launches fewer than 2^32 work-items): a GPU takes several times as long
 * over a 64-bit one, and many kernels here do little else. Every buffer comes with an offset in
 * elements: a handle's part sits at an offset in its buffer's device copy. Every sum adds its
 * terms in an order set by the sizes alone, so a device gives the same result every run; it
 * differs from the CPU's within float rounding. */

#ifdef HAVE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#define G __global

/* ---- loading a chunk ---- */

/* out[s][k] = pixels[idx(s)][k] * scale, idx(s) = order[first + s] (shuffled) or first + s;
 * labels too. Global size: n * per. */
__kernel void load_chunk(G const uchar *pixels, ulong po, G const uchar *labels_in, ulong lio,
                         G const long *order, ulong oo, int shuffled, long first, long per,
                         float scale, G float *out, ulong outo, G uchar *labels, ulong lo)
{
    uint i = get_global_id(0), s = i / (uint)per, k = i % (uint)per;
    long idx = shuffled ? order[oo + first + s] : first + s;
    out[outo + i] = (float)pixels[po + idx * per + k] * scale;
    if (k == 0)
        labels[lo + s] = labels_in[lio + idx];
}

/* ---- convolution ---- */

/* A work-item of conv_forward computes CONV_ROWS output rows of one column for CONV_FILTERS
 * filters: each input value it loads serves CONV_FILTERS filters and each weight CONV_ROWS
 * rows, and neighbouring work-items take neighbouring columns, so a warp's loads are one
 * contiguous run (a work-item per output loaded two values per multiply-add; four outputs of a
 * row per work-item, until 2026-12, loaded a warp's inputs four apart). Kernels.c's global
 * size counts them. */
#define CONV_ROWS 4
#define CONV_FILTERS 4

/* y[n][f0 + j] for j < nf, with bias (after the F*C*KH*KW weights): each output summed in the
 * order bias, then c, ky, kx ascending (a tap in the padding adds zero). Global:
 * n * ceil(nf / CONV_FILTERS) * ceil(OH / CONV_ROWS) * OW. */
__kernel void conv_forward(G const float *x, ulong xo, G const float *w, ulong wo, G float *y,
                           ulong yo, int C, int H, int W, int F, int KH, int KW, int stride,
                           int pad, int OH, int OW, int f0, int nf)
{
    uint i = get_global_id(0), bands = (OH + CONV_ROWS - 1) / CONV_ROWS;
    uint groups = (nf + CONV_FILTERS - 1) / CONV_FILTERS;
    int ox = (int)(i % OW), oy0 = (int)(i / OW % bands) * CONV_ROWS;
    int fg = (int)(i / OW / bands % groups) * CONV_FILTERS, n = (int)(i / OW / bands / groups);
    int fa = f0 + fg, filters = min(CONV_FILTERS, nf - fg), ix0 = ox * stride - pad;
    float acc[CONV_ROWS][CONV_FILTERS];
    for (int j = 0; j < CONV_FILTERS; j++) {
        float b = j < filters ? w[wo + (size_t)F * C * KH * KW + fa + j] : 0.0f;
        for (int r = 0; r < CONV_ROWS; r++)
            acc[r][j] = b;
    }
    for (int c = 0; c < C; c++) {
        G const float *xc = x + xo + ((size_t)n * C + c) * H * W;
        G const float *wc = w + wo + ((size_t)fa * C + c) * KH * KW;
        for (int ky = 0; ky < KH; ky++)
            for (int kx = 0; kx < KW; kx++) {
                int ix = ix0 + kx, column_inside = ix >= 0 && ix < W;
                float wv[CONV_FILTERS];
                for (int j = 0; j < CONV_FILTERS; j++)
                    wv[j] = j < filters ? wc[(size_t)j * C * KH * KW + ky * KW + kx] : 0.0f;
                for (int r = 0; r < CONV_ROWS; r++) {
                    int iy = (oy0 + r) * stride - pad + ky;
                    float v = column_inside && iy >= 0 && iy < H ? xc[iy * W + ix] : 0.0f;
                    for (int j = 0; j < CONV_FILTERS; j++)
                        acc[r][j] += v * wv[j];
                }
            }
    }
    for (int r = 0; r < CONV_ROWS; r++)   /* constant bounds: acc stays in registers */
        for (int j = 0; j < CONV_FILTERS; j++)
            if (oy0 + r < OH && j < filters)
                y[yo + (((size_t)n * F + fa + j) * OH + oy0 + r) * OW + ox] = acc[r][j];
}

/* The first tap (ascending) of a kernel dimension that lands on an output for input position
 * r = i + pad: taps k = r, r - stride, ... from the output at r / stride down, within [0, K)
 * and above the last output (r - (O - 1) * stride). */
static int first_tap(int r, int stride, int O)
{
    int k = r % stride, lowest = r - (O - 1) * stride;
    return k >= lowest ? k : k + (lowest - k + stride - 1) / stride * stride;
}

/* Where input value i of n * C * H * W (sample n, channel c) gets its gradient from: the taps
 * ky0..ky1 and kx0..kx1 (by stride) that land on an output, the first at output (oy0, ox0),
 * the others one output up or left each. */
typedef struct landing { int n, c, ky0, ky1, kx0, kx1, oy0, ox0; } landing;

static landing landing_of(uint i, int C, int H, int W, int KH, int KW, int stride, int pad,
                          int OH, int OW)
{
    landing t;
    int ry = (int)(i / W % H) + pad, rx = (int)(i % W) + pad;
    t.c = (int)(i / W / H % C);
    t.n = (int)(i / W / H / C);
    t.ky0 = first_tap(ry, stride, OH), t.ky1 = min(KH - 1, ry);
    t.kx0 = first_tap(rx, stride, OW), t.kx1 = min(KW - 1, rx);
    t.oy0 = (ry - t.ky0) / stride, t.ox0 = (rx - t.kx0) / stride;
    return t;
}

/* dx[n][c][iy][ix] = sum over f, ky, kx of dy * w, where the tap lands: the taps that do, found
 * once per work-item, so the loops divide nothing (the order is ky, kx ascending, as the CPU's).
 * Global: n * C * H * W. */
__kernel void conv_backward_input(G const float *dy, ulong dyo, G const float *w, ulong wo,
                                  G float *dx, ulong dxo, int C, int H, int W, int F, int KH,
                                  int KW, int stride, int pad, int OH, int OW)
{
    uint i = get_global_id(0);
    landing t = landing_of(i, C, H, W, KH, KW, stride, pad, OH, OW);
    float acc = 0;
    for (int f = 0; f < F; f++) {
        G const float *wf = w + wo + ((size_t)f * C + t.c) * KH * KW;
        G const float *dyf = dy + dyo + ((size_t)t.n * F + f) * OH * OW;
        for (int ky = t.ky0, oy = t.oy0; ky <= t.ky1; ky += stride, oy--)
            for (int kx = t.kx0, ox = t.ox0; kx <= t.kx1; kx += stride, ox--)
                acc += dyf[oy * OW + ox] * wf[ky * KW + kx];
    }
    dx[dxo + i] = acc;
}

/* The gradients of filters [f0, f0 + nf) summed over samples [0, n): their weights then their
 * biases, as one filter group's partial gradient, in two steps. First a work-group per block of
 * weights (GRAD_FILTERS filters x GRAD_TAPS consecutive taps (c, ky, kx), and the filters'
 * biases in the first block of taps) and slice of output positions (n, oy, ox), `per`
 * consecutive positions each: its work-items take every GRAD_GROUP-th position (neighbours
 * read neighbouring columns), keep the block's sums in registers, and add them up in a fixed
 * tree; sums[s * nw + weight] gets slice s's. A work-item per weight and slice, until 2026-12,
 * loaded a weight's inputs from scattered places and had few work-items per weight. Global:
 * blocks * slices * GRAD_GROUP, nw = nf * C * KH * KW + nf. */
#define GRAD_GROUP 128
#define GRAD_FILTERS 4
#define GRAD_TAPS 9
#define GRAD_SUMS (GRAD_FILTERS * (GRAD_TAPS + 1))   /* the last column: the biases */

__kernel __attribute__((reqd_work_group_size(GRAD_GROUP, 1, 1)))
void conv_backward_filter_slices(G const float *x, ulong xo, G const float *dy, ulong dyo,
                                 G float *sums, ulong so, int n, int C, int H, int W, int F,
                                 int KH, int KW, int stride, int pad, int OH, int OW, int f0,
                                 int nf, int per, int slices)
{
    __local float part[GRAD_SUMS][GRAD_GROUP];
    int lid = (int)get_local_id(0), ckk = C * KH * KW, nw = nf * ckk + nf;
    int s = (int)(get_group_id(0) % slices), block = (int)(get_group_id(0) / slices);
    int tap_blocks = (ckk + GRAD_TAPS - 1) / GRAD_TAPS;
    int k0 = block % tap_blocks * GRAD_TAPS, fg = block / tap_blocks * GRAD_FILTERS;
    int taps = min(GRAD_TAPS, ckk - k0), filters = min(GRAD_FILTERS, nf - fg);
    int tky[GRAD_TAPS], tkx[GRAD_TAPS], toff[GRAD_TAPS];   /* each tap's place in a sample */
    for (int t = 0; t < GRAD_TAPS; t++) {
        int k = min(k0 + t, ckk - 1);
        tky[t] = k / KW % KH, tkx[t] = k % KW, toff[t] = (k / (KH * KW) * H + tky[t]) * W + tkx[t];
    }
    float acc[GRAD_FILTERS][GRAD_TAPS + 1];
    for (int j = 0; j < GRAD_FILTERS; j++)
        for (int t = 0; t <= GRAD_TAPS; t++)
            acc[j][t] = 0.0f;
    int first = s * per + lid, last = min(s * per + per, n * OH * OW);
    int ox = first % OW, oy = first / OW % OH, sample = first / OW / OH;
    for (int p = first; p < last; p += GRAD_GROUP) {
        int iy0 = oy * stride - pad, ix0 = ox * stride - pad;
        int inside = iy0 >= 0 && iy0 + KH <= H && ix0 >= 0 && ix0 + KW <= W;
        size_t xs = xo + (size_t)sample * C * H * W;
        int at = iy0 * W + ix0;   /* the first tap's place in the sample (negative in padding) */
        G const float *dys = dy + dyo + ((size_t)sample * F + f0 + fg) * OH * OW + oy * OW + ox;
        float v[GRAD_TAPS], d[GRAD_FILTERS];
        for (int t = 0; t < GRAD_TAPS; t++) {
            int iy = iy0 + tky[t], ix = ix0 + tkx[t];
            int in_image = inside || (iy >= 0 && iy < H && ix >= 0 && ix < W);
            v[t] = t < taps && in_image ? x[xs + (at + toff[t])] : 0.0f;
        }
        for (int j = 0; j < GRAD_FILTERS; j++) {
            d[j] = j < filters ? dys[(size_t)j * OH * OW] : 0.0f;
            for (int t = 0; t < GRAD_TAPS; t++)
                acc[j][t] += d[j] * v[t];
            acc[j][GRAD_TAPS] += d[j];
        }
        for (ox += GRAD_GROUP; ox >= OW; ox -= OW)   /* the position GRAD_GROUP on */
            if (++oy == OH)
                oy = 0, sample++;
    }
    for (int j = 0; j < GRAD_FILTERS; j++)
        for (int t = 0; t <= GRAD_TAPS; t++)
            part[j * (GRAD_TAPS + 1) + t][lid] = acc[j][t];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int span = GRAD_GROUP / 2; span > 0; span /= 2) {
        if (lid < span)
            for (int q = 0; q < GRAD_SUMS; q++)
                part[q][lid] += part[q][lid + span];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid < GRAD_SUMS) {
        int j = lid / (GRAD_TAPS + 1), t = lid % (GRAD_TAPS + 1);
        G float *out = sums + so + (size_t)s * nw;
        if (j < filters && t < taps)
            out[(fg + j) * ckk + k0 + t] = part[lid][0];
        else if (j < filters && t == GRAD_TAPS && k0 == 0)
            out[nf * ckk + fg + j] = part[lid][0];
    }
}

/* Then the slices' sums in slice order, one work-item per weight. Global: nw. */
__kernel void conv_backward_filter_total(G const float *sums, ulong so, G float *dw, ulong dwo,
                                         int nw, int slices)
{
    size_t i = get_global_id(0);
    float acc = 0;
    for (int p = 0; p < slices; p++)
        acc += sums[so + (size_t)p * nw + i];
    dw[dwo + i] = acc;
}

/* ---- convolutions as GEMMs (kernels.c's conv_by_gemm) ---- */

/* col[n][k][q] = the input value under tap k = (c, ky, kx) of output q = (oy, ox) of sample n,
 * zero in the padding: each sample's im2col matrix (C KH KW x OH OW), which times the weights
 * is the convolution. Global: n * C * KH * KW * OH * OW. */
__kernel void im2col(G const float *x, ulong xo, G float *col, ulong co, int C, int H, int W,
                     int F, int KH, int KW, int stride, int pad, int OH, int OW)
{
    uint i = get_global_id(0), q = i % (uint)(OH * OW), r = i / (uint)(OH * OW);
    int k = (int)(r % (uint)(C * KH * KW)), n = (int)(r / (uint)(C * KH * KW));
    int ox = (int)(q % OW), oy = (int)(q / OW), kx = k % KW, ky = k / KW % KH, c = k / (KW * KH);
    int iy = oy * stride - pad + ky, ix = ox * stride - pad + kx;
    col[co + i] = iy >= 0 && iy < H && ix >= 0 && ix < W
                      ? x[xo + (((size_t)n * C + c) * H + iy) * W + ix]
                      : 0.0f;
}

/* dx[n][c][iy][ix] = the sum of the entries of dcol (each sample's im2col gradient) whose tap
 * lands there, ky, kx ascending as conv_backward_input sums them (col2im, the adjoint of
 * im2col). Global: n * C * H * W. */
__kernel void col2im(G const float *dcol, ulong co, G float *dx, ulong dxo, int C, int H, int W,
                     int F, int KH, int KW, int stride, int pad, int OH, int OW)
{
    uint i = get_global_id(0);
    size_t Q = (size_t)OH * OW;
    landing t = landing_of(i, C, H, W, KH, KW, stride, pad, OH, OW);
    G const float *d = dcol + co + (size_t)t.n * C * KH * KW * Q;
    float acc = 0;
    for (int ky = t.ky0, oy = t.oy0; ky <= t.ky1; ky += stride, oy--)
        for (int kx = t.kx0, ox = t.ox0; kx <= t.kx1; kx += stride, ox--)
            acc += d[((size_t)(t.c * KH + ky) * KW + kx) * Q + oy * OW + ox];
    dx[dxo + i] = acc;
}

/* y[n][f0 + j][q] += b[f0 + j]: the biases after a convolution's GEMM. Global: n * nf * Q. */
__kernel void add_bias(G float *y, ulong yo, G const float *b, ulong bo, int F, int f0, int nf,
                       int Q)
{
    uint i = get_global_id(0), q = i % Q, n = i / Q / nf;
    int j = (int)(i / Q % nf);
    y[yo + (n * F + f0 + j) * Q + q] += b[bo + f0 + j];
}

/* sums[n][nf K + j] = the sum of dy[n][f0 + j] over its Q outputs: the biases' part of sample
 * n's filter gradient, whose weights' part is a GEMM. Global: n * nf. */
__kernel void conv_bias_sums(G const float *dy, ulong dyo, G float *sums, ulong so, int F, int f0,
                             int nf, int Q, int K)
{
    uint i = get_global_id(0), n = i / nf;
    int j = (int)(i % nf);
    G const float *d = dy + dyo + (n * F + f0 + j) * Q;
    float acc = 0;
    for (int q = 0; q < Q; q++)
        acc += d[q];
    sums[so + n * ((size_t)nf * K + nf) + (size_t)nf * K + j] = acc;
}

/* ---- pooling and ReLU ---- */

/* The window's maximum (the first one wins, as on the CPU) and where it was in the sample.
 * Global: n * C * OH * OW. */
__kernel void maxpool_forward(G const float *x, ulong xo, G float *y, ulong yo, G int *argmax,
                              ulong ao, int C, int H, int W, int size, int stride, int OH, int OW)
{
    uint i = get_global_id(0);
    int ox = (int)(i % OW), oy = (int)(i / OW % OH), c = (int)(i / OW / OH % C);
    size_t n = i / OW / OH / C;
    int best = c * H * W + oy * stride * W + ox * stride;
    G const float *xs = x + xo + n * C * H * W;
    for (int ky = 0; ky < size; ky++)
        for (int kx = 0; kx < size; kx++) {
            int at = c * H * W + (oy * stride + ky) * W + ox * stride + kx;
            if (xs[at] > xs[best])
                best = at;
        }
    y[yo + i] = xs[best];
    argmax[ao + i] = best;
}

/* dx gets each window's gradient where its maximum was; an input in several windows sums
 * them. Global: n * C * H * W. */
__kernel void maxpool_backward(G const float *dy, ulong dyo, G const int *argmax, ulong ao,
                               G float *dx, ulong dxo, int C, int H, int W, int size, int stride,
                               int OH, int OW)
{
    uint i = get_global_id(0);
    int ix = (int)(i % W), iy = (int)(i / W % H), c = (int)(i / W / H % C);
    size_t n = i / W / H / C;
    int self = c * H * W + iy * W + ix;
    float acc = 0;
    int oy0 = iy >= size ? (iy - size) / stride + 1 : 0, ox0 = ix >= size ? (ix - size) / stride + 1 : 0;
    for (int oy = oy0; oy <= iy / stride && oy < OH; oy++)
        for (int ox = ox0; ox <= ix / stride && ox < OW; ox++) {
            size_t o = ((n * C + c) * OH + oy) * OW + ox;
            if (argmax[ao + o] == self)
                acc += dy[dyo + o];
        }
    dx[dxo + i] = acc;
}

__kernel void relu_forward(G const float *x, ulong xo, G float *y, ulong yo)
{
    size_t i = get_global_id(0);
    float v = x[xo + i];
    y[yo + i] = v < 0.0f ? 0.0f : v;   /* NaN passes, as on the CPU */
}

__kernel void relu_backward(G const float *y, ulong yo, G const float *dy, ulong dyo, G float *dx,
                            ulong dxo)
{
    size_t i = get_global_id(0);
    dx[dxo + i] = y[yo + i] > 0.0f ? dy[dyo + i] : 0.0f;
}

/* ---- dense layers (their gradients with a GEMM: gemm_rowmajor for a short inner dimension or
 * where CLBlast is not usable, else CLBlast) ---- */

/* The work-group size of dense_forward (kernels.c's DOT_GROUP). */
#define DOT_GROUP 256

/* y[s][o] = b[o] + sum over k of x[s][k] w[o][k], params = W (out x in) then b: work-group g
 * computes y[g] (s = g / out, o = g % out), each item a stride of k, then a tree in local memory,
 * a fixed order. Global: n * out * DOT_GROUP; local: DOT_GROUP. */
__kernel __attribute__((reqd_work_group_size(DOT_GROUP, 1, 1)))
void dense_forward(G const float *x, ulong xo, G const float *w, ulong wo, G float *y, ulong yo,
                   int in, int out)
{
    __local float part[DOT_GROUP];
    uint g = get_group_id(0);
    int lid = (int)get_local_id(0), o = (int)(g % out);
    G const float *xr = x + xo + (size_t)(g / out) * in, *wr = w + wo + (size_t)o * in;
    float acc = 0;
    for (int k = lid; k < in; k += DOT_GROUP)
        acc += xr[k] * wr[k];
    part[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int span = DOT_GROUP / 2; span > 0; span /= 2) {
        if (lid < span)
            part[lid] += part[lid + span];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        y[yo + g] = part[0] + w[wo + (size_t)out * in + o];
}

/* db[o] = sum over samples of dy[s][o]. Global: out. */
__kernel void column_sum(G const float *dy, ulong dyo, G float *db, ulong dbo, int n, int out)
{
    size_t o = get_global_id(0);
    float acc = 0;
    for (int s = 0; s < n; s++)
        acc += dy[dyo + (size_t)s * out + o];
    db[dbo + o] = acc;
}

/* C = alpha op(A) op(B) + beta C, row-major (M x N), op = transpose when t* is set: for a short
 * K (kernels.c's GEMM_SHORT_K), and where CLBlast's self-check failed. Global: M * N. */
__kernel void gemm_rowmajor(int ta, int tb, int M, int N, int K, float alpha, G const float *A,
                            ulong ao, int lda, G const float *B, ulong bo, int ldb, float beta,
                            G float *C, ulong co, int ldc)
{
    uint i = get_global_id(0);
    int m = (int)(i / N), n = (int)(i % N);
    float acc = 0;
    for (int k = 0; k < K; k++)
        acc += A[ao + (ta ? (size_t)k * lda + m : (size_t)m * lda + k)] *
               B[bo + (tb ? (size_t)n * ldb + k : (size_t)k * ldb + n)];
    size_t c = co + (size_t)m * ldc + n;
    C[c] = alpha * acc + (beta == 0.0f ? 0.0f : beta * C[c]);
}

/* ---- the loss ---- */

/* Per sample: the loss and whether the argmax is the label (into scratch: n losses, then n
 * flags), the gradient of the mean loss with respect to the logits (if want_dz), and the
 * predicted class (if want_pred). Global: n. */
__kernel void softmax_xent(G const float *z, ulong zo, G const uchar *labels, ulong lo,
                           int classes, float scale, G float *dz, ulong dzo, int want_dz,
                           G int *pred, ulong predo, int want_pred, G float *scratch)
{
    size_t s = get_global_id(0), n = get_global_size(0);
    G float *loss = scratch;
    G int *correct = (G int *)(scratch + n);
    G const float *zs = z + zo + s * classes;
    int label = labels[lo + s], arg = 0;
    for (int k = 1; k < classes; k++)
        if (zs[k] > zs[arg])
            arg = k;
    float zmax = zs[arg], sum = 0;
    for (int k = 0; k < classes; k++)
        sum += exp(zs[k] - zmax);
    float log_sum = log(sum);
    loss[s] = label < classes ? log_sum - (zs[label] - zmax) : NAN;
    correct[s] = arg == label;
    if (want_dz)
        for (int k = 0; k < classes; k++)
            dz[dzo + s * classes + k] = (exp(zs[k] - zmax - log_sum) - (k == label)) * scale;
    if (want_pred)
        pred[predo + s] = arg;
}

#ifndef HAVE_FP64
/* A double from a float, as bits, for devices without fp64 (normal numbers, zero, inf, NaN). */
static void store_double(G uint *out, float v)
{
    uint f = as_uint(v), sign = f >> 31, e = (f >> 23) & 255, m = f & 0x7fffff;
    uint exp = e == 0 ? 0 : e == 255 ? 2047 : e - 127 + 1023;
    if (e == 0)
        m = 0;   /* a denormal becomes zero */
    out[1] = sign << 31 | exp << 20 | m >> 3;
    out[0] = (m & 7) << 29;
}
#endif

/* The chunk's figures in sample order, as a chunk_stats (double loss; int correct, samples),
 * stats in uints. One work-item. */
__kernel void chunk_stats(G const float *scratch, int n, G uint *stats, ulong so)
{
    G const float *loss = scratch;
    G const int *correct = (G const int *)(scratch + n);
    int right = 0;
#ifdef HAVE_FP64
    double sum = 0;
    for (int s = 0; s < n; s++)
        sum += loss[s], right += correct[s];
    *(G double *)(stats + so) = sum;
#else
    float sum = 0;
    for (int s = 0; s < n; s++)
        sum += loss[s], right += correct[s];
    store_double(stats + so, sum);
#endif
    stats[so + 2] = (uint)right;
    stats[so + 3] = (uint)n;
}

/* ---- the update ---- */

/* dst = src (copy) or dst += src. Global: count. */
__kernel void copy_or_add(G float *dst, ulong dsto, G const float *src, ulong srco, int copy)
{
    size_t i = get_global_id(0);
    dst[dsto + i] = copy ? src[srco + i] : dst[dsto + i] + src[srco + i];
}

/* PyTorch's SGD: g += wd * w; v = momentum * v + g; w -= lr * v; without momentum, w -= lr * g
 * and v is left as it is (ops/sgd.c). Global: count. */
__kernel void sgd_update(G float *w, ulong wo, G const float *g, ulong go, G float *v, ulong vo,
                         float lr, float momentum, float wd)
{
    size_t i = get_global_id(0);
    float d = g[go + i] + wd * w[wo + i];
    if (momentum == 0.0f) {
        w[wo + i] -= lr * d;
        return;
    }
    float vi = momentum * v[vo + i] + d;
    v[vo + i] = vi;
    w[wo + i] -= lr * vi;
}
