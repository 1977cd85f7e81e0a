/* Kernel speed against this core's measured FMA peak. One core (kernels are single-threaded;
 * the runtime parallelises). Prints:
 *   bench ops peak_gflops_per_core=X isa=NAME
 *   bench ops CASE gflops=X peak_pct=Y
 *   bench ops fused_backward_SHAPE relu_pct=X argmax_scatter_pct=Y: what a relu and the
 *   pooled gradient's scatter cost the fused convolution + max-pool backward
 *   bench ops conv_relu_SHAPE forward_saved_pct=X backward_saved_pct=Y: what fusing a
 *   convolution with the relu after it saves
 * (GFLOP/s count a direct convolution's multiply-adds, so the Winograd cases pass 100% of the
 * peak.)
 * Usage: bench_ops [seconds-per-case [only-cases-named-with-this]]
 *        bench_ops --peak THREADS: the FMA peak of THREADS cores at once, in GFLOP/s (one number;
 *        ./build.sh bench train compares whole training runs with it). */
#include "ops/conv.h"
#include "ops/cpu.h"
#include "ops/gemm.h"
#include "ops/peak.h"
#include "common/clock.h"
#include "common/large_alloc.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

static double budget = 0.3;
static double peak;
static const char *only;   /* run only the cases whose name has this */

static float *randoms(size_t n)
{
    float *p = large_alloc(n * sizeof *p);   /* huge pages for 2 MB or more, as training's */
    unsigned s = 12345;
    for (size_t i = 0; i < n; i++) {
        s = s * 1103515245u + 12345u;
        p[i] = (float)((s >> 9) & 0xffff) / 65536.0f - 0.5f;
    }
    return p;
}

/* The core's speed drifts (turbo, a busy SMT sibling on the host), so each case interleaves a
 * short burst of peak FMAs with every timed call, and compares the best of each taken over the
 * same window: both see the same conditions. Returns the case's GFLOP/s; *ref gets the peak. */
static double measure(void (*fn)(void *), void *arg, double flops, double *ref)
{
    ops_isa isa = ops_isa_active();
    fn(arg);   /* warm caches and scratch buffers */
    double best = 1e30, spent = 0, best_peak = 0;
    while (spent < budget) {
        double p = ops_peak_gflops(isa, 0.005);
        best_peak = p > best_peak ? p : best_peak;
        double t0 = clock_now_s();
        fn(arg);
        double t = clock_now_s() - t0;
        spent += t + 0.005;
        if (t < best)
            best = t;
    }
    if (best_peak > peak)
        peak = best_peak;
    *ref = best_peak;
    return flops / best * 1e-9;
}

static void report(const char *name, double gflops, double ref)
{
    printf("bench ops %s gflops=%.2f peak_pct=%.1f\n", name, gflops, 100.0 * gflops / ref);
    fflush(stdout);
}

typedef struct gemm_case { int ta, tb, m, n, k; float *a, *b, *c; } gemm_case;

static void run_gemm(void *p)
{
    gemm_case *g = p;
    int lda = g->ta ? g->m : g->k, ldb = g->tb ? g->k : g->n;
    ops_sgemm(g->ta, g->tb, g->m, g->n, g->k, 1.0f, g->a, lda, g->b, ldb, 0.0f, g->c, g->n);
}

static void bench_gemm(const char *label, int ta, int tb, int m, int n, int k)
{
    gemm_case g = {ta, tb, m, n, k, randoms((size_t)m * k), randoms((size_t)k * n),
                   randoms((size_t)m * n)};
    char name[96];
    snprintf(name, sizeof name, "sgemm_%s_m%d_n%d_k%d%s%s", label, m, n, k, ta ? "_ta" : "",
             tb ? "_tb" : "");
    if (only && !strstr(name, only)) {
        free(g.a), free(g.b), free(g.c);
        return;
    }
    double ref, gflops = measure(run_gemm, &g, 2.0 * m * n * k, &ref);
    report(name, gflops, ref);
    free(g.a);
    free(g.b);
    free(g.c);
}

typedef struct conv_case { conv_geom g; int n, pass; float *x, *w, *b, *y, *dy, *dx, *dw, *db; } conv_case;

