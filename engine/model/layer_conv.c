/* [conv]: a 2-D convolution (ops/conv.h), NCHW, with bias. Its tasks may be split by filters
 * (conv_filter_groups), and a convolution whose output goes only to a max-pool or a relu may
 * run fused with it (the trainer decides: engine/train/plan.c). */
#include "engine/model/layer.h"

#include "engine/model/device_task.h"

#include <stdio.h>

#define LAYER(f) offsetof(layer_config, f)

static const key_spec keys[] = {
    {"filters", V_INT, LAYER(filters), 1, 65536},
    {"size", V_INT, LAYER(size), 1, 64},
    {"stride", V_INT, LAYER(stride), 1, 64},
    {"padding", V_INT, LAYER(padding), 0, 64},
    {NULL, 0, 0, 0, 0}};

static void defaults(layer_config *lc)
{
    lc->size = 3;
    lc->stride = 1;
}

static const char *complete(layer_config *lc)
{
    return lc->filters ? NULL : "[conv] needs filters";
}

static int plan(layer *l, const layer_place *at, char *why, size_t n)
{
    const layer_config *c = &l->cfg;
    if (at->in_flat) {
        snprintf(why, n, "a convolution cannot follow flatten or dense");
        return -1;
    }
    if (conv_geom_init(&l->conv, l->in_c, l->in_h, l->in_w, c->filters, c->size, c->size,
                       c->stride, c->padding)) {
        snprintf(why, n, "a %dx%d kernel with padding %d does not fit a %dx%d input", c->size,
                 c->size, c->padding, l->in_h, l->in_w);
        return -1;
    }
    long per_filter = (long)l->in_c * c->size * c->size;   /* at most 2^16 * 64 * 64 */
    if (!layer_size_mul(c->filters, per_filter, LAYER_MAX_VALUES, &l->nweights)) {
        snprintf(why, n, "%d filters of %ld weights are more than %ld", c->filters, per_filter,
                 LAYER_MAX_VALUES);
        return -1;
    }
    l->out_c = c->filters, l->out_h = l->conv.oh, l->out_w = l->conv.ow;
    l->nparams = l->nweights + c->filters;
    l->flops = 6.0 * (double)l->nweights * l->conv.oh * l->conv.ow;   /* forward, dx, dW */
    return 0;
}

static int groups(const layer *l, int configured, int grain)
{
    int f = l->conv.f;
    if (configured > 0)
        return configured < f ? configured : f;
    /* As many as keep a task above ~1 MFLOP and every slice a whole number of 4-filter register
     * blocks (the direct kernel computes 4 filters at a time), at most 4. Like the grain, it
     * depends on the model only, and splitting never changes a result. */
    conv_strategy path = conv_path(&l->conv, CONV_FORWARD);
    if (path == CONV_WINOGRAD || path == CONV_WINOGRAD4)
        return 1;   /* each group would transform the chunk's input again (measured slower) */
    double flops = 2.0 * (double)l->nweights * l->conv.oh * l->conv.ow * grain;
    int g = 1;
    while (g < 4 && f % (8 * g) == 0 && flops / (2 * g) >= 1e6)
        g *= 2;
    return g;
}

static conv_strategy kernel_path(const layer *l, int pass)
{
    return conv_path(&l->conv, (conv_pass)pass);
}

static double executed_share(const layer *l, int pass)
{
    return conv_executed_share(&l->conv, kernel_path(l, pass));
}

/* A convolution and the max-pool after it can fuse when nothing needs the convolution's own
 * output, and its input gradient comes from the pooled gradient too (Winograd) or is not
 * needed (a first layer): that output is then never stored. Faster wherever measured (DAHL's
 * 28x28x1 first layer, once 33% slower fused, now 35% faster: docs/training.md). */
