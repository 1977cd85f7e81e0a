#include "opencl/kernels.h"
#include "opencl/completion.h"

#include "common/env_switches.h"

#include <clblast_c.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* A kernel argument, its value held here. */
typedef struct karg {
    size_t size;
    union { cl_mem m; cl_ulong u; cl_long l; cl_int i; cl_float f; } v;
} karg;

#define I(x) ((karg){sizeof(cl_int), {.i = (cl_int)(x)}})
#define L(x) ((karg){sizeof(cl_long), {.l = (cl_long)(x)}})
#define F(x) ((karg){sizeof(cl_float), {.f = (cl_float)(x)}})
/* a buffer: its cl_mem, then its offset in elements of `elem` bytes */
#define B(b, elem) ((karg){sizeof(cl_mem), {.m = (b).mem}}), \
                   ((karg){sizeof(cl_ulong), {.u = (cl_ulong)((b).offset / (elem))}})
#define RUN(l, name, global, ...) RUN_GROUPS(l, name, global, 0, __VA_ARGS__)
/* local: the work-group size a kernel requires (0: the driver's choice) */
#define RUN_GROUPS(l, name, global, local, ...)                                                \
    run((l), (name), (global), (local), (const karg[]){__VA_ARGS__},                           \
        sizeof((const karg[]){__VA_ARGS__}) / sizeof(karg))

/* The device's kernel of that name, created on first use (under the device's kernels_lock). */
static cl_kernel kernel_named(ocl_device *d, const char *name, cl_int *rc)
{
    for (int i = 0; i < d->nkernels; i++)
        if (!strcmp(d->kernels[i].name, name))
            return d->kernels[i].k;
    cl_kernel k = clCreateKernel(d->program, name, rc);
    if (*rc == CL_SUCCESS && d->nkernels < (int)(sizeof d->kernels / sizeof d->kernels[0]))
        d->kernels[d->nkernels++] = (struct ocl_kernel){name, k};
    return k;
}

/* Takes e as the launch's last event, releasing the one before. */
static void last_is(ocl_launch *l, cl_event e)
{
    if (l->done)
        clReleaseEvent(l->done);
    l->done = e;
}

static int run(ocl_launch *l, const char *name, size_t global, size_t local, const karg *args,
               int n)
{
    ocl_device *d = l->d;
    if (!global)
        return 0;
    if (global > UINT32_MAX) {   /* the kernels find their places with 32-bit divisions */
        snprintf(l->err, l->errlen, "%s: kernel %s: %zu work-items, more than 2^32 - 1",
                 d->name, name, global);
        return -1;
    }
    cl_int rc = CL_SUCCESS;
    cl_event e = NULL;
    pthread_mutex_lock(&d->kernels_lock);
    cl_kernel k = kernel_named(d, name, &rc);
    for (int i = 0; i < n && rc == CL_SUCCESS; i++)
        rc = clSetKernelArg(k, (cl_uint)i, args[i].size, &args[i].v);
    /* No event where nothing waits for one (a device whose tasks are done once enqueued): an
     * event a kernel cost an H200's driver more than the kernel's launch (kernels.h). */
    cl_event *event = d->done_when_enqueued ? NULL : &e;
    if (rc == CL_SUCCESS && (rc = ocl_injected_failure(d)) == CL_SUCCESS)
        rc = clEnqueueNDRangeKernel(d->queue, k, 1, NULL, &global, local ? &local : NULL, 0, NULL,
                                    event);
    pthread_mutex_unlock(&d->kernels_lock);
    char what[96];
    snprintf(what, sizeof what, "running kernel %s", name);
    if (ocl_check(d, rc, what, l->err, l->errlen))
        return -1;
    if (event)
        last_is(l, e);
    return 0;
}

/* The device's scratch buffer `which`, at least `bytes`. A task uses it between its own kernels
 * only: a device's tasks are enqueued one after the other on its in-order queue, and a buffer
 * released while commands use it lives until they end. Kept between tasks: a buffer created
 * and released per task (the filter gradient's, until 2026-11) costs an allocation each time,
 * and on NVIDIA's driver a release may wait for the device. */
