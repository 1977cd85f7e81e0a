/* OpenCL devices against this machine's CPU kernels (one core, as a task runs them):
 *   bench opencl DEVICE sgemm N gflops=X cpu_gflops=Y ratio=Z
 *   bench opencl DEVICE kernel WORKLOAD NAME device_us=X cpu_us=Y ratio=Z
 * ratio is the device's speed over the CPU's (above 1: the device is faster). A device time
 * runs from the enqueue to the completed event, as a task on the device sees it (launch and
 * queue latency included); each figure is the best of repeated runs. WORKLOAD is a chunk of 16
 * samples of DAHL's CNN at 28x28x1 or 116x158x3, or of 32 at 270x360x3 (a batch, the chunk a
 * GPU alone trains at batch 32), or a convolution of the deeper jobs (a chunk
 * as they train it: vgg-small's 32 -> 32 and 64 -> 128 layers, wide-28's 64 -> 128), whose
 * GFLOP/s count a direct convolution's multiply-adds:
 *   bench opencl DEVICE conv LAYER PASS device_us=X gflops=Y cpu_us=Z ratio=R
 * The training runs (img/s on cpu, opencl and cpu+opencl) are tools/bench_opencl.sh.
 * Usage: bench_opencl [seconds-per-case] */
#include "opencl/device.h"
#include "opencl/kernels.h"
#include "ops/conv.h"
#include "ops/gemm.h"
#include "ops/layers.h"
#include "common/clock.h"

#include <clblast_c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double budget = 0.3;
static ocl_device *dev;
static char err[512];

static float *randoms(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    ops_rng r;
    ops_rng_seed(&r, n);
    for (size_t i = 0; i < n; i++)
        p[i] = ops_rng_uniform(&r) - 0.5f;
    return p;
}

static ocl_buf upload(const void *host, size_t bytes)
{
    cl_int rc;
    cl_mem m = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE, bytes + 4, NULL, &rc);
    if (rc != CL_SUCCESS) {
        fprintf(stderr, "bench opencl: %s: allocating %zu bytes: %s\n", dev->name, bytes,
                ocl_error_name(rc));
        exit(1);
    }
    if (host)
        clEnqueueWriteBuffer(dev->queue, m, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
    return (ocl_buf){m, 0};
}

/* Best time of one call, in seconds: repeated until the budget is spent (at least 3 times). */
typedef int (*bench_fn)(void *ctx);

static double best_of(bench_fn fn, void *ctx)
{
    double best = 1e30, spent = 0;
    for (int i = 0; i < 3 || spent < budget; i++) {
        uint64_t t0 = clock_ticks();
        if (fn(ctx)) {
            fprintf(stderr, "bench opencl: %s\n", err);
            exit(1);
        }
        double s = clock_ticks_to_s(clock_ticks() - t0);
        best = s < best ? s : best;
        spent += s;
        if (i > 1000)
            break;
    }
    return best;
}

/* A device call: enqueue, wait for its last event. */
typedef int (*device_call)(ocl_launch *l, void *ctx);
typedef struct device_run { device_call call; void *ctx; } device_run;

static int run_on_device(void *p)
{
    device_run *r = p;
    ocl_launch l = {dev, NULL, err, sizeof err};
    if (r->call(&l, r->ctx))
        return -1;
    if (l.done) {
        clWaitForEvents(1, &l.done);
        clReleaseEvent(l.done);
    }
    return 0;
}

/* ---- SGEMM ---- */

typedef struct gemm_case { int n; float *a, *b, *c; ocl_buf A, B, C; } gemm_case;

static int gemm_cpu(void *p)
{
    gemm_case *g = p;
    return ops_sgemm(0, 0, g->n, g->n, g->n, 1, g->a, g->n, g->b, g->n, 0, g->c, g->n);
}

static int gemm_device(void *p)
{
    gemm_case *g = p;
    cl_event e = NULL;
    size_t n = (size_t)g->n;
    CLBlastStatusCode s = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo,
                                       CLBlastTransposeNo, n, n, n, 1, g->A.mem, 0, n, g->B.mem,
                                       0, n, 0, g->C.mem, 0, n, &dev->queue, &e);
    if (s != CLBlastSuccess)
        return ocl_check(dev, (cl_int)s, "CLBlast SGEMM", err, sizeof err);
    clWaitForEvents(1, &e);
    clReleaseEvent(e);
    return 0;
}

