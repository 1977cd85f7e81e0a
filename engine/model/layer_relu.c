/* [relu]: max(x, 0), NaN passing through (a diverged run must not hide). A relu directly before
 * a max-pool runs after it instead (engine/model/model.c): the two commute exactly. */
#include "engine/model/layer.h"

#include "engine/model/device_task.h"

static const key_spec keys[] = {{NULL, 0, 0, 0, 0}};

static void defaults(layer_config *lc) { (void)lc; }
static const char *complete(layer_config *lc) { (void)lc; return NULL; }

static int plan(layer *l, const layer_place *at, char *why, size_t n)
{
    (void)at, (void)why, (void)n;
    l->out_c = l->in_c, l->out_h = l->in_h, l->out_w = l->in_w;
    l->flat = at->in_flat;
    return 0;
}

static int forward(const rt_ctx *ctx, void *p)
{
    const layer_task *a = p;
    ops_relu_forward(rt_ptr(ctx, a->at.in), rt_ptr(ctx, a->at.out), 0, a->n * a->l->in_size);
    return 0;
}

static int backward(const rt_ctx *ctx, void *p)
{
    const layer_task *a = p;
    ops_relu_backward(rt_ptr(ctx, a->at.out), rt_ptr(ctx, a->at.dy), rt_ptr(ctx, a->at.dx), 0,
                  a->n * a->l->in_size);
    return 0;
}

static int forward_cl(const rt_ctx *ctx, void *p)
{
    const layer_task *a = p;
    device_task dt;
    device_task_start(&dt, ctx);
    int rc = ocl_kernel_relu_forward(&dt.l, device_buf(ctx, a->at.in, 0), device_buf(ctx, a->at.out, 0),
                               a->n * a->l->in_size);
    return device_task_finish(&dt, ctx, rc);
}

static int backward_cl(const rt_ctx *ctx, void *p)
{
    const layer_task *a = p;
    device_task dt;
    device_task_start(&dt, ctx);
    int rc = ocl_kernel_relu_backward(&dt.l, device_buf(ctx, a->at.out, 0), device_buf(ctx, a->at.dy, 0),
                                device_buf(ctx, a->at.dx, 0), a->n * a->l->in_size);
    return device_task_finish(&dt, ctx, rc);
}

static rt_kind forward_kind = {.name = "relu_forward", .cpu = forward, .opencl = forward_cl};
static rt_kind backward_kind = {.name = "relu_backward", .cpu = backward, .opencl = backward_cl};

const layer_class layer_relu = {
    .name = "relu", .type = LAYER_RELU, .keys = keys, .defaults = defaults, .complete = complete,
    .plan = plan, .forward = &forward_kind, .backward = &backward_kind,
    .backward_reads = READS_OUTPUT, .monotone = 1,
    .gates_by_output = 1,
};