static cl_mem scratch(ocl_launch *l, int which, size_t bytes)
{
    ocl_device *d = l->d;
    pthread_mutex_lock(&d->kernels_lock);
    if (d->scratch_bytes[which] < bytes) {
        if (d->scratch[which])
            clReleaseMemObject(d->scratch[which]);
        cl_int rc;
        d->scratch[which] = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes, NULL, &rc);
        d->scratch_bytes[which] = rc == CL_SUCCESS ? bytes : 0;
        if (ocl_check(d, rc, "allocating scratch memory", l->err, l->errlen))
            d->scratch[which] = NULL;
    }
    cl_mem m = d->scratch[which];
    pthread_mutex_unlock(&d->kernels_lock);
    return m;
}

/* Row-major C = alpha op(A) op(B) + beta C: CLBlast where it passed its self-check here, but
 * for a short inner dimension (a dense layer's gradients: K is the chunk's samples or the
 * layer's outputs) a work-item per product, each a short sum: CLBlast took 60 us for DAHL's two
 * (16 x 10 x 676, with the bias sum) on an H200, as long as the rest of a chunk's backward
 * pass. */
#define GEMM_SHORT_K 64

/* A CLBlast call's status and event: 0, or -1 with the error named. */
static int clblast_done(ocl_launch *l, CLBlastStatusCode s, cl_event e, const char *what)
{
    if (ocl_check(l->d, s == CLBlastSuccess ? CL_SUCCESS : (cl_int)s, what, l->err, l->errlen))
        return -1;
    last_is(l, e);
    return 0;
}

static CLBlastTranspose transposed(int t) { return t ? CLBlastTransposeYes : CLBlastTransposeNo; }

static int gemm(ocl_launch *l, int ta, int tb, int M, int N, int K, float alpha, ocl_buf A,
                int lda, ocl_buf Bm, int ldb, float beta, ocl_buf C, int ldc)
{
    ocl_device *d = l->d;
    if (!d->clblast || K <= GEMM_SHORT_K)
        return RUN(l, "gemm_rowmajor", (size_t)M * N, I(ta), I(tb), I(M), I(N), I(K), F(alpha),
                   B(A, 4), I(lda), B(Bm, 4), I(ldb), F(beta), B(C, 4), I(ldc));
    cl_event e = NULL;
    CLBlastStatusCode s = (CLBlastStatusCode)ocl_injected_failure(d);
    if (s == CLBlastSuccess)
        s = CLBlastSgemm(CLBlastLayoutRowMajor, transposed(ta), transposed(tb), (size_t)M,
                         (size_t)N, (size_t)K, alpha, A.mem, A.offset / 4, (size_t)lda, Bm.mem,
                         Bm.offset / 4, (size_t)ldb, beta, C.mem, C.offset / 4, (size_t)ldc,
                         &d->queue, &e);
    return clblast_done(l, s, e, "CLBlast SGEMM");
}

/* A matrix of each of `count` GEMMs: at m, ld apart from one row to the next, `step` floats
 * from one GEMM's to the next (0: the same matrix for all). */
typedef struct batch_operand {
    ocl_buf m;
    int ld;
    size_t step;
} batch_operand;

/* C_i = op(A_i) op(B_i) (M x N, inner K) for i < count: CLBlast's strided batched GEMM. */
static int gemm_each(ocl_launch *l, int ta, int tb, int M, int N, int K, batch_operand A,
                     batch_operand Bm, batch_operand C, int count)
{
    ocl_device *d = l->d;
    cl_event e = NULL;
    CLBlastStatusCode s = (CLBlastStatusCode)ocl_injected_failure(d);
    if (s == CLBlastSuccess)
        s = CLBlastSgemmStridedBatched(
            CLBlastLayoutRowMajor, transposed(ta), transposed(tb), (size_t)M, (size_t)N,
            (size_t)K, 1.0f, A.m.mem, A.m.offset / 4, (size_t)A.ld, A.step, Bm.m.mem,
            Bm.m.offset / 4, (size_t)Bm.ld, Bm.step, 0.0f, C.m.mem, C.m.offset / 4,
            (size_t)C.ld, C.step, (size_t)count, &d->queue, &e);
    return clblast_done(l, s, e, "CLBlast batched SGEMM");
}

