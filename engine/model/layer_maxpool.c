/* [maxpool]: the maximum of each size x size window, `stride` apart (default: size). Forward
 * keeps each output's winning input (argmax) for backward. */
#include "engine/model/layer.h"

#include "engine/model/device_task.h"

#include <stdio.h>

#define LAYER(f) offsetof(layer_config, f)

static const key_spec keys[] = {
    {"size", V_INT, LAYER(size), 1, 64},
    {"stride", V_INT, LAYER(stride), 1, 64},
    {NULL, 0, 0, 0, 0}};

static void defaults(layer_config *lc)
{
    lc->size = 2;
    lc->stride = 0;   /* the same as size unless set */
}

static const char *complete(layer_config *lc)
{
    if (!lc->stride)
        lc->stride = lc->size;
    return NULL;
}

static int plan(layer *l, const layer_place *at, char *why, size_t n)
{
    if (at->in_flat) {
        snprintf(why, n, "pooling cannot follow flatten or dense");
        return -1;
    }
    if (pool_geom_init(&l->pool, l->in_c, l->in_h, l->in_w, l->cfg.size, l->cfg.stride)) {
        snprintf(why, n, "a %dx%d window does not fit a %dx%d input", l->cfg.size, l->cfg.size,
                 l->in_h, l->in_w);
        return -1;
    }
    l->out_c = l->in_c, l->out_h = l->pool.oh, l->out_w = l->pool.ow;
    return 0;
}

static int forward(const rt_ctx *ctx, void *p)
{
    const layer_task *a = p;
    ops_maxpool_forward(&a->l->pool, rt_ptr(ctx, a->at.in), rt_ptr(ctx, a->at.out),
                    rt_ptr(ctx, a->at.aux), 0, a->n);
    return 0;
}

static int backward(const rt_ctx *ctx, void *p)
{
    const layer_task *a = p;
    ops_maxpool_backward(&a->l->pool, rt_ptr(ctx, a->at.dy), rt_ptr(ctx, a->at.aux),
                     rt_ptr(ctx, a->at.dx), 0, a->n);
    return 0;
}

static int forward_enqueue(const rt_ctx *ctx, const layer_task *a, device_task *dt, ocl_buf dy)
{
    (void)dy;
    return ocl_kernel_maxpool_forward(&dt->l, &a->l->pool, device_buf(ctx, a->at.in, 0),
                                      device_buf(ctx, a->at.out, 0), device_buf(ctx, a->at.aux, 0),
                                      a->n);
}

static int backward_enqueue(const rt_ctx *ctx, const layer_task *a, device_task *dt, ocl_buf dy)
{
    return ocl_kernel_maxpool_backward(&dt->l, &a->l->pool, dy, device_buf(ctx, a->at.aux, 0),
                                       device_buf(ctx, a->at.dx, 0), a->n);
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

static rt_kind forward_kind = {.name = "maxpool_forward", .cpu = forward, .opencl = forward_cl};
static rt_kind backward_kind = {.name = "maxpool_backward", .cpu = backward,
                                .opencl = backward_cl};
static rt_kind relu_fused_forward_kind = {.name = "maxpool_relu_forward",
                                          .opencl = relu_fused_forward_cl};
static rt_kind relu_fused_backward_kind = {.name = "maxpool_relu_backward",
                                           .opencl = relu_fused_backward_cl};

const layer_class layer_maxpool = {
    .name = "maxpool", .type = LAYER_MAXPOOL, .keys = keys, .defaults = defaults,
    .complete = complete, .plan = plan, .forward = &forward_kind, .backward = &backward_kind,
    .backward_reads = READS_AUX, .aux_bytes = sizeof(int32_t), .max_pool = 1,
    .relu_fused_forward = &relu_fused_forward_kind, .relu_fused_backward = &relu_fused_backward_kind,
};
