/* Every OpenCL kernel against the CPU kernel on the same inputs (odd sizes, padding, stride 2,
 * filter counts that are not multiples of a block), on the first OpenCL device found: PoCL here
 * and in CI (./build.sh deps installs it). Float32 throughout: results agree within a relative
 * tolerance of 1e-4 (sums in another order), argmax and predictions exactly. */
#include "opencl/device.h"
#include "common/env_switches.h"
#include "opencl/kernels.h"
#include "ops/conv.h"
#include "ops/layers.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static ocl_list devices;
static ocl_device *dev;

static ocl_device *open_device(void)
{
    if (dev)
        return dev;
    CHECKF(ocl_discover(&devices) > 0, "no OpenCL device: %s", devices.why);
    if (!devices.n)
        return NULL;
    char err[512];
    CHECKF(ocl_open(&devices.dev[0], err, sizeof err) == 0, "%s", err);
    return dev = &devices.dev[0];
}

/* A device buffer holding n floats (or bytes) from host, at a byte offset (a part's place). */
static ocl_buf upload(const void *host, size_t bytes, size_t offset)
{
    cl_int rc;
    cl_mem m = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE, bytes + offset + 4, NULL, &rc);
    CHECK(rc == CL_SUCCESS);
    if (host && bytes)
        CHECK(clEnqueueWriteBuffer(dev->queue, m, CL_TRUE, offset, bytes, host, 0, NULL, NULL) ==
              CL_SUCCESS);
    return (ocl_buf){m, offset};
}

static void download(ocl_buf b, void *host, size_t bytes)
{
    CHECK(clEnqueueReadBuffer(dev->queue, b.mem, CL_TRUE, b.offset, bytes, host, 0, NULL, NULL) ==
          CL_SUCCESS);
    clReleaseMemObject(b.mem);
}

static char err[512];

static ocl_launch launch(void) { return (ocl_launch){dev, NULL, err, sizeof err}; }

static void finish(ocl_launch *l, int rc)
{
    CHECKF(rc == 0, "%s", err);
    if (l->done) {
        clWaitForEvents(1, &l->done);
        clReleaseEvent(l->done);
    }
}

static float *random_floats(size_t n, unsigned seed)
{
    float *v = malloc(sizeof(float) * (n ? n : 1));
    ops_rng r;
    ops_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        v[i] = ops_rng_uniform(&r) * 2 - 1;
    return v;
}

static void close_to(const char *what, const float *got, const float *want, size_t n)
{
    size_t worst = 0;
    double excess = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]) - (1e-5 + 1e-4 * fabs(want[i]));
        if (e > excess || !(got[i] == got[i]))
            worst = i, excess = e > 0 ? e : 1;
    }
    CHECKF(excess == 0, "%s: element %zu is %.8g, the CPU says %.8g", what, worst,
           (double)got[worst], (double)want[worst]);
}

typedef struct conv_case { int n, c, h, w, f, k, stride, pad, f0, f1; } conv_case;

/* Each case on both ways a device runs a convolution (FRUGAL_OPENCL_CONV): a work-item per
 * value, and im2col with CLBlast's GEMMs where CLBlast passed its self-check. */