int ocl_kernel_load(ocl_launch *l, ocl_buf pixels, ocl_buf labels_in, ocl_buf order, long first,
              long per, int n, float scale, ocl_buf out, ocl_buf labels)
{
    ocl_buf ord = order.mem ? order : pixels;   /* a placeholder argument when not shuffled */
    return RUN(l, "load_chunk", (size_t)n * (size_t)per, B(pixels, 1), B(labels_in, 1),
               B(ord, order.mem ? 8 : 1), I(order.mem != NULL), L(first), L(per), F(scale),
               B(out, 4), B(labels, 1));
}

static ocl_buf at(ocl_buf b, size_t floats) { return (ocl_buf){b.mem, b.offset + 4 * floats}; }

#define GEOM(g) I((g)->c), I((g)->h), I((g)->w), I((g)->f), I((g)->kh), I((g)->kw), \
                I((g)->stride), I((g)->pad), I((g)->oh), I((g)->ow)

/* The output rows and filters a work-item of conv_forward computes (kernels.cl's). */
#define CONV_ROWS 4
#define CONV_FILTERS 4

static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

/* A convolution runs as a work-item per output value (kernels.cl's conv_forward and the like),
 * or as each sample's im2col matrix times the weights through CLBlast: where CLBlast passed its
 * self-check here and the layer has the filters and taps to fill a GEMM's tiles, unless
 * FRUGAL_OPENCL_CONV says direct or gemm. A direct kernel's work-item does all its taps'
 * multiply-adds alone (the forward pass's for four rows of a column and four filters: each
 * weight loaded once for four outputs, each input for four filters), where a GEMM shares its
 * operands' tiles. The
 * matrices of a chunk must also fit in one allocation of the device's. */
#define CONV_GEMM_FILTERS 16
#define CONV_GEMM_TAPS 32

static int conv_by_gemm(ocl_launch *l, const conv_geom *g, int n, int nf)
{
    const char *how = env_switch_value(ENV_OPENCL_CONV);
    size_t taps = (size_t)g->c * g->kh * g->kw, columns = taps * g->oh * g->ow * (size_t)n;
    if (!l->d->clblast || n <= 0 || 4 * columns > l->d->max_alloc / 2 ||
        (how && !strcmp(how, "direct")))
        return 0;
    return (how && !strcmp(how, "gemm")) ||
           (nf >= CONV_GEMM_FILTERS && taps >= CONV_GEMM_TAPS);
}

/* The chunk's im2col matrices, in the device's scratch buffer (*col). */
static int im2col(ocl_launch *l, const conv_geom *g, ocl_buf x, int n, ocl_buf *col)
{
    size_t count = (size_t)n * g->c * g->kh * g->kw * g->oh * g->ow;
    cl_mem m = scratch(l, OCL_SCRATCH_COLUMNS, 4 * count);
    *col = (ocl_buf){m, 0};
    return !m || RUN(l, "im2col", count, B(x, 4), B(*col, 4), GEOM(g)) ? -1 : 0;
}