static void bench_sgemm(void)
{
    for (int n = 256; n <= 2048; n *= 2) {
        size_t bytes = (size_t)n * n * sizeof(float);
        gemm_case g = {.n = n, .a = randoms((size_t)n * n), .b = randoms((size_t)n * n),
                       .c = malloc(bytes)};
        g.A = upload(g.a, bytes), g.B = upload(g.b, bytes), g.C = upload(NULL, bytes);
        double flops = 2.0 * n * n * n;
        double dev_gf = dev->clblast ? flops / best_of(gemm_device, &g) / 1e9 : 0;
        double cpu_gf = flops / best_of(gemm_cpu, &g) / 1e9;
        if (dev->clblast)
            printf("bench opencl %s sgemm %d gflops=%.1f cpu_gflops=%.1f ratio=%.2f\n", dev->name,
                   n, dev_gf, cpu_gf, dev_gf / cpu_gf);
        else
            printf("bench opencl %s sgemm %d skipped: CLBlast %s\n", dev->name, n,
                   dev->clblast_why);
        fflush(stdout);
        clReleaseMemObject(g.A.mem), clReleaseMemObject(g.B.mem), clReleaseMemObject(g.C.mem);
        free(g.a), free(g.b), free(g.c);
    }
}

/* ---- DAHL's layers, one chunk ---- */

enum { CLASSES = 10 };

typedef struct layers {
    int n;   /* the chunk's samples */
    conv_geom cg;
    pool_geom pg;
    int dense_in;
    long nx, ny, nw, np, nd;
    float *x, *w, *y, *dy, *dx, *dw, *p, *dp, *dd, *z, *dz, *d_w, *d_g, *vel;
    int32_t *argmax;
    uint8_t *labels;
    ocl_buf X, W, Y, DY, DX, DW, P, DP, ARG, DD, Z, DZ, DENSE_W, DENSE_G, VEL, LAB, STATS;
} layers;

static void layers_init(layers *L, int n, int c, int h, int w)
{
    memset(L, 0, sizeof *L);
    L->n = n;
    conv_geom_init(&L->cg, c, h, w, 4, 3, 3, 1, 0);
    pool_geom_init(&L->pg, 4, L->cg.oh, L->cg.ow, 2, 2);
    L->dense_in = 4 * L->pg.oh * L->pg.ow;
    L->nx = (long)L->n * c * h * w;
    L->ny = (long)L->n * 4 * L->cg.oh * L->cg.ow;
    L->nw = 4L * c * 9 + 4;
    L->np = (long)L->n * L->dense_in;
    L->nd = (long)CLASSES * L->dense_in + CLASSES;
    L->x = randoms(L->nx), L->w = randoms(L->nw), L->y = randoms(L->ny), L->dy = randoms(L->ny);
    L->dx = randoms(L->nx), L->dw = randoms(L->nw), L->p = randoms(L->np), L->dp = randoms(L->np);
    L->dd = randoms(L->nd), L->z = randoms(L->n * CLASSES), L->dz = randoms(L->n * CLASSES);
    L->d_w = randoms(L->nd), L->d_g = randoms(L->nd), L->vel = randoms(L->nd);
    L->argmax = calloc((size_t)L->np, sizeof *L->argmax);
    L->labels = calloc(L->n, 1);
    ops_maxpool_forward(&L->pg, L->y, L->p, L->argmax, 0, L->n);
    L->X = upload(L->x, 4 * L->nx), L->W = upload(L->w, 4 * L->nw), L->Y = upload(L->y, 4 * L->ny);
    L->DY = upload(L->dy, 4 * L->ny), L->DX = upload(NULL, 4 * L->nx), L->DW = upload(NULL, 4 * L->nw);
    L->P = upload(L->p, 4 * L->np), L->DP = upload(L->dp, 4 * L->np);
    L->ARG = upload(L->argmax, 4 * L->np), L->DD = upload(NULL, 4 * L->nd);
    L->Z = upload(L->z, 4 * L->n * CLASSES), L->DZ = upload(L->dz, 4 * L->n * CLASSES);
    L->DENSE_W = upload(L->d_w, 4 * L->nd), L->DENSE_G = upload(L->d_g, 4 * L->nd);
    L->VEL = upload(L->vel, 4 * L->nd), L->LAB = upload(L->labels, L->n);
    L->STATS = upload(NULL, 64);
}

static void layers_free(layers *L)
{
    ocl_buf *bufs[] = {&L->X, &L->W, &L->Y, &L->DY, &L->DX, &L->DW, &L->P, &L->DP, &L->ARG,
                       &L->DD, &L->Z, &L->DZ, &L->DENSE_W, &L->DENSE_G, &L->VEL, &L->LAB, &L->STATS};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        clReleaseMemObject(bufs[i]->mem);
    float *mem[] = {L->x, L->w, L->y, L->dy, L->dx, L->dw, L->p, L->dp, L->dd, L->z, L->dz,
                    L->d_w, L->d_g, L->vel};
    for (size_t i = 0; i < sizeof mem / sizeof mem[0]; i++)
        free(mem[i]);
    free(L->argmax), free(L->labels);
}