static void run_conv(void *p)
{
    conv_case *c = p;
    if (c->pass == 0)
        ops_conv2d_forward(&c->g, c->x, c->w, c->b, c->y, 0, c->n, 0, c->g.f);
    else if (c->pass == 1)
        ops_conv2d_backward_input(&c->g, c->dy, c->w, c->dx, 0, c->n);
    else
        ops_conv2d_backward_filter(&c->g, c->x, c->dy, c->dw, c->db, 0, c->n, 0, c->g.f, 0);
}

/* Conv2d(C, F, 3, padding=pad) on a batch of n images, each pass separately. */
static void bench_conv(int c, int h, int w, int f, int pad, int n)
{
    conv_case cc = {.n = n};
    conv_geom_init(&cc.g, c, h, w, f, 3, 3, 1, pad);
    size_t in = (size_t)n * c * h * w, out = (size_t)n * f * cc.g.oh * cc.g.ow;
    cc.x = randoms(in), cc.dx = randoms(in), cc.y = randoms(out), cc.dy = randoms(out);
    cc.w = randoms((size_t)f * 9 * c), cc.dw = randoms((size_t)f * 9 * c);
    cc.b = randoms((size_t)f), cc.db = randoms((size_t)f);
    double flops = 2.0 * out * c * 9;
    static const char *pass[] = {"forward", "backward_input", "backward_filter"};
    for (conv_strategy s = CONV_DIRECT; s < CONV_STRATEGIES; s++) {
        conv_set_strategy(s);
        for (cc.pass = 0; cc.pass < 3; cc.pass++) {
            char name[96];
            snprintf(name, sizeof name, "conv_%dx%dx%d_f%d_pad%d_%s_batch%d_%s", h, w, c, f, pad,
                     pass[cc.pass], n, conv_path_name(s));
            if (only && !strstr(name, only))
                continue;
            double ref, gflops = measure(run_conv, &cc, flops, &ref);
            report(name, gflops, ref);
        }
    }
    conv_set_strategy(CONV_AUTO);
    free(cc.x), free(cc.dx), free(cc.y), free(cc.dy), free(cc.w), free(cc.dw), free(cc.b),
        free(cc.db);
}

/* The backward of a convolution fused with its 2x2 max-pool (and relu), taken apart: through
 * the relu (masking each pooled row as it is read), without it, and the plain backward of the
 * same convolution on a whole (unpooled) output gradient, the same multiply-adds with no
 * argmax to follow. The differences say what the relu, and the pooled gradient's scatter,
 * cost. */
typedef struct fused_case {
    conv_geom g;
    pool_geom p;
    int n, part;
    int32_t *argmax;
    float *x, *w, *b, *y, *dy, *dy_full, *dx, *dw, *db;
} fused_case;

static void run_fused(void *arg)
{
    fused_case *c = arg;
    conv_input x = {c->x, NULL, 0, 0};
    float *dx = conv_pool_fusable_with_input_gradient(&c->g, &c->p) ? c->dx : NULL;
    if (c->part == 2)
        ops_conv2d_backward(&c->g, x, c->dy_full, c->w, c->dw, c->db, dx, 0, c->n);
    else
        ops_conv2d_backward_maxpool(&c->g, x, &c->p, c->part == 0 ? c->y : NULL, c->dy,
                                    c->argmax, c->w, c->dw, c->db, dx, 0, c->n, 0);
}