int ocl_kernel_conv_forward(ocl_launch *l, const conv_geom *g, ocl_buf x, ocl_buf params, ocl_buf y,
                      int n, int f0, int f1)
{
    int nf = f1 - f0, taps = g->c * g->kh * g->kw, Q = g->oh * g->ow;
    if (!conv_by_gemm(l, g, n, nf))
        return RUN(l, "conv_forward",
                   (size_t)n * ceil_div(nf, CONV_FILTERS) * ceil_div(g->oh, CONV_ROWS) * g->ow,
                   B(x, 4), B(params, 4), B(y, 4), GEOM(g), I(f0), I(nf));
    ocl_buf col;   /* y_n = W col_n, then the biases (after the F x taps weights) */
    batch_operand W = {at(params, (size_t)f0 * taps), taps, 0};
    return im2col(l, g, x, n, &col) ||
           gemm_each(l, 0, 0, nf, Q, taps, W, (batch_operand){col, Q, (size_t)taps * Q},
                     (batch_operand){at(y, (size_t)f0 * Q), Q, (size_t)g->f * Q}, n) ||
           RUN(l, "add_bias", (size_t)n * nf * Q, B(y, 4), B(at(params, (size_t)g->f * taps), 4),
               I(g->f), I(f0), I(nf), I(Q));
}

int ocl_kernel_conv_backward_input(ocl_launch *l, const conv_geom *g, ocl_buf dy, ocl_buf params,
                             ocl_buf dx, int n)
{
    int taps = g->c * g->kh * g->kw, Q = g->oh * g->ow;
    size_t count = (size_t)n * taps * Q;
    if (!conv_by_gemm(l, g, n, g->f))
        return RUN(l, "conv_backward_input", (size_t)n * g->c * g->h * g->w, B(dy, 4),
                   B(params, 4), B(dx, 4), GEOM(g));
    cl_mem m = scratch(l, OCL_SCRATCH_COLUMNS, 4 * count);
    ocl_buf dcol = {m, 0};   /* dcol_n = W^T dy_n, then summed into dx where each tap lands */
    batch_operand W = {params, taps, 0}, DY = {dy, Q, (size_t)g->f * Q};
    return !m ||
           gemm_each(l, 1, 0, taps, Q, g->f, W, DY, (batch_operand){dcol, Q, (size_t)taps * Q}, n) ||
           RUN(l, "col2im", (size_t)n * g->c * g->h * g->w, B(dcol, 4), B(dx, 4), GEOM(g));
}

/* The direct filter gradient's work-groups (kernels.cl's GRAD_*): each a block of weights and
 * a slice of the output positions. About FILTER_GRADIENT_GROUPS of them fill a GPU, while each
 * work-item still sums at least FILTER_GRADIENT_SPAN positions. The slicing depends on the
 * sizes alone, so every device adds in the same order. */
#define GRAD_GROUP 128
#define GRAD_FILTERS 4
#define GRAD_TAPS 9
#define FILTER_GRADIENT_GROUPS 1024
#define FILTER_GRADIENT_SPAN 8

/* How many slices of `per` positions each the direct filter gradient takes (one when there are
 * none: a zero gradient). */
static size_t filter_gradient_slices(size_t positions, size_t blocks, size_t *per)
{
    size_t wanted = ceil_div(positions, (size_t)GRAD_GROUP * FILTER_GRADIENT_SPAN);
    if (wanted > ceil_div(FILTER_GRADIENT_GROUPS, blocks))
        wanted = ceil_div(FILTER_GRADIENT_GROUPS, blocks);
    *per = positions ? ceil_div(positions, wanted) : 1;
    return positions ? ceil_div(positions, *per) : 1;
}

/* The filter gradient through GEMMs: each sample's part (dy_n col_n^T, then its biases' sums)
 * into the slices' buffer, summed in sample order by the direct path's total. */
static int conv_backward_filter_gemm(ocl_launch *l, const conv_geom *g, ocl_buf x, ocl_buf dy,
                                     ocl_buf part, int n, int f0, int nf)
{
    int taps = g->c * g->kh * g->kw, Q = g->oh * g->ow, nw = nf * taps + nf;
    cl_mem m = scratch(l, OCL_SCRATCH_SLICES, sizeof(float) * (size_t)n * (size_t)nw);
    ocl_buf sums = {m, 0}, col;
    batch_operand DY = {at(dy, (size_t)f0 * Q), Q, (size_t)g->f * Q};
    return !m || im2col(l, g, x, n, &col) ||
           gemm_each(l, 0, 1, nf, taps, Q, DY, (batch_operand){col, Q, (size_t)taps * Q},
                     (batch_operand){sums, taps, (size_t)nw}, n) ||
           RUN(l, "conv_bias_sums", (size_t)n * nf, B(dy, 4), B(sums, 4), I(g->f), I(f0), I(nf),
               I(Q), I(taps)) ||
           RUN(l, "conv_backward_filter_total", (size_t)nw, B(sums, 4), B(part, 4), I(nw), I(n));
}