static int fuses_pool(const layer *l, const layer *next, int need_dx)
{
    return need_dx ? conv_pool_fusable_with_input_gradient(&l->conv, &next->pool)
                   : conv_pool_fusable(&l->conv, &next->pool);
}

/* ---- tasks ---- */

/* The layer's geometry with the activations' layout the plan chose for this task. */
static conv_geom geom_of(const layer_task *a)
{
    conv_geom g = a->l->conv;
    g.in_lanes = a->in_lanes, g.out_lanes = a->out_lanes;
    return g;
}

/* The input: the activation, or for a first layer possibly the data set's bytes in place. */
static conv_input input_of(const rt_ctx *ctx, const layer_task *a)
{
    if (a->bytes_input)
        return (conv_input){NULL, rt_ptr(ctx, a->at.samples), PIXEL_SCALE, 0};
    return (conv_input){rt_ptr(ctx, a->at.in), NULL, 0, 0};
}

/* Filters [f0, f1) of a chunk's output are a part that starts at filter f0 of its first sample;
 * the kernels take the chunk's start and the filter range. */
static float *chunk_start(const rt_ctx *ctx, int i, const layer_task *a)
{
    return (float *)rt_ptr(ctx, i) - (size_t)a->f0 * a->l->conv.oh * a->l->conv.ow;
}

static int forward(const rt_ctx *ctx, void *p)
{
    const layer_task *a = p;
    conv_geom g = geom_of(a);
    const layer *l = a->l;
    const float *w = rt_ptr(ctx, a->at.params);
    return layer_kernel_status(ctx, ops_conv2d_forward_in(&g, input_of(ctx, a), w,
                                                      w + l->nweights, chunk_start(ctx, a->at.out, a),
                                                      0, a->n, a->f0, a->f1));
}

/* The filter gradient of filters [f0, f1) into the group's partial gradient, laid out as their
 * weights then their biases; with one group, the input gradient too. */
static int backward(const rt_ctx *ctx, void *p)
{
    const layer_task *a = p;
    conv_geom g = geom_of(a);
    const layer *l = a->l;
    const float *dy = rt_ptr(ctx, a->at.dy);
    float *dw = rt_ptr(ctx, a->at.part);
    long per_filter = l->nweights / l->conv.f;
    if (a->want_dx)   /* one group: all filters */
        return layer_kernel_status(ctx, ops_conv2d_backward(&g, input_of(ctx, a), dy,
                                                        rt_ptr(ctx, a->at.params), dw,
                                                        dw + l->nweights, rt_ptr(ctx, a->at.dx),
                                                        0, a->n));
    return layer_kernel_status(ctx, ops_conv2d_backward_filter_in(&g, input_of(ctx, a), dy, dw,
                                                              dw + (a->f1 - a->f0) * per_filter,
                                                              0, a->n, a->f0, a->f1, 0));
}

static int backward_input(const rt_ctx *ctx, void *p)
{
    const layer_task *a = p;
    conv_geom g = geom_of(a);
    return layer_kernel_status(ctx, ops_conv2d_backward_input(&g, rt_ptr(ctx, a->at.dy),
                                                          rt_ptr(ctx, a->at.params),
                                                          rt_ptr(ctx, a->at.dx), 0, a->n));
}

/* Fused with the max-pool after it (the next layer), and maybe the relu after that: the pooled
 * output and its argmax. */
static int fused_forward(const rt_ctx *ctx, void *p)
{
    const layer_task *a = p;
    conv_geom g = geom_of(a);
    const layer *l = a->l;
    const float *w = rt_ptr(ctx, a->at.params);
    return layer_kernel_status(ctx, ops_conv2d_forward_maxpool(&g, input_of(ctx, a), w,
                                                           w + l->nweights, &l[1].pool, a->relu,
                                                           rt_ptr(ctx, a->at.out),
                                                           rt_ptr(ctx, a->at.aux), 0, a->n));
}

/* A fused backward's input: through the relu before too, where the plan left that relu's
 * backward to this layer's input gradient. */