static void bench_fused_backward(int c, int h, int w, int f, int pad, int n)
{
    fused_case fc = {.n = n};
    conv_geom_init(&fc.g, c, h, w, f, 3, 3, 1, pad);
    pool_geom_init(&fc.p, f, fc.g.oh, fc.g.ow, 2, 2);
    if (!conv_pool_fusable(&fc.g, &fc.p))
        return;
    size_t in = (size_t)n * c * h * w, out = (size_t)n * f * fc.g.oh * fc.g.ow;
    size_t pooled = (size_t)n * f * fc.p.oh * fc.p.ow;
    fc.x = randoms(in), fc.dx = randoms(in), fc.dy_full = randoms(out);
    fc.y = randoms(pooled), fc.dy = randoms(pooled);
    fc.argmax = malloc(pooled * sizeof *fc.argmax);
    fc.w = randoms((size_t)f * 9 * c), fc.dw = randoms((size_t)f * 9 * c);
    fc.b = randoms((size_t)f), fc.db = randoms((size_t)f);
    ops_conv2d_forward_maxpool(&fc.g, (conv_input){fc.x, NULL, 0, 0}, fc.w, fc.b, &fc.p, 1, fc.y,
                               fc.argmax, 0, n);
    int with_dx = conv_pool_fusable_with_input_gradient(&fc.g, &fc.p);
    double flops = 2.0 * out * c * 9 * (with_dx ? 2 : 1), ms[3];
    static const char *part[] = {"relu_maxpool", "maxpool", "unpooled"};
    char name[128];
    for (fc.part = 0; fc.part < 3; fc.part++) {
        snprintf(name, sizeof name, "fused_backward_%dx%dx%d_f%d_batch%d_%s", h, w, c, f, n,
                 part[fc.part]);
        if (only && !strstr(name, only))
            return;
        double ref, gflops = measure(run_fused, &fc, flops, &ref);
        ms[fc.part] = flops / gflops * 1e-6;
        printf("bench ops %s%s ms=%.3f gflops=%.2f peak_pct=%.1f\n", name, with_dx ? "_dx" : "",
               ms[fc.part], gflops, 100.0 * gflops / ref);
    }
    printf("bench ops fused_backward_%dx%dx%d_f%d relu_pct=%.1f argmax_scatter_pct=%.1f "
           "(of the fused backward's time)\n", h, w, c, f, 100 * (ms[0] - ms[1]) / ms[0],
           100 * (ms[1] - ms[2]) / ms[0]);
    fflush(stdout);
    free(fc.x), free(fc.dx), free(fc.dy_full), free(fc.y), free(fc.dy), free(fc.argmax);
    free(fc.w), free(fc.dw), free(fc.b), free(fc.db);
}

/* A convolution and the relu after it: the two apart (the relu a pass of its own over the
 * output, and over the gradient into a copy that the backward reads) against fused
 * (ops_conv2d_forward_relu and _backward_relu: each row through the relu as it is stored or
 * read). part: 0 forward apart, 1 fused; 2 backward apart, 3 fused. */
typedef struct relu_case {
    conv_geom g;
    int n, part, with_dx;
    float *x, *w, *b, *y, *dy, *masked, *dx, *dw;
} relu_case;

static void run_relu(void *arg)
{
    relu_case *c = arg;
    conv_input x = {c->x, NULL, 0, 0};
    long out = (long)c->n * c->g.f * c->g.oh * c->g.ow, nw = (long)c->g.f * c->g.c * 9;
    float *dx = c->with_dx ? c->dx : NULL;
    if (c->part == 0) {
        ops_conv2d_forward(&c->g, c->x, c->w, c->b, c->y, 0, c->n, 0, c->g.f);
        ops_relu_forward(c->y, c->y, 0, out);
    } else if (c->part == 1) {
        ops_conv2d_forward_relu(&c->g, x, c->w, c->b, c->y, 0, c->n);
    } else if (c->part == 2) {
        ops_relu_backward(c->y, c->dy, c->masked, 0, out);
        ops_conv2d_backward(&c->g, x, c->masked, c->w, c->dw, c->dw + nw, dx, 0, c->n);
    } else {
        ops_conv2d_backward_relu(&c->g, x, c->y, c->dy, c->w, c->dw, c->dw + nw, dx, 0, c->n);
    }
}

static void bench_relu_fused(int c, int h, int w, int f, int pad, int n, int with_dx)
{
    relu_case rc = {.n = n};
    conv_geom_init(&rc.g, c, h, w, f, 3, 3, 1, pad);
    rc.with_dx = with_dx && conv_relu_fusable(&rc.g, 1);
    if (!conv_relu_fusable(&rc.g, with_dx))
        return;
    size_t in = (size_t)n * c * h * w, out = (size_t)n * f * rc.g.oh * rc.g.ow;
    rc.x = randoms(in), rc.dx = randoms(in), rc.y = randoms(out), rc.dy = randoms(out);
    rc.masked = randoms(out), rc.w = randoms((size_t)f * 9 * c), rc.dw = randoms((size_t)f * 9 * c + f);
    rc.b = randoms((size_t)f);
    double flops[2] = {2.0 * out * c * 9, 2.0 * out * c * 9 * (rc.with_dx ? 2 : 1)}, ms[4];
    static const char *part[] = {"forward_apart", "forward_fused", "backward_apart",
                                 "backward_fused"};
    char name[128];
    for (rc.part = 0; rc.part < 4; rc.part++) {
        snprintf(name, sizeof name, "conv_relu_%dx%dx%d_f%d_batch%d_%s%s", h, w, c, f, n,
                 part[rc.part], rc.with_dx ? "_dx" : "");
        if (only && !strstr(name, only))
            break;
        double ref, gflops = measure(run_relu, &rc, flops[rc.part / 2], &ref);
        ms[rc.part] = flops[rc.part / 2] / gflops * 1e-6;
        printf("bench ops %s ms=%.3f gflops=%.2f peak_pct=%.1f\n", name, ms[rc.part], gflops,
               100.0 * gflops / ref);
    }
    if (rc.part == 4)
        printf("bench ops conv_relu_%dx%dx%d_f%d forward_saved_pct=%.1f backward_saved_pct=%.1f "
               "(fused against apart)\n", h, w, c, f, 100 * (ms[0] - ms[1]) / ms[0],
               100 * (ms[2] - ms[3]) / ms[2]);
    fflush(stdout);
    free(rc.x), free(rc.dx), free(rc.y), free(rc.dy), free(rc.masked), free(rc.w), free(rc.dw);
    free(rc.b);
}