int ocl_kernel_conv_backward_filter(ocl_launch *l, const conv_geom *g, ocl_buf x, ocl_buf dy,
                              ocl_buf part, int n, int f0, int f1)
{
    int nf = f1 - f0, nw = nf * g->c * g->kh * g->kw + nf;
    size_t positions = (size_t)n * g->oh * g->ow;
    if (nw <= 0)
        return 0;
    if (conv_by_gemm(l, g, n, nf))
        return conv_backward_filter_gemm(l, g, x, dy, part, n, f0, nf);
    if (positions > INT_MAX) {   /* kernels.cl counts them in an int */
        snprintf(l->err, l->errlen, "%s: a filter gradient over %zu output positions, more than "
                 "2^31 - 1", l->d->name, positions);
        return -1;
    }
    size_t blocks = ceil_div(nf, GRAD_FILTERS) * ceil_div((size_t)g->c * g->kh * g->kw, GRAD_TAPS);
    size_t per, slices = filter_gradient_slices(positions, blocks, &per);
    cl_mem sums = scratch(l, OCL_SCRATCH_SLICES, sizeof(float) * slices * (size_t)nw);
    if (!sums)
        return -1;
    ocl_buf slice_sums = {sums, 0};
    return RUN_GROUPS(l, "conv_backward_filter_slices", blocks * slices * GRAD_GROUP, GRAD_GROUP,
                      B(x, 4), B(dy, 4), B(slice_sums, 4), I(n), GEOM(g), I(f0), I(nf), I(per),
                      I(slices)) ||
           RUN(l, "conv_backward_filter_total", (size_t)nw, B(slice_sums, 4), B(part, 4), I(nw),
               I(slices));
}

#define POOL(g) I((g)->c), I((g)->h), I((g)->w), I((g)->size), I((g)->stride), I((g)->oh), \
                I((g)->ow)

int ocl_kernel_maxpool_forward(ocl_launch *l, const pool_geom *g, ocl_buf x, ocl_buf y,
                         ocl_buf argmax, int n)
{
    return RUN(l, "maxpool_forward", (size_t)n * g->c * g->oh * g->ow, B(x, 4), B(y, 4),
               B(argmax, 4), POOL(g));
}

int ocl_kernel_maxpool_backward(ocl_launch *l, const pool_geom *g, ocl_buf dy, ocl_buf argmax,
                          ocl_buf dx, int n)
{
    return RUN(l, "maxpool_backward", (size_t)n * g->c * g->h * g->w, B(dy, 4), B(argmax, 4),
               B(dx, 4), POOL(g));
}

int ocl_kernel_relu_forward(ocl_launch *l, ocl_buf x, ocl_buf y, long count)
{
    return RUN(l, "relu_forward", (size_t)count, B(x, 4), B(y, 4));
}

int ocl_kernel_relu_backward(ocl_launch *l, ocl_buf y, ocl_buf dy, ocl_buf dx, long count)
{
    return RUN(l, "relu_backward", (size_t)count, B(y, 4), B(dy, 4), B(dx, 4));
}

/* A work-group per output value (kernels.cl's DOT_GROUP): a dense layer has few of them (samples
 * x outputs) over many inputs, a shape GEMMs tile badly. CLBlast took 0.8 ms on an H200 for 16
 * samples x 10 outputs x 17784 inputs (DAHL 116x158x3; its direct kernel walks all the inputs
 * in one work-group) and up to 18 ms a task in training, where this takes microseconds. 256
 * work-items a group, not 64: DAHL 270x360x3's 320 groups of 64 were too few to keep an H200's
 * memory busy (162 us a chunk of 32). */