/* Each kernel twice: on the CPU and on the device. */
#define CPU(name, body) static int name##_cpu(void *p) { layers *L = p; body; return 0; }
#define DEV(name, body) static int name##_dev(ocl_launch *l, void *p) { layers *L = p; return body; }

CPU(conv_forward, ops_conv2d_forward(&L->cg, L->x, L->w, L->w + L->nw - 4, L->y, 0, L->n, 0, 4))
DEV(conv_forward, ocl_kernel_conv_forward(l, &L->cg, L->X, L->W, L->Y, L->n, 0, 4))
CPU(conv_backward_filter,
    ops_conv2d_backward_filter(&L->cg, L->x, L->dy, L->dw, L->dw + L->nw - 4, 0, L->n, 0, 4, 0))
DEV(conv_backward_filter, ocl_kernel_conv_backward_filter(l, &L->cg, L->X, L->DY, L->DW, L->n, 0, 4))
CPU(conv_backward_input, ops_conv2d_backward_input(&L->cg, L->dy, L->w, L->dx, 0, L->n))
DEV(conv_backward_input, ocl_kernel_conv_backward_input(l, &L->cg, L->DY, L->W, L->DX, L->n))
CPU(maxpool_forward, ops_maxpool_forward(&L->pg, L->y, L->p, L->argmax, 0, L->n))
DEV(maxpool_forward, ocl_kernel_maxpool_forward(l, &L->pg, L->Y, L->P, L->ARG, L->n))
CPU(maxpool_backward, ops_maxpool_backward(&L->pg, L->dp, L->argmax, L->dy, 0, L->n))
DEV(maxpool_backward, ocl_kernel_maxpool_backward(l, &L->pg, L->DP, L->ARG, L->DY, L->n))
CPU(relu_forward, ops_relu_forward(L->y, L->dy, 0, L->ny))
DEV(relu_forward, ocl_kernel_relu_forward(l, L->Y, L->DY, L->ny))
CPU(dense_forward, dense_forward(L->dense_in, CLASSES, L->p, L->d_w, L->d_w + L->nd - CLASSES,
                                 L->z, 0, L->n))
DEV(dense_forward, ocl_kernel_dense_forward(l, L->dense_in, CLASSES, L->P, L->DENSE_W, L->Z, L->n))
CPU(dense_backward,
    dense_backward_weights(L->dense_in, CLASSES, L->p, L->dz, L->dd, L->dd + L->nd - CLASSES, 0,
                           L->n, 0);
    dense_backward_input(L->dense_in, CLASSES, L->dz, L->d_w, L->dp, 0, L->n))
DEV(dense_backward, ocl_kernel_dense_backward(l, L->dense_in, CLASSES, L->P, L->DZ, L->DENSE_W, L->DD,
                                        L->DP, L->n))
CPU(softmax_xent, ops_softmax_xent(CLASSES, L->z, L->labels, L->dz, 1.0f / 32, 0, L->n, NULL))
DEV(softmax_xent, ocl_kernel_softmax_xent(l, CLASSES, L->Z, L->LAB, 1.0f / 32, L->DZ,
                                    (ocl_buf){NULL, 0}, L->STATS, L->n))
CPU(sgd, sgd_update(L->d_w, L->d_g, L->vel, 1e-9f, 0.9f, 0, 0, L->nd))
DEV(sgd, ocl_kernel_sgd(l, L->DENSE_W, L->DENSE_G, L->VEL, L->nd, 1e-9f, 0.9f, 0))

typedef struct kernel_case { const char *name; bench_fn cpu; device_call dev; } kernel_case;
#define CASE(name) {#name, name##_cpu, name##_dev}

static void bench_kernels(const char *workload, int n, int c, int h, int w)
{
    static const kernel_case cases[] = {
        CASE(conv_forward), CASE(conv_backward_filter), CASE(conv_backward_input),
        CASE(maxpool_forward), CASE(maxpool_backward), CASE(relu_forward), CASE(dense_forward),
        CASE(dense_backward), CASE(softmax_xent), CASE(sgd)};
    layers L;
    layers_init(&L, n, c, h, w);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        device_run r = {cases[i].dev, &L};
        double d = best_of(run_on_device, &r), cpu = best_of(cases[i].cpu, &L);
        printf("bench opencl %s kernel %s %s device_us=%.1f cpu_us=%.1f ratio=%.2f\n", dev->name,
               workload, cases[i].name, 1e6 * d, 1e6 * cpu, cpu / d);
        fflush(stdout);
    }
    layers_free(&L);
}

/* ---- a convolution of the deeper jobs, one chunk ---- */