/* A first layer as DAHL trains it: 16-sample chunks of bytes, each sample anywhere in a data
 * set of 2048 (so that its bytes come from memory), convolution, relu and 2x2 max-pool fused,
 * forward then backward (filter gradient only), each call the next chunk of a shuffled order.
 * Reports microseconds a sample, the direct kernels' multiply-adds (which include the
 * unpooled zeros) in GFLOP/s. */
typedef struct first_case {
    conv_geom g;
    pool_geom p;
    int backward, chunk, at;
    const uint8_t **order;
    float *y, *dy, w[4 * 27], b[4], dw[4 * 27], db[4];
    int32_t *argmax;
} first_case;

enum { FIRST_SET = 2048, FIRST_CHUNK = 16 };

static void run_first(void *arg)
{
    first_case *c = arg;
    conv_input x = {NULL, c->order + c->at, 1.0f / 255, 0};
    size_t pooled = (size_t)c->g.f * c->p.oh * c->p.ow, at = (size_t)(c->at % 32) * pooled;
    if (c->backward)
        ops_conv2d_backward_maxpool(&c->g, x, &c->p, c->y + at, c->dy + at, c->argmax + at, c->w,
                                    c->dw, c->db, NULL, 0, FIRST_CHUNK, 0);
    else
        ops_conv2d_forward_maxpool(&c->g, x, c->w, c->b, &c->p, 1, c->y + at, c->argmax + at, 0,
                                   FIRST_CHUNK);
    c->at = (c->at + FIRST_CHUNK) % FIRST_SET;   /* the next chunk, its bytes not in cache */
}

static void bench_first_layer(int h, int w)
{
    first_case fc = {0};
    conv_geom_init(&fc.g, 3, h, w, 4, 3, 3, 1, 0);
    if (pool_geom_init(&fc.p, 4, fc.g.oh, fc.g.ow, 2, 2) || !conv_pool_fusable(&fc.g, &fc.p))
        return;
    size_t per = (size_t)3 * h * w, pooled = (size_t)4 * fc.p.oh * fc.p.ow;
    uint8_t *set = large_alloc(per * FIRST_SET);
    fc.order = malloc(sizeof *fc.order * FIRST_SET);
    fc.y = randoms(pooled * 32), fc.dy = randoms(pooled * 32);
    fc.argmax = large_alloc(sizeof *fc.argmax * pooled * 32);
    if (!set || !fc.order || !fc.argmax)
        return;
    for (size_t i = 0; i < per * FIRST_SET; i++)
        set[i] = (uint8_t)(i * 2654435761u >> 24);
    for (int i = 0; i < FIRST_SET; i++)   /* 997 is prime to 2048: every sample once */
        fc.order[i] = set + per * (size_t)(i * 997 % FIRST_SET);
    for (int i = 0; i < 4 * 27; i++)
        fc.w[i] = (float)(i * 37 % 11 - 5) / 10;
    double flops = 2.0 * FIRST_CHUNK * fc.g.oh * fc.g.ow * 4 * 27;
    for (fc.backward = 0; fc.backward < 2; fc.backward++) {
        char name[96];
        snprintf(name, sizeof name, "first_layer_%dx%dx3_f4_bytes_batch%d_%s", h, w, FIRST_CHUNK,
                 fc.backward ? "backward" : "forward");
        if (only && !strstr(name, only))
            continue;
        ops_conv2d_forward_maxpool(&fc.g, (conv_input){NULL, fc.order, 1.0f / 255, 0}, fc.w,
                                   fc.b, &fc.p, 1, fc.y, fc.argmax, 0, 32);   /* real argmaxes */
        double ref, gflops = measure(run_first, &fc, flops, &ref);
        printf("bench ops %s us_per_sample=%.2f gflops=%.2f peak_pct=%.1f\n", name,
               flops / gflops * 1e-3 / FIRST_CHUNK, gflops, 100.0 * gflops / ref);
        fflush(stdout);
    }
    free(set), free(fc.order), free(fc.y), free(fc.dy), free(fc.argmax);
}

