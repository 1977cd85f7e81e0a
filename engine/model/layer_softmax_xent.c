/* [softmax_xent]: softmax and cross-entropy, the last layer, after a dense layer with one output
 * per class. Its forward task is the loss: per chunk, the summed loss and the correct
 * predictions, the gradient of the mean loss with respect to the logits when training, and the
 * predicted classes when evaluating. A loss that is not finite fails the task: training
 * diverged. */
#include "engine/model/layer.h"

#include "engine/model/device_task.h"

#include <math.h>
#include <stdio.h>

static const key_spec keys[] = {{NULL, 0, 0, 0, 0}};

static void defaults(layer_config *lc) { (void)lc; }
static const char *complete(layer_config *lc) { (void)lc; return NULL; }

static int plan(layer *l, const layer_place *at, char *why, size_t n)
{
    if (at->index != at->count - 1) {
        snprintf(why, n, "softmax_xent must be the last layer");
        return -1;
    }
    if (!at->prev || at->prev->cfg.type != LAYER_DENSE) {
        snprintf(why, n, "softmax_xent must follow a dense layer");
        return -1;
    }
    if (l->in_c != at->classes) {
        snprintf(why, n, "the dense layer before it has %d outputs, the data has %d classes",
                 l->in_c, at->classes);
        return -1;
    }
    l->out_c = l->in_c, l->out_h = l->out_w = 1;
    l->flat = 1;
    return 0;
}

static int loss(const rt_ctx *ctx, void *p)
{
    const layer_task *a = p;
    int classes = a->l->in_c, correct = 0;
    const float *logits = rt_ptr(ctx, a->at.in);
    float *dlogits = a->at.dy >= 0 ? rt_ptr(ctx, a->at.dy) : NULL;
    double sum = ops_softmax_xent(classes, logits, rt_ptr(ctx, a->at.labels), dlogits, a->scale, 0,
                              a->n, &correct);
    if (!isfinite(sum)) {
        rt_fail(ctx, "the loss is %g: training diverged (try a smaller optimizer.lr)", sum);
        return -1;
    }
    *(chunk_stats *)rt_ptr(ctx, a->at.stats) = (chunk_stats){sum, correct, a->n};
    if (a->at.aux >= 0) {   /* evaluation: each sample's class */
        int32_t *pred = rt_ptr(ctx, a->at.aux);
        for (int s = 0; s < a->n; s++) {
            const float *z = logits + (size_t)s * classes;
            int best = 0;
            for (int k = 1; k < classes; k++)
                best = z[k] > z[best] ? k : best;
            pred[s] = best;
        }
    }
    return 0;
}

/* On a device a loss that is not finite is found by the tally on the host. */
static int loss_cl(const rt_ctx *ctx, void *p)
{
    const layer_task *a = p;
    device_task dt;
    device_task_start(&dt, ctx);
    ocl_buf none = {NULL, 0};
    int rc = ocl_kernel_softmax_xent(&dt.l, a->l->in_c, device_buf(ctx, a->at.in, 0),
                               device_buf(ctx, a->at.labels, 0), a->scale,
                               a->at.dy >= 0 ? device_buf(ctx, a->at.dy, 0) : none,
                               a->at.aux >= 0 ? device_buf(ctx, a->at.aux, 0) : none,
                               device_buf(ctx, a->at.stats, 0), a->n);
    return device_task_finish(&dt, ctx, rc);
}

static rt_kind loss_kind = {.name = "softmax_xent", .cpu = loss, .opencl = loss_cl};

const layer_class layer_softmax_xent = {
    .name = "softmax_xent", .type = LAYER_SOFTMAX_XENT, .keys = keys, .defaults = defaults,
    .complete = complete, .plan = plan, .forward = &loss_kind, .loss = 1,
};
