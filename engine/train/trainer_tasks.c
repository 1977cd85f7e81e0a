/* The task bodies that belong to no layer: loading a chunk, tallying its loss, summing partial
 * gradients in chunk order, and the SGD update. Each finds its data through its accesses, in the
 * order trainer_internal.h gives for its arguments. */
#include "engine/train/trainer_internal.h"

#include "engine/model/device_task.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int load(const rt_ctx *ctx, void *p)
{
    const load_args *a = p;
    const uint8_t *pixels = rt_ptr(ctx, 0), *labels = rt_ptr(ctx, 1);
    void *out = rt_ptr(ctx, 2);
    uint8_t *chunk_labels = rt_ptr(ctx, 3);
    const long *order = a->shuffled ? rt_ptr(ctx, 4) : NULL;
#define SAMPLE(s) (order ? order[a->first + (s)] : a->first + (s))
    for (int s = 0; s < a->n; s++) {
        long idx = SAMPLE(s);
        const uint8_t *src = pixels + idx * a->per;
        chunk_labels[s] = labels[idx];
        if (a->bytes) {   /* the first convolution scales the bytes as it reads them */
            ((const uint8_t **)out)[s] = src;
            continue;
        }
        float *dst = (float *)out + s * a->per;
        if (s + 1 < a->n) {   /* the next sample's bytes, from anywhere in the data set */
            const uint8_t *next = pixels + SAMPLE(s + 1) * a->per;
            for (long i = 0; i < a->per; i += 64)
                __builtin_prefetch(next + i);
        }
#pragma omp simd
        for (long i = 0; i < a->per; i++)
            dst[i] = (float)src[i] * PIXEL_SCALE;
    }
#undef SAMPLE
    return 0;
}

static int tally(const rt_ctx *ctx, void *p)
{
    const tally_args *a = p;
    const chunk_stats *c = rt_ptr(ctx, 0);
    pass_totals *t = rt_ptr(ctx, 1);
    if (!isfinite(c->loss)) {   /* a device's loss task does not check */
        rt_fail(ctx, "the loss is %g: training diverged (try a smaller optimizer.lr)", c->loss);
        return -1;
    }
    if (a->marks)   /* the batches before this chunk's are tallied whole */
        trainer_close_marks(a->marks, a->batch, t);
    t->loss += c->loss;
    t->correct += c->correct;
    t->samples += c->samples;
    if (a->evaluating)
        memcpy((int32_t *)rt_ptr(ctx, 3) + a->first, rt_ptr(ctx, 2), sizeof(int32_t) * (size_t)a->n);
    atomic_fetch_add_explicit(a->done, a->n, memory_order_relaxed);
    return 0;
}

void trainer_close_marks(pass_marks *m, long before, const pass_totals *t)
{
    for (; m->next < before && m->next < m->nbatches; m->next++)
        m->at[m->next] = *t;
    atomic_store_explicit(&m->closed, m->next, memory_order_release);
}

void trainer_copy_or_add(float *dst, const float *src, long n, int copy)
{
    if (copy) {
        memcpy(dst, src, sizeof(float) * (size_t)n);
        return;
    }
#pragma omp simd
    for (long i = 0; i < n; i++)
        dst[i] += src[i];
}

/* Group g's partial gradient holds its units' weights then their biases; the layer's gradient
 * holds every weight, then every bias. */
static int gradsum(const rt_ctx *ctx, void *p)
{
    const gradsum_args *a = p;
    const layer *l = a->l;
    float *grad = rt_ptr(ctx, 0);
    long units = l->nparams - l->nweights, per = l->nweights / units;
    for (int g = 0; g < a->groups; g++) {
        const float *part = rt_ptr(ctx, 1 + g);
        int u0, u1;
        trainer_group_units(l, a->groups, g, &u0, &u1);
        trainer_copy_or_add(grad + u0 * per, part, (u1 - u0) * per, a->first);
        trainer_copy_or_add(grad + l->nweights + u0, part + (u1 - u0) * per, u1 - u0, a->first);
    }
    return 0;
}

