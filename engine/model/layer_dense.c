/* [dense]: y = W x + b on a vector (after flatten), W as outputs x inputs (PyTorch's Linear). */
#include "engine/model/layer.h"

#include "engine/model/device_task.h"

#include <stdio.h>

#define LAYER(f) offsetof(layer_config, f)

static const key_spec keys[] = {
    {"outputs", V_INT, LAYER(outputs), 1, 1 << 24},
    {NULL, 0, 0, 0, 0}};

static void defaults(layer_config *lc) { (void)lc; }

static const char *complete(layer_config *lc)
{
    return lc->outputs ? NULL : "[dense] needs outputs";
}

static int plan(layer *l, const layer_place *at, char *why, size_t n)
{
    if (!at->in_flat) {
        snprintf(why, n, "dense needs a flatten before it (input is %dx%dx%d)", l->in_c, l->in_h,
                 l->in_w);
        return -1;
    }
    if (!layer_size_mul(l->cfg.outputs, l->in_c, LAYER_MAX_VALUES, &l->nweights)) {
        snprintf(why, n, "%d outputs of %d inputs are more than %ld weights", l->cfg.outputs,
                 l->in_c, LAYER_MAX_VALUES);
        return -1;
    }
    l->out_c = l->cfg.outputs, l->out_h = l->out_w = 1;
    l->flat = 1;
    l->nparams = l->nweights + l->cfg.outputs;
    l->flops = 6.0 * (double)l->nweights;
    return 0;
}

static int forward(const rt_ctx *ctx, void *p)
{
    const layer_task *a = p;
    const layer *l = a->l;
    const float *w = rt_ptr(ctx, a->at.params);
    return layer_kernel_status(ctx, dense_forward(l->in_c, l->out_c, rt_ptr(ctx, a->at.in), w,
                                                  w + l->nweights, rt_ptr(ctx, a->at.out), 0, a->n));
}

/* The weight gradient into the chunk's partial gradient (weights then biases), and the input
 * gradient if a layer before has parameters. */
static int backward(const rt_ctx *ctx, void *p)
{
    const layer_task *a = p;
    const layer *l = a->l;
    const float *dy = rt_ptr(ctx, a->at.dy);
    float *part = rt_ptr(ctx, a->at.part);
    int rc = dense_backward_weights(l->in_c, l->out_c, rt_ptr(ctx, a->at.in), dy, part,
                                    part + l->nweights, 0, a->n, 0);
    if (!rc && a->want_dx)
        rc = dense_backward_input(l->in_c, l->out_c, dy, rt_ptr(ctx, a->at.params),
                                  rt_ptr(ctx, a->at.dx), 0, a->n);
    return layer_kernel_status(ctx, rc);
}

static int forward_enqueue(const rt_ctx *ctx, const layer_task *a, device_task *dt, ocl_buf dy)
{
    (void)dy;
    return ocl_kernel_dense_forward(&dt->l, a->l->in_c, a->l->out_c, device_buf(ctx, a->at.in, 0),
                                    device_buf(ctx, a->at.params, 0),
                                    device_buf(ctx, a->at.out, 0), a->n);
}

static int backward_enqueue(const rt_ctx *ctx, const layer_task *a, device_task *dt, ocl_buf dy)
{
    ocl_buf none = {NULL, 0};
    return ocl_kernel_dense_backward(&dt->l, a->l->in_c, a->l->out_c,
                                     device_buf(ctx, a->at.in, 0), dy,
                                     a->want_dx ? device_buf(ctx, a->at.params, 0) : none,
                                     device_buf(ctx, a->at.part, 0),
                                     a->want_dx ? device_buf(ctx, a->at.dx, 0) : none, a->n);
}

static int forward_cl(const rt_ctx *ctx, void *p) { return device_layer_task(ctx, p, forward_enqueue); }
static int backward_cl(const rt_ctx *ctx, void *p) { return device_layer_task(ctx, p, backward_enqueue); }

/* With the relu after it (a device-pinned run only: engine/train/plan.c). */
static int relu_fused_forward_cl(const rt_ctx *ctx, void *p)
{
    return device_layer_relu_forward(ctx, p, forward_enqueue);
}

static int relu_fused_backward_cl(const rt_ctx *ctx, void *p)
{
    return device_layer_relu_backward(ctx, p, backward_enqueue);
}

static rt_kind forward_kind = {.name = "dense_forward", .cpu = forward, .opencl = forward_cl};
static rt_kind backward_kind = {.name = "dense_backward", .cpu = backward, .opencl = backward_cl};
static rt_kind relu_fused_forward_kind = {.name = "dense_relu_forward",
                                          .opencl = relu_fused_forward_cl};
static rt_kind relu_fused_backward_kind = {.name = "dense_relu_backward",
                                           .opencl = relu_fused_backward_cl};

const layer_class layer_dense = {
    .name = "dense", .type = LAYER_DENSE, .keys = keys, .defaults = defaults,
    .complete = complete, .plan = plan, .forward = &forward_kind, .backward = &backward_kind,
    .backward_reads = READS_INPUT,
    .relu_fused_forward = &relu_fused_forward_kind, .relu_fused_backward = &relu_fused_backward_kind,
};