static void *peak_thread(void *out)
{
    *(double *)out = ops_peak_gflops(ops_isa_active(), 0.5);
    return NULL;
}

/* Every thread measures its core at the same time: the sum is what they reach together (cores
 * that share a pipeline or a power limit give less than one core's peak times their number). */
static int print_peak_of_threads(int threads)
{
    pthread_t tid[256];
    double got[256], sum = 0;
    if (threads < 1 || threads > 256)
        return 2;
    for (int t = 0; t < threads; t++)
        if (pthread_create(&tid[t], NULL, peak_thread, &got[t]))
            return 1;
    for (int t = 0; t < threads; t++)
        pthread_join(tid[t], NULL), sum += got[t];
    printf("%.1f\n", sum);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "--peak"))
        return print_peak_of_threads(atoi(argv[2]));
    if (argc > 1)
        budget = atof(argv[1]);
    if (argc > 2)
        only = argv[2];
    ops_isa isa = ops_isa_active();
    peak = ops_peak_gflops(isa, 0.5);
    printf("bench ops peak_gflops_per_core=%.2f isa=%s\n", peak, ops_isa_name(isa));
    for (int n = 64; n <= 1024; n *= 2)
        bench_gemm("square", 0, 0, n, n, n);
    /* The shapes DAHL's convolution hands GEMM: filters x pixels x (channels * 9). */
    bench_gemm("conv28_fwd", 0, 0, 4, 26 * 26, 9);
    bench_gemm("conv270_fwd", 0, 0, 4, 268 * 358, 27);
    bench_gemm("conv270_dw", 0, 1, 4, 27, 268 * 358);
    bench_gemm("conv270_dx", 1, 0, 27, 268 * 358, 4);
    bench_conv(1, 28, 28, 4, 0, 32);   /* DAHL's Conv2d(C, 4, 3) */
    bench_conv(3, 116, 158, 4, 0, 8);
    bench_conv(3, 270, 360, 4, 0, 2);
    bench_conv(16, 16, 16, 32, 1, 4);    /* cifar-shaped's second convolution */
    bench_conv(1, 28, 28, 64, 1, 4);     /* wide-28's */
    bench_conv(64, 14, 14, 128, 1, 4);
    bench_conv(3, 32, 32, 32, 1, 4);     /* vgg-small's */
    bench_conv(32, 32, 32, 32, 1, 4);
    bench_conv(32, 32, 32, 32, 1, 32);   /* a training chunk of it: input from L3 or memory */
    bench_conv(32, 16, 16, 64, 1, 4);
    bench_conv(64, 8, 8, 128, 1, 4);
    bench_fused_backward(3, 270, 360, 4, 0, 2);   /* DAHL 270x360x3's first layer */
    bench_fused_backward(1, 28, 28, 4, 0, 32);    /* DAHL 28x28x1's */
    bench_fused_backward(3, 32, 32, 16, 1, 8);    /* cifar-shaped's first */
    bench_fused_backward(16, 16, 16, 32, 1, 8);   /* cifar-shaped's second */
    bench_fused_backward(1, 28, 28, 64, 1, 8);    /* wide-28's first */
    bench_fused_backward(64, 14, 14, 128, 1, 4);  /* wide-28's second */
    bench_first_layer(62, 84);                    /* DAHL 62x84x3's, as training runs it */
    bench_first_layer(116, 158);
    bench_relu_fused(3, 32, 32, 32, 1, 16, 0);      /* vgg-small's first, a chunk of 16 */
    bench_relu_fused(32, 16, 16, 64, 1, 16, 1);     /* vgg-small's third */
    printf("bench ops peak_gflops_per_core_max=%.2f (highest seen during the run)\n", peak);
    return 0;
}