typedef struct conv_layer {
    conv_geom g;
    int n;
    size_t nw;                         /* weights; the biases follow them in p */
    float *x, *p, *y, *dy, *dx, *dw;
    ocl_buf X, P, Y, DY, DX, DW;
} conv_layer;

static int layer_forward_cpu(void *p)
{
    conv_layer *L = p;
    return ops_conv2d_forward(&L->g, L->x, L->p, L->p + L->nw, L->y, 0, L->n, 0, L->g.f);
}

static int layer_forward_dev(ocl_launch *l, void *p)
{
    conv_layer *L = p;
    return ocl_kernel_conv_forward(l, &L->g, L->X, L->P, L->Y, L->n, 0, L->g.f);
}

static int layer_filter_cpu(void *p)
{
    conv_layer *L = p;
    return ops_conv2d_backward_filter(&L->g, L->x, L->dy, L->dw, L->dw + L->nw, 0, L->n, 0,
                                      L->g.f, 0);
}

static int layer_filter_dev(ocl_launch *l, void *p)
{
    conv_layer *L = p;
    return ocl_kernel_conv_backward_filter(l, &L->g, L->X, L->DY, L->DW, L->n, 0, L->g.f);
}

static int layer_input_cpu(void *p)
{
    conv_layer *L = p;
    return ops_conv2d_backward_input(&L->g, L->dy, L->p, L->dx, 0, L->n);
}

static int layer_input_dev(ocl_launch *l, void *p)
{
    conv_layer *L = p;
    return ocl_kernel_conv_backward_input(l, &L->g, L->DY, L->P, L->DX, L->n);
}

static void bench_conv_layer(const char *name, int n, int c, int hw, int f)
{
    static const struct { const char *pass; bench_fn cpu; device_call dev; } passes[] = {
        {"forward", layer_forward_cpu, layer_forward_dev},
        {"backward_filter", layer_filter_cpu, layer_filter_dev},
        {"backward_input", layer_input_cpu, layer_input_dev}};
    conv_layer L = {.n = n};
    conv_geom_init(&L.g, c, hw, hw, f, 3, 3, 1, 1);
    size_t nx = (size_t)n * c * hw * hw, ny = (size_t)n * f * hw * hw;
    L.nw = (size_t)f * c * 9;
    L.x = randoms(nx), L.p = randoms(L.nw + f), L.dy = randoms(ny);
    L.y = malloc(4 * ny), L.dx = malloc(4 * nx), L.dw = malloc(4 * (L.nw + f));
    L.X = upload(L.x, 4 * nx), L.P = upload(L.p, 4 * (L.nw + f)), L.DY = upload(L.dy, 4 * ny);
    L.Y = upload(NULL, 4 * ny), L.DX = upload(NULL, 4 * nx), L.DW = upload(NULL, 4 * (L.nw + f));
    double flops = 2.0 * (double)ny * (double)c * 9;
    for (int i = 0; i < 3; i++) {
        device_run r = {passes[i].dev, &L};
        double d = best_of(run_on_device, &r), cpu = best_of(passes[i].cpu, &L);
        printf("bench opencl %s conv %s %s device_us=%.1f gflops=%.1f cpu_us=%.1f ratio=%.2f\n",
               dev->name, name, passes[i].pass, 1e6 * d, flops / d / 1e9, 1e6 * cpu, cpu / d);
        fflush(stdout);
    }
    ocl_buf *bufs[] = {&L.X, &L.P, &L.Y, &L.DY, &L.DX, &L.DW};
    for (int i = 0; i < 6; i++)
        clReleaseMemObject(bufs[i]->mem);
    free(L.x), free(L.p), free(L.y), free(L.dy), free(L.dx), free(L.dw);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        budget = atof(argv[1]);
    clock_init();
    static ocl_list list;
    if (!ocl_discover(&list)) {
        printf("bench opencl: no device: %s\n", list.why);
        return 0;
    }
    for (int i = 0; i < list.n; i++) {
        dev = &list.dev[i];
        if (ocl_open(dev, err, sizeof err)) {
            printf("bench opencl %s: cannot open: %s\n", dev->name, err);
            continue;
        }
        bench_sgemm();
        bench_kernels("28x28x1", 16, 1, 28, 28);
        bench_kernels("116x158x3", 16, 3, 116, 158);
        bench_kernels("270x360x3_32", 32, 3, 270, 360);   /* a batch, as a GPU trains it alone */
        bench_conv_layer("vgg-small_32x32_32-32", 32, 32, 32, 32);
        bench_conv_layer("vgg-small_8x8_64-128", 32, 64, 8, 128);
        bench_conv_layer("wide-28_14x14_64-128", 16, 64, 14, 128);
        ocl_close(dev);
    }
    return 0;
}