static void convolution_cases(const char *how)
{
    const conv_case cases[] = {
        {2, 1, 28, 28, 4, 3, 1, 0, 0, 4},   /* DAHL's */
        {3, 3, 11, 9, 6, 3, 1, 1, 0, 6},    /* odd sizes, padding, 6 filters */
        {2, 5, 13, 10, 7, 3, 2, 1, 2, 6},   /* stride 2, a filter range */
        {1, 2, 7, 8, 3, 5, 1, 2, 1, 3},     /* a 5x5 kernel */
        {2, 8, 47, 6, 8, 5, 1, 0, 0, 8},    /* filter gradient: slices of 3 rows, the last of 2 */
        {2, 3, 10, 12, 4, 3, 2, 0, 0, 4},   /* stride 2: the last row and column reach no output */
        {3, 8, 12, 10, 20, 3, 1, 1, 2, 18}, /* by GEMM unless told: 16 filters, 72 taps */
        {2, 6, 11, 9, 16, 3, 2, 1, 0, 16},  /* the same with stride 2 */
        {1, 3, 12, 150, 5, 3, 1, 1, 0, 5},  /* rows wider than a filter gradient's work-group */
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const conv_case *k = &cases[ci];
        conv_geom g;
        CHECK(conv_geom_init(&g, k->c, k->h, k->w, k->f, k->k, k->k, k->stride, k->pad) == 0);
        size_t nx = (size_t)k->n * g.c * g.h * g.w, ny = (size_t)k->n * g.f * g.oh * g.ow;
        size_t nw = (size_t)g.f * g.c * g.kh * g.kw, nf = (size_t)(k->f1 - k->f0);
        size_t per = nw / g.f;
        float *x = random_floats(nx, 1), *p = random_floats(nw + g.f, 2), *dy = random_floats(ny, 3);
        float *y = calloc(ny, 4), *y_cl = calloc(ny, 4), *dx = calloc(nx, 4), *dx_cl = calloc(nx, 4);
        float *dw = calloc(nf * (per + 1), 4), *dw_cl = calloc(nf * (per + 1), 4);
        /* the CPU's reference: direct sums, as the device's (its Winograd paths round
         * otherwise, beyond these tolerances on values near zero) */
        conv_set_strategy(CONV_DIRECT);
        ops_conv2d_forward(&g, x, p, p + nw, y, 0, k->n, k->f0, k->f1);
        ops_conv2d_backward_input(&g, dy, p, dx, 0, k->n);
        ops_conv2d_backward_filter(&g, x, dy, dw, dw + nf * per, 0, k->n, k->f0, k->f1, 0);
        conv_set_strategy(CONV_AUTO);
        ocl_launch l = launch();
        ocl_buf bx = upload(x, nx * 4, 64), bp = upload(p, (nw + g.f) * 4, 32),
                by = upload(NULL, ny * 4, 16), bdy = upload(dy, ny * 4, 48),
                bdx = upload(NULL, nx * 4, 8), bdw = upload(NULL, nf * (per + 1) * 4, 4);
        finish(&l, ocl_kernel_conv_forward(&l, &g, bx, bp, by, k->n, k->f0, k->f1) ||
                       ocl_kernel_conv_backward_input(&l, &g, bdy, bp, bdx, k->n) ||
                       ocl_kernel_conv_backward_filter(&l, &g, bx, bdy, bdw, k->n, k->f0, k->f1));
        download(by, y_cl, ny * 4);
        download(bdx, dx_cl, nx * 4);
        download(bdw, dw_cl, nf * (per + 1) * 4);
        clReleaseMemObject(bx.mem), clReleaseMemObject(bp.mem), clReleaseMemObject(bdy.mem);
        /* forward: only the filter range is written */
        char what[3][96];
        for (int p = 0; p < 3; p++)
            snprintf(what[p], sizeof what[p], "case %zu, %s: conv %s", ci, how,
                     p == 0 ? "forward" : p == 1 ? "backward input" : "backward filter");
        for (int n = 0; n < k->n; n++)
            close_to(what[0], y_cl + ((size_t)n * g.f + k->f0) * g.oh * g.ow,
                     y + ((size_t)n * g.f + k->f0) * g.oh * g.ow, nf * g.oh * g.ow);
        close_to(what[1], dx_cl, dx, nx);
        close_to(what[2], dw_cl, dw, nf * (per + 1));
        free(x), free(p), free(dy), free(y), free(y_cl), free(dx), free(dx_cl), free(dw), free(dw_cl);
    }
}

TEST(opencl_convolution_matches_the_cpu)
{
    if (!open_device())
        return;
    const char *ways[] = {"direct", "gemm", NULL};   /* NULL: chosen by size */
    for (int i = 0; i < 3; i++) {
        if (ways[i])
            setenv("FRUGAL_OPENCL_CONV", ways[i], 1);
        else
            unsetenv("FRUGAL_OPENCL_CONV");
        env_switches_read();
        convolution_cases(ways[i] ? ways[i] : "by size");
    }
    unsetenv("FRUGAL_OPENCL_CONV");
    env_switches_read();
}