static conv_input backward_input_of(const rt_ctx *ctx, const layer_task *a)
{
    conv_input x = input_of(ctx, a);
    x.relu_output = a->dx_through_relu;
    return x;
}

/* From the pooled gradient (through the relu, if fused: its output is at.out; none when the
 * layer after took the relu's backward) and the argmax to the filter gradient, and the input
 * gradient where one is wanted (the Winograd paths only: engine/train/plan.c). */
static int fused_backward(const rt_ctx *ctx, void *p)
{
    const layer_task *a = p;
    conv_geom g = geom_of(a);
    const layer *l = a->l;
    float *dw = rt_ptr(ctx, a->at.part);
    return layer_kernel_status(
        ctx, ops_conv2d_backward_maxpool(&g, backward_input_of(ctx, a), &l[1].pool,
                                     a->at.out >= 0 ? rt_ptr(ctx, a->at.out) : NULL,
                                     rt_ptr(ctx, a->at.dy), rt_ptr(ctx, a->at.aux),
                                     a->want_dx ? rt_ptr(ctx, a->at.params) : NULL, dw,
                                     dw + l->nweights, a->want_dx ? rt_ptr(ctx, a->at.dx) : NULL,
                                     0, a->n, 0));
}

/* Fused with the relu after it (the next layer): the relu's output; backward, from its
 * gradient through it (at.out: its output; none when the layer after took the relu's backward)
 * to the filter gradient and, where wanted, the input gradient (the Winograd paths only:
 * fuses_relu). */
static int relu_fused_forward(const rt_ctx *ctx, void *p)
{
    const layer_task *a = p;
    conv_geom g = geom_of(a);
    const layer *l = a->l;
    const float *w = rt_ptr(ctx, a->at.params);
    return layer_kernel_status(ctx, ops_conv2d_forward_relu(&g, input_of(ctx, a), w,
                                                            w + l->nweights,
                                                            rt_ptr(ctx, a->at.out), 0, a->n));
}

static int relu_fused_backward(const rt_ctx *ctx, void *p)
{
    const layer_task *a = p;
    conv_geom g = geom_of(a);
    const layer *l = a->l;
    float *dw = rt_ptr(ctx, a->at.part);
    return layer_kernel_status(
        ctx, ops_conv2d_backward_relu(&g, backward_input_of(ctx, a),
                                      a->at.out >= 0 ? rt_ptr(ctx, a->at.out) : NULL,
                                      rt_ptr(ctx, a->at.dy),
                                      a->want_dx ? rt_ptr(ctx, a->at.params) : NULL, dw,
                                      dw + l->nweights, a->want_dx ? rt_ptr(ctx, a->at.dx) : NULL,
                                      0, a->n));
}

/* A relu after it fuses where the kernels can take it (the Winograd paths, the direct one
 * without the input gradient): each output row goes through the relu as it is stored, and the
 * gradient as it is read, which saves the relu's tasks and a pass over the activations and
 * gradients each way (./build.sh bench ops: conv_relu_*). */
static int fuses_relu(const layer *l, int need_dx)
{
    return conv_relu_fusable(&l->conv, need_dx);
}

/* Channel lanes where the kernels take them, each task's filters in blocks of 16. */
static int lanes_layout(const layer *l, int which, int need_dx, int groups, const layer *pool)
{
    return l->conv.f % (16 * groups) == 0 &&
           conv_lanes_layout(&l->conv, pool ? &pool->pool : NULL, which, need_dx);
}

/* ---- on an OpenCL device: the same work, the same accesses ---- */

static int forward_enqueue(const rt_ctx *ctx, const layer_task *a, device_task *dt, ocl_buf dy)
{
    (void)dy;
    const layer *l = a->l;
    size_t plane = sizeof(float) * (size_t)l->conv.oh * (size_t)l->conv.ow;
    return ocl_kernel_conv_forward(&dt->l, &l->conv, device_buf(ctx, a->at.in, 0),
                                   device_buf(ctx, a->at.params, 0),
                                   device_buf(ctx, a->at.out, (size_t)a->f0 * plane), a->n,
                                   a->f0, a->f1);
}