#define DOT_GROUP 256

int ocl_kernel_dense_forward(ocl_launch *l, int in, int out, ocl_buf x, ocl_buf params, ocl_buf y,
                       int n)
{
    return RUN_GROUPS(l, "dense_forward", (size_t)n * out * DOT_GROUP, DOT_GROUP, B(x, 4),
                      B(params, 4), B(y, 4), I(in), I(out));
}

int ocl_kernel_dense_backward(ocl_launch *l, int in, int out, ocl_buf x, ocl_buf dy, ocl_buf params,
                        ocl_buf part, ocl_buf dx, int n)
{
    ocl_buf db = at(part, (size_t)in * out);
    return gemm(l, 1, 0, out, in, n, 1.0f, dy, out, x, in, 0.0f, part, in) ||
           RUN(l, "column_sum", (size_t)out, B(dy, 4), B(db, 4), I(n), I(out)) ||
           (dx.mem && gemm(l, 0, 0, n, in, out, 1.0f, dy, out, params, in, 0.0f, dx, in));
}

int ocl_kernel_relu_backward_scratch(ocl_launch *l, ocl_buf y, ocl_buf dy, long count,
                                     ocl_buf *dx)
{
    cl_mem m = scratch(l, OCL_SCRATCH_RELU, 4 * (size_t)count);
    *dx = (ocl_buf){m, 0};
    return !m || ocl_kernel_relu_backward(l, y, dy, *dx, count) ? -1 : 0;
}

int ocl_kernel_softmax_xent(ocl_launch *l, int classes, ocl_buf z, ocl_buf labels, float scale,
                      ocl_buf dz, ocl_buf pred, ocl_buf stats, int n)
{
    /* the losses, then the correct flags, per sample, in the device's scratch buffer */
    cl_mem s = scratch(l, OCL_SCRATCH_LOSS, 8 * (size_t)n);
    if (!s)
        return -1;
    karg per_sample = {sizeof(cl_mem), {.m = s}};
    ocl_buf none = z;   /* a placeholder for absent outputs */
    return RUN(l, "softmax_xent", (size_t)n, B(z, 4), B(labels, 1), I(classes), F(scale),
               B(dz.mem ? dz : none, 4), I(dz.mem != NULL), B(pred.mem ? pred : none, 4),
               I(pred.mem != NULL), per_sample) ||
           RUN(l, "chunk_stats", 1, per_sample, I(n), B(stats, 4));
}

int ocl_kernel_copy_or_add(ocl_launch *l, ocl_buf dst, ocl_buf src, long count, int copy)
{
    return RUN(l, "copy_or_add", (size_t)count, B(dst, 4), B(src, 4), I(copy));
}

int ocl_kernel_sgd(ocl_launch *l, ocl_buf w, ocl_buf g, ocl_buf v, long count, float lr,
             float momentum, float weight_decay)
{
    return RUN(l, "sgd_update", (size_t)count, B(w, 4), B(g, 4), B(v, 4), F(lr), F(momentum),
               F(weight_decay));
}

int ocl_kernel_on_done(ocl_launch *l, void (CL_CALLBACK *fn)(cl_event, cl_int, void *), void *arg)
{
    if (ocl_check(l->d, ocl_await(l->d, l->done, fn, arg), "a task's callback", l->err, l->errlen))
        return -1;
    l->done = NULL;   /* the callback releases it */
    clFlush(l->d->queue);
    return 0;
}

void ocl_kernel_enqueued(ocl_launch *l)
{
    if (l->done)   /* CLBlast's */
        clReleaseEvent(l->done);
    l->done = NULL;
    ocl_flush_later(l->d);
}

cl_int ocl_kernel_tail(ocl_device *d, cl_event *tail)
{
    *tail = NULL;
    if (!d->done_when_enqueued)
        return CL_SUCCESS;
    cl_int rc = clEnqueueMarkerWithWaitList(d->queue, 0, NULL, tail);
    if (rc == CL_SUCCESS)
        clFlush(d->queue);
    return rc;
}