TEST(opencl_pooling_relu_and_dense_match_the_cpu)
{
    if (!open_device())
        return;
    /* max-pool 2x2 and 3x3 stride 2 (overlapping windows), odd sizes */
    int sizes[][2] = {{2, 2}, {3, 2}};
    for (int t = 0; t < 2; t++) {
        pool_geom g;
        CHECK(pool_geom_init(&g, 3, 9, 7, sizes[t][0], sizes[t][1]) == 0);
        int n = 2;
        size_t nx = (size_t)n * g.c * g.h * g.w, ny = (size_t)n * g.c * g.oh * g.ow;
        float *x = random_floats(nx, 4), *dy = random_floats(ny, 5), *y = calloc(ny, 4),
              *y_cl = calloc(ny, 4), *dx = calloc(nx, 4), *dx_cl = calloc(nx, 4);
        int32_t *am = calloc(ny, 4), *am_cl = calloc(ny, 4);
        ops_maxpool_forward(&g, x, y, am, 0, n);
        ops_maxpool_backward(&g, dy, am, dx, 0, n);
        ocl_launch l = launch();
        ocl_buf bx = upload(x, nx * 4, 4), by = upload(NULL, ny * 4, 0), ba = upload(NULL, ny * 4, 8),
                bdy = upload(dy, ny * 4, 12), bdx = upload(NULL, nx * 4, 0);
        finish(&l, ocl_kernel_maxpool_forward(&l, &g, bx, by, ba, n) ||
                       ocl_kernel_maxpool_backward(&l, &g, bdy, ba, bdx, n));
        download(by, y_cl, ny * 4);
        download(ba, am_cl, ny * 4);
        download(bdx, dx_cl, nx * 4);
        clReleaseMemObject(bx.mem), clReleaseMemObject(bdy.mem);
        CHECK(!memcmp(y, y_cl, ny * 4) && !memcmp(am, am_cl, ny * 4));
        close_to("maxpool backward", dx_cl, dx, nx);
        free(x), free(dy), free(y), free(y_cl), free(dx), free(dx_cl), free(am), free(am_cl);
    }
    /* relu, forward and backward */
    size_t count = 1001;
    float *x = random_floats(count, 6), *dy = random_floats(count, 7), *y = calloc(count, 4),
          *dx = calloc(count, 4), *y_cl = calloc(count, 4), *dx_cl = calloc(count, 4);
    ops_relu_forward(x, y, 0, (long)count);
    ops_relu_backward(y, dy, dx, 0, (long)count);
    ocl_launch l = launch();
    ocl_buf bx = upload(x, count * 4, 0), by = upload(NULL, count * 4, 4),
            bdy = upload(dy, count * 4, 0), bdx = upload(NULL, count * 4, 0);
    finish(&l, ocl_kernel_relu_forward(&l, bx, by, (long)count) ||
                   ocl_kernel_relu_backward(&l, by, bdy, bdx, (long)count));
    download(by, y_cl, count * 4);
    download(bdx, dx_cl, count * 4);
    clReleaseMemObject(bx.mem), clReleaseMemObject(bdy.mem);
    CHECK(!memcmp(y, y_cl, count * 4) && !memcmp(dx, dx_cl, count * 4));
    free(x), free(dy), free(y), free(dx), free(y_cl), free(dx_cl);
    /* dense: the forward pass's work-groups of 64 over 137 inputs (two full strides and a part),
     * the gradients through the plain GEMM, and the input gradient (inner dimension: 70 outputs)
     * through CLBlast where it is used */
    int n = 5, in = 137, out = 70;
    float *xs = random_floats((size_t)n * in, 8), *p = random_floats((size_t)out * in + out, 9),
          *dys = random_floats((size_t)n * out, 10);
    float *ys = calloc((size_t)n * out, 4), *part = calloc((size_t)out * in + out, 4),
          *dxs = calloc((size_t)n * in, 4);
    dense_forward(in, out, xs, p, p + out * in, ys, 0, n);
    dense_backward_weights(in, out, xs, dys, part, part + out * in, 0, n, 0);
    dense_backward_input(in, out, dys, p, dxs, 0, n);
    int clblast = dev->clblast;
    CHECKF(clblast, "CLBlast: %s", dev->clblast_why);
    for (int with = 0; with < 2; with++) {
        dev->clblast = with ? clblast : 0;
        float *y2 = calloc((size_t)n * out, 4), *part2 = calloc((size_t)out * in + out, 4),
              *dx2 = calloc((size_t)n * in, 4);
        ocl_launch d = launch();
        ocl_buf bxs = upload(xs, (size_t)n * in * 4, 4), bp = upload(p, ((size_t)out * in + out) * 4, 8),
                by2 = upload(NULL, (size_t)n * out * 4, 12), bdy2 = upload(dys, (size_t)n * out * 4, 0),
                bpart = upload(NULL, ((size_t)out * in + out) * 4, 4), bdx2 = upload(NULL, (size_t)n * in * 4, 0);
        finish(&d, ocl_kernel_dense_forward(&d, in, out, bxs, bp, by2, n) ||
                       ocl_kernel_dense_backward(&d, in, out, bxs, bdy2, bp, bpart, bdx2, n));
        download(by2, y2, (size_t)n * out * 4);
        download(bpart, part2, ((size_t)out * in + out) * 4);
        download(bdx2, dx2, (size_t)n * in * 4);
        clReleaseMemObject(bxs.mem), clReleaseMemObject(bp.mem), clReleaseMemObject(bdy2.mem);
        close_to("dense forward", y2, ys, (size_t)n * out);
        close_to("dense weight gradient", part2, part, (size_t)out * in + out);
        close_to(with ? "dense input gradient (CLBlast)" : "dense input gradient", dx2, dxs,
                 (size_t)n * in);
        free(y2), free(part2), free(dx2);
    }
    dev->clblast = clblast;
    free(xs), free(p), free(dys), free(ys), free(part), free(dxs);
}