static int sgd(const rt_ctx *ctx, void *p)
{
    const sgd_args *a = p;
    sgd_update(rt_ptr(ctx, 0), rt_ptr(ctx, 1), rt_ptr(ctx, 2), a->lr, a->momentum,
               a->weight_decay, 0, a->n);
    return 0;
}

static int update(const rt_ctx *ctx, void *p)
{
    const update_args *a = p;
    const float *parts[RT_MAX_ACCESS];
    for (int k = 0; k < a->parts; k++)
        parts[k] = rt_ptr(ctx, a->first_part + k);
    sgd_update_parts(rt_ptr(ctx, 0), parts, a->parts, a->sgd.momentum != 0 ? rt_ptr(ctx, 1) : NULL,
                     a->sgd.lr, a->sgd.momentum, a->sgd.weight_decay, a->sgd.n);
    return 0;
}

/* ---- on an OpenCL device ---- */

static int load_cl(const rt_ctx *ctx, void *p)
{
    const load_args *a = p;
    device_task dt;
    device_task_start(&dt, ctx);
    ocl_buf none = {NULL, 0};
    int rc = ocl_kernel_load(&dt.l, device_buf(ctx, 0, 0), device_buf(ctx, 1, 0),
                       a->shuffled ? device_buf(ctx, 4, 0) : none, a->first, a->per, a->n,
                       PIXEL_SCALE, device_buf(ctx, 2, 0), device_buf(ctx, 3, 0));
    return device_task_finish(&dt, ctx, rc);
}

static int gradsum_cl(const rt_ctx *ctx, void *p)
{
    const gradsum_args *a = p;
    const layer *l = a->l;
    device_task dt;
    device_task_start(&dt, ctx);
    ocl_buf grad = device_buf(ctx, 0, 0);
    long units = l->nparams - l->nweights, per = l->nweights / units;
    int rc = 0;
    for (int g = 0; g < a->groups && !rc; g++) {
        int u0, u1;
        trainer_group_units(l, a->groups, g, &u0, &u1);
        ocl_buf part = device_buf(ctx, 1 + g, 0);
        ocl_buf w = {grad.mem, grad.offset + sizeof(float) * (size_t)(u0 * per)};
        ocl_buf b = {grad.mem, grad.offset + sizeof(float) * (size_t)(l->nweights + u0)};
        ocl_buf part_b = {part.mem, part.offset + sizeof(float) * (size_t)((u1 - u0) * per)};
        rc = ocl_kernel_copy_or_add(&dt.l, w, part, (u1 - u0) * per, a->first) ||
             ocl_kernel_copy_or_add(&dt.l, b, part_b, u1 - u0, a->first);
    }
    return device_task_finish(&dt, ctx, rc);
}

static int sgd_cl(const rt_ctx *ctx, void *p)
{
    const sgd_args *a = p;
    device_task dt;
    device_task_start(&dt, ctx);
    int rc = ocl_kernel_sgd(&dt.l, device_buf(ctx, 0, 0), device_buf(ctx, 1, 0), device_buf(ctx, 2, 0),
                      a->n, a->lr, a->momentum, a->weight_decay);
    return device_task_finish(&dt, ctx, rc);
}

/* A chunk's figures are added up on the host, in chunk order. */
rt_kind trainer_load_kind = {.name = "load", .cpu = load, .opencl = load_cl};
/* The same task when the first layer reads the bytes: it writes host pointers, so CPU only. */
rt_kind trainer_load_pointers_kind = {.name = "load_pointers", .cpu = load};
rt_kind trainer_tally_kind = {.name = "tally", .cpu = tally};
rt_kind trainer_gradsum_kind = {.name = "gradient_sum", .cpu = gradsum, .opencl = gradsum_cl};
rt_kind trainer_sgd_kind = {.name = "sgd", .cpu = sgd, .opencl = sgd_cl};
/* Where no device works (their copies would come back to the host for it). */
rt_kind trainer_update_kind = {.name = "gradient_sum_sgd", .cpu = update};