static int backward_enqueue(const rt_ctx *ctx, const layer_task *a, device_task *dt, ocl_buf dy)
{
    const layer *l = a->l;
    return ocl_kernel_conv_backward_filter(&dt->l, &l->conv, device_buf(ctx, a->at.in, 0), dy,
                                           device_buf(ctx, a->at.part, 0), a->n, a->f0, a->f1) ||
           (a->want_dx && ocl_kernel_conv_backward_input(&dt->l, &l->conv, dy,
                                                         device_buf(ctx, a->at.params, 0),
                                                         device_buf(ctx, a->at.dx, 0), a->n));
}

static int backward_input_enqueue(const rt_ctx *ctx, const layer_task *a, device_task *dt,
                                  ocl_buf dy)
{
    return ocl_kernel_conv_backward_input(&dt->l, &a->l->conv, dy,
                                          device_buf(ctx, a->at.params, 0),
                                          device_buf(ctx, a->at.dx, 0), a->n);
}

static int forward_cl(const rt_ctx *ctx, void *p)
{
    return device_layer_task(ctx, p, forward_enqueue);
}

static int backward_cl(const rt_ctx *ctx, void *p)
{
    return device_layer_task(ctx, p, backward_enqueue);
}

static int backward_input_cl(const rt_ctx *ctx, void *p)
{
    return device_layer_task(ctx, p, backward_input_enqueue);
}

static int relu_fused_forward_cl(const rt_ctx *ctx, void *p)
{
    return device_layer_relu_forward(ctx, p, forward_enqueue);
}

static int relu_fused_backward_cl(const rt_ctx *ctx, void *p)
{
    return device_layer_relu_backward(ctx, p, backward_enqueue);
}

/* The first layer's input as bytes and the fused max-pool run on the CPU only: the plan turns
 * them off when devices are in use (engine/train/plan.c); a fused relu runs on both. */
static rt_kind forward_kind = {.name = "conv_forward", .cpu = forward, .opencl = forward_cl};
static rt_kind backward_kind = {.name = "conv_backward", .cpu = backward, .opencl = backward_cl};
static rt_kind backward_input_kind = {.name = "conv_backward_input", .cpu = backward_input,
                                    .opencl = backward_input_cl};
static rt_kind fused_forward_kind = {.name = "conv_maxpool_forward", .cpu = fused_forward};
static rt_kind fused_backward_kind = {.name = "conv_maxpool_backward", .cpu = fused_backward};
static rt_kind relu_fused_forward_kind = {.name = "conv_relu_forward", .cpu = relu_fused_forward,
                                          .opencl = relu_fused_forward_cl};
static rt_kind relu_fused_backward_kind = {.name = "conv_relu_backward",
                                           .cpu = relu_fused_backward,
                                           .opencl = relu_fused_backward_cl};

const layer_class layer_conv = {
    .name = "conv", .type = LAYER_CONV, .keys = keys, .defaults = defaults, .complete = complete,
    .plan = plan, .forward = &forward_kind, .backward = &backward_kind,
    .backward_reads = READS_INPUT, .reads_bytes = 1, .kernel_path = kernel_path,
    .executed_share = executed_share, .groups = groups,
    .fuses_pool = fuses_pool, .fused_forward = &fused_forward_kind,
    .fused_backward = &fused_backward_kind, .backward_input = &backward_input_kind,
    .gates_input_gradient = 1, .fuses_relu = fuses_relu,
    .relu_fused_forward = &relu_fused_forward_kind,
    .relu_fused_backward = &relu_fused_backward_kind, .lanes_layout = lanes_layout,
};