/* The loss, the update and the load, against the CPU's. */
TEST(opencl_loss_update_and_load_match_the_cpu)
{
    if (!open_device())
        return;
    int n = 7, classes = 10;
    float *z = random_floats((size_t)n * classes, 11);
    for (int i = 0; i < n * classes; i++)
        z[i] *= 4;
    uint8_t labels[7] = {0, 3, 9, 9, 2, 5, 1};
    float *dz = calloc((size_t)n * classes, 4), *dz_cl = calloc((size_t)n * classes, 4);
    int correct = 0;
    double loss = ops_softmax_xent(classes, z, labels, dz, 1.0f / 32, 0, n, &correct);
    int32_t pred[7], pred_cl[7];
    for (int s = 0; s < n; s++) {
        int best = 0;
        for (int k = 1; k < classes; k++)
            best = z[s * classes + k] > z[s * classes + best] ? k : best;
        pred[s] = best;
    }
    struct { double loss; int correct, samples; } stats;
    ocl_launch l = launch();
    ocl_buf bz = upload(z, (size_t)n * classes * 4, 4), bl = upload(labels, (size_t)n, 3),
            bdz = upload(NULL, (size_t)n * classes * 4, 0), bpred = upload(NULL, 28, 4),
            bst = upload(NULL, sizeof stats, 16);
    finish(&l, ocl_kernel_softmax_xent(&l, classes, bz, bl, 1.0f / 32, bdz, bpred, bst, n));
    download(bdz, dz_cl, (size_t)n * classes * 4);
    download(bpred, pred_cl, 28);
    download(bst, &stats, sizeof stats);
    clReleaseMemObject(bz.mem), clReleaseMemObject(bl.mem);
    CHECK_NEAR(stats.loss, loss, 1e-4, 1e-5);
    CHECK(stats.correct == correct && stats.samples == n && !memcmp(pred, pred_cl, sizeof pred));
    close_to("softmax_xent gradient", dz_cl, dz, (size_t)n * classes);
    free(z), free(dz), free(dz_cl);

    size_t count = 333;
    float *w = random_floats(count, 12), *g = random_floats(count, 13), *v = random_floats(count, 14);
    float *w_cl = malloc(count * 4), *v_cl = malloc(count * 4), *sum = malloc(count * 4);
    ocl_launch u = launch();
    ocl_buf bw = upload(w, count * 4, 4), bg = upload(g, count * 4, 0), bv = upload(v, count * 4, 8),
            bs = upload(w, count * 4, 0);
    float *w_plus_g = malloc(count * 4);
    for (size_t i = 0; i < count; i++)
        w_plus_g[i] = w[i] + g[i];
    /* a step with momentum, then one without (the velocity then left as it is) */
    sgd_update(w, g, v, 0.1f, 0.9f, 0.01f, 0, (long)count);
    sgd_update(w, g, v, 0.1f, 0.0f, 0.01f, 0, (long)count);
    finish(&u, ocl_kernel_sgd(&u, bw, bg, bv, (long)count, 0.1f, 0.9f, 0.01f) ||
                   ocl_kernel_sgd(&u, bw, bg, bv, (long)count, 0.1f, 0.0f, 0.01f) ||
                   ocl_kernel_copy_or_add(&u, bs, bg, (long)count, 0));
    download(bw, w_cl, count * 4);
    download(bv, v_cl, count * 4);
    download(bs, sum, count * 4);
    clReleaseMemObject(bg.mem);
    close_to("sgd weights", w_cl, w, count);
    close_to("sgd velocity", v_cl, v, count);
    close_to("copy_or_add", sum, w_plus_g, count);
    free(w_plus_g);
    free(w), free(v), free(w_cl), free(v_cl), free(sum), free(g);

    uint8_t pixels[5 * 6], dlabels[5] = {4, 3, 2, 1, 0};
    for (int i = 0; i < 30; i++)
        pixels[i] = (uint8_t)(i * 8);
    long order[5] = {3, 0, 4, 1, 2};
    float out[2 * 6];
    uint8_t lab[2];
    ocl_launch ld = launch();
    ocl_buf bpx = upload(pixels, 30, 1), bdl = upload(dlabels, 5, 2), bo = upload(order, 40, 8),
            bout = upload(NULL, 48, 4), blab = upload(NULL, 2, 1);
    finish(&ld, ocl_kernel_load(&ld, bpx, bdl, bo, 1, 6, 2, 1.0f / 255, bout, blab));   /* samples 1, 2 */
    download(bout, out, 48);
    download(blab, lab, 2);
    clReleaseMemObject(bpx.mem), clReleaseMemObject(bdl.mem), clReleaseMemObject(bo.mem);
    CHECK(lab[0] == dlabels[0] && lab[1] == dlabels[4]);   /* order[1] = 0, order[2] = 4 */
    CHECK(out[0] == pixels[0] * (1.0f / 255) && out[6 + 5] == pixels[4 * 6 + 5] * (1.0f / 255));
}
