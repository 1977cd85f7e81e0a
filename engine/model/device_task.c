#include "engine/model/device_task.h"

#include <stdlib.h>

void device_task_start(device_task *dt, const rt_ctx *ctx)
{
    dt->err[0] = 0;
    dt->l = (ocl_launch){rt_device_ctx(ctx), NULL, dt->err, sizeof dt->err};
}

ocl_buf device_buf(const rt_ctx *ctx, int i, size_t back)
{
    size_t offset;
    cl_mem m = rt_mem(ctx, i, &offset);
    return (ocl_buf){m, offset - back};
}

/* What the device's callback needs to complete the task. */
typedef struct completion {
    rt_runtime *rt;
    rt_task *task;
} completion;

static void CL_CALLBACK done(cl_event e, cl_int status, void *arg)
{
    completion *c = arg;
    rt_task_complete(c->rt, c->task, status != CL_COMPLETE,
                     status != CL_COMPLETE ? ocl_error_name(status) : NULL);
    clReleaseEvent(e);
    free(c);
}

int device_task_finish(device_task *dt, const rt_ctx *ctx, int rc)
{
    if (!rc && dt->l.d->done_when_enqueued) {   /* done in the queue's order (kernels.h) */
        ocl_kernel_enqueued(&dt->l);
        return 0;
    }
    completion *c = rc ? NULL : malloc(sizeof *c);
    if (c) {
        *c = (completion){ctx->rt, ctx->task};
        if (!dt->l.done)   /* nothing was enqueued (an empty chunk): done now */
            return rt_task_complete(ctx->rt, ctx->task, 0, NULL), free(c), RT_PENDING;
        if (ocl_kernel_on_done(&dt->l, done, c) == 0)
            return RT_PENDING;
        free(c);
    }
    if (dt->l.done)
        clReleaseEvent(dt->l.done);
    rt_fail(ctx, "%s", dt->err[0] ? dt->err : "out of memory");
    return -1;
}

int device_layer_task(const rt_ctx *ctx, const layer_task *a, device_enqueue_fn enqueue)
{
    device_task dt;
    device_task_start(&dt, ctx);
    ocl_buf none = {NULL, 0};
    int rc = enqueue(ctx, a, &dt, a->at.dy >= 0 ? device_buf(ctx, a->at.dy, 0) : none);
    return device_task_finish(&dt, ctx, rc);
}

int device_layer_relu_forward(const rt_ctx *ctx, const layer_task *a, device_enqueue_fn enqueue)
{
    device_task dt;
    device_task_start(&dt, ctx);
    ocl_buf out = device_buf(ctx, a->at.out, 0), none = {NULL, 0};
    int rc = enqueue(ctx, a, &dt, none) ||
             ocl_kernel_relu_forward(&dt.l, out, out, (long)a->n * a->l->out_size);
    return device_task_finish(&dt, ctx, rc);
}

int device_layer_relu_backward(const rt_ctx *ctx, const layer_task *a, device_enqueue_fn enqueue)
{
    device_task dt;
    device_task_start(&dt, ctx);
    ocl_buf through;
    int rc = ocl_kernel_relu_backward_scratch(&dt.l, device_buf(ctx, a->at.out, 0),
                                              device_buf(ctx, a->at.dy, 0),
                                              (long)a->n * a->l->out_size, &through) ||
             enqueue(ctx, a, &dt, through);
    return device_task_finish(&dt, ctx, rc);
}
