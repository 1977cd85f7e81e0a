#include "engine/train.h"

#include "runtime/clock.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The backward chain first: a layer's gradient sum and update wait behind the backward tasks
 * still to come (only the first layer's update is on the way to the next batch). */
enum { PRIO_LOAD = 1, PRIO_FORWARD = 2, PRIO_UPDATE = 2, PRIO_BACKWARD = 3 };
enum { SPLIT_TRAIN, SPLIT_TEST };
#define PIXEL_SCALE (1.0f / 255.0f)   /* bytes 0..255 to inputs 0..1 */

/* Activations and their gradients for one batch in flight. Layer l reads act[l] and writes
 * act[l+1]; a flatten layer's output is a view of its input (same memory, same handles). */
typedef struct buffers {
    float *act[CONFIG_MAX_LAYERS + 1], *grad[CONFIG_MAX_LAYERS + 1];
    int32_t *argmax[CONFIG_MAX_LAYERS];
    const uint8_t **samples;   /* with bytes_input: each sample's pixels in the data set */
    uint8_t *labels;
    /* hact[l][chunk * act_groups[l] + g]: an activation written by a convolution split into
     * filter groups has a handle per group; hgrad[l][chunk]. */
    rt_handle **hact[CONFIG_MAX_LAYERS + 1], **hgrad[CONFIG_MAX_LAYERS + 1];
    rt_handle **hlabels;
} buffers;

typedef struct chunk_stats { double loss; int correct, samples; } chunk_stats;

struct trainer {
    const job_config *cfg;
    model *m;
    rt_runtime *rt;
    const dataset *data[2];
    int batch, grain, nchunks;
    buffers set[2];                       /* alternate batches: batch b+1 loads during b's backward */
    rt_handle *hparams[CONFIG_MAX_LAYERS], *hgradsum[CONFIG_MAX_LAYERS];
    float *partial[CONFIG_MAX_LAYERS];    /* nchunks x nparams: per-chunk gradients */
    rt_handle **hpartial[CONFIG_MAX_LAYERS];   /* [chunk * groups[l] + g] */
    int need_dx[CONFIG_MAX_LAYERS];       /* does any layer before l have parameters? */
    int groups[CONFIG_MAX_LAYERS];        /* tasks per chunk of each layer, split by filters */
    int act_groups[CONFIG_MAX_LAYERS + 1];   /* handles per chunk of each activation */
    int bytes_input;                      /* a first convolution reads the data set's bytes */
    int fused[CONFIG_MAX_LAYERS];         /* conv l and the max-pool l+1 run as one task */
    long *order;
    chunk_stats *stats;                   /* [batch][chunk] of the current pass */
    _Atomic long samples_done;            /* loss computed, this pass */
    int *predictions;                     /* evaluation: argmax per sample, or NULL */
    long nstats;
    progress_fn progress;
    void *progress_ctx;
    int epoch;
    double pass_start;
};

void trainer_on_progress(trainer *t, progress_fn fn, void *ctx)
{
    t->progress = fn;
    t->progress_ctx = ctx;
}

/* What every task gets: where it works. */
typedef struct task_args {
    trainer *t;
    long first;          /* index of the batch's first sample in the pass order */
    int layer, set, chunk, n0, n1, split, batch_size;
    long stat;           /* slot in t->stats */
    int f0, f1;          /* convolutions: the filters this task computes */
} task_args;
_Static_assert(sizeof(task_args) <= RT_MAX_ARGS, "task arguments are copied into the task");

int train_grain(const job_config *cfg, const model *m)
{
    if (cfg->grain > 0)
        return cfg->grain < cfg->batch ? cfg->grain : cfg->batch;
    /* Enough samples for ~1 MFLOP per task (tens of microseconds, far above the runtime's per-task
     * cost), and enough that a chunk's compute outweighs writing and summing its partial
     * gradients, which are memory-bound: ~2000 flops per parameter (measured on DAHL's CNN from
     * 28x28 to 270x360, where 4 samples per task ran 20-30% slower than 16). At most half a
     * batch, so that a batch has two chunks to run side by side and the next batch's chunks
     * overlap its tail. Depends on the model and batch only, never on the workers: results do
     * not depend on the machine. */
    long per = m->flops_per_sample > 0 ? m->flops_per_sample : 1;
    long g = (1000000 + per - 1) / per, for_grads = (2000 * m->nparams + per - 1) / per;
    long half = (cfg->batch + 1) / 2;
    if (for_grads > g)
        g = for_grads;
    g = g < 1 ? 1 : g > half ? half : g;
    /* A power-of-two number of chunks shares evenly among 2, 4, 8... workers (3 chunks on 2
     * workers leave one idle a third of the time). */
    long chunks = 1;
    while (chunks < (cfg->batch + g - 1) / g)
        chunks *= 2;
    return (int)((cfg->batch + chunks - 1) / chunks);
}

/* Convolution tasks per chunk, each over a slice of the filters: the config's, or as many as
 * keep a task above ~1 MFLOP and every slice a whole number of 4-filter register blocks (the
 * direct kernel computes 4 filters at a time), at most 4. Like the grain, it depends on the
 * model only, and splitting never changes a result: each filter is computed the same way. */
static int filter_groups(const job_config *cfg, const layer *l, int grain)   /* 1 to 4 */
{
    if (l->type != LAYER_CONV)
        return 1;
    int f = l->conv.f;
    if (cfg->filter_groups > 0)
        return cfg->filter_groups < f ? cfg->filter_groups : f;
    double flops = 2.0 * (double)l->nweights * l->conv.oh * l->conv.ow * grain;
    int g = 1;
    while (g < 4 && f % (8 * g) == 0 && flops / (2 * g) >= 1e6)
        g *= 2;
    return g;
}

/* ---- task bodies ---- */

static int load_task(const rt_ctx *ctx, void *p)
{
    (void)ctx;
    task_args *a = p;
    trainer *t = a->t;
    const dataset *d = t->data[a->split];
    buffers *b = &t->set[a->set];
    long per = (long)d->c * d->h * d->w;
    for (int s = a->n0; s < a->n1; s++) {
        long idx = a->split == SPLIT_TRAIN ? t->order[a->first + s] : a->first + s;
        const uint8_t *src = d->pixels + idx * per;
        b->labels[s] = d->labels[idx];
        if (t->bytes_input) {   /* the first convolution scales the bytes as it reads them */
            b->samples[s] = src;
            continue;
        }
        float *dst = b->act[0] + s * per;
#pragma omp simd
        for (long i = 0; i < per; i++)
            dst[i] = (float)src[i] * PIXEL_SCALE;
    }
    return 0;
}

/* What a convolution reads: the data set's bytes (bytes_input) or the activation. */
static conv_input layer_input(const trainer *t, const buffers *b, int layer)
{
    if (layer == 0 && t->bytes_input)
        return (conv_input){NULL, b->samples, PIXEL_SCALE};
    return (conv_input){b->act[layer], NULL, 0};
}

static int forward_task(const rt_ctx *ctx, void *p)
{
    (void)ctx;
    task_args *a = p;
    layer *l = &a->t->m->layers[a->layer];
    buffers *b = &a->t->set[a->set];
    float *x = b->act[a->layer], *y = b->act[a->layer + 1];
    if (a->t->fused[a->layer]) {   /* the pooled output goes to the max-pool's output */
        conv2d_forward_maxpool(&l->conv, layer_input(a->t, b, a->layer), l->params,
                               l->params + l->nweights, &l[1].pool, b->act[a->layer + 2],
                               b->argmax[a->layer + 1], a->n0, a->n1);
        return 0;
    }
    switch (l->type) {
    case LAYER_CONV:
        conv2d_forward_in(&l->conv, layer_input(a->t, b, a->layer), l->params,
                          l->params + l->nweights, y, a->n0, a->n1, a->f0, a->f1);
        break;
    case LAYER_RELU:
        relu_forward(x, y, a->n0 * l->in_size, a->n1 * l->in_size);
        break;
    case LAYER_MAXPOOL:
        maxpool_forward(&l->pool, x, y, b->argmax[a->layer], a->n0, a->n1);
        break;
    case LAYER_DENSE:
        dense_forward(l->in_c, l->out_c, x, l->params, l->params + l->nweights, y, a->n0, a->n1);
        break;
    default:
        break;
    }
    return 0;
}

static int loss_task(const rt_ctx *ctx, void *p)
{
    task_args *a = p;
    trainer *t = a->t;
    buffers *b = &t->set[a->set];
    int L = t->m->nlayers - 1, correct = 0;
    float *dlogits = a->split == SPLIT_TRAIN ? b->grad[L] : NULL;
    double loss = softmax_xent(t->m->classes, b->act[L], b->labels, dlogits,
                               1.0f / (float)a->batch_size, a->n0, a->n1, &correct);
    if (!isfinite(loss)) {
        rt_fail(ctx, "the loss is %g: training diverged (try a smaller optimizer.lr)", loss);
        return -1;
    }
    t->stats[a->stat] = (chunk_stats){loss, correct, a->n1 - a->n0};
    if (t->predictions && a->split == SPLIT_TEST)
        for (int s = a->n0; s < a->n1; s++) {
            const float *z = b->act[L] + (size_t)s * t->m->classes;
            int best = 0;
            for (int k = 1; k < t->m->classes; k++)
                best = z[k] > z[best] ? k : best;
            t->predictions[a->first + s] = best;
        }
    atomic_fetch_add_explicit(&t->samples_done, a->n1 - a->n0, memory_order_relaxed);
    return 0;
}

static int backward_task(const rt_ctx *ctx, void *p)
{
    (void)ctx;
    task_args *a = p;
    trainer *t = a->t;
    layer *l = &t->m->layers[a->layer];
    buffers *b = &t->set[a->set];
    float *x = b->act[a->layer], *y = b->act[a->layer + 1];
    float *dy = b->grad[a->layer + 1], *dx = b->grad[a->layer];
    float *part = l->nparams ? t->partial[a->layer] + (size_t)a->chunk * l->nparams : NULL;
    int want_dx = t->need_dx[a->layer];
    if (t->fused[a->layer]) {   /* from the max-pool's output gradient and choices */
        conv2d_backward_filter_maxpool(&l->conv, layer_input(t, b, a->layer), &l[1].pool,
                                       b->grad[a->layer + 2], b->argmax[a->layer + 1], part,
                                       part + l->nweights, a->n0, a->n1, 0);
        return 0;
    }
    switch (l->type) {
    case LAYER_CONV:   /* split into filter groups, dx has a task of its own */
        conv2d_backward_filter_in(&l->conv, layer_input(t, b, a->layer), dy, part,
                                  part + l->nweights, a->n0, a->n1, a->f0, a->f1, 0);
        if (want_dx && t->groups[a->layer] == 1)
            conv2d_backward_input(&l->conv, dy, l->params, dx, a->n0, a->n1);
        break;
    case LAYER_DENSE:
        dense_backward_weights(l->in_c, l->out_c, x, dy, part, part + l->nweights, a->n0, a->n1, 0);
        if (want_dx)
            dense_backward_input(l->in_c, l->out_c, dy, l->params, dx, a->n0, a->n1);
        break;
    case LAYER_RELU:
        relu_backward(y, dy, dx, a->n0 * l->in_size, a->n1 * l->in_size);
        break;
    case LAYER_MAXPOOL:
        maxpool_backward(&l->pool, dy, b->argmax[a->layer], dx, a->n0, a->n1);
        break;
    default:
        break;
    }
    return 0;
}

static int conv_backward_input_task(const rt_ctx *ctx, void *p)
{
    (void)ctx;
    task_args *a = p;
    layer *l = &a->t->m->layers[a->layer];
    buffers *b = &a->t->set[a->set];
    conv2d_backward_input(&l->conv, b->grad[a->layer + 1], l->params, b->grad[a->layer], a->n0,
                          a->n1);
    return 0;
}

/* grad = partial[0] + partial[1] + ... in chunk order: one task per chunk, chained. */
static int gradsum_task(const rt_ctx *ctx, void *p)
{
    (void)ctx;
    task_args *a = p;
    layer *l = &a->t->m->layers[a->layer];
    const float *part = a->t->partial[a->layer] + (size_t)a->chunk * l->nparams;
    if (a->chunk == 0)
        memcpy(l->grad, part, sizeof(float) * (size_t)l->nparams);
    else
        for (long i = 0; i < l->nparams; i++)
            l->grad[i] += part[i];
    return 0;
}

static int sgd_task(const rt_ctx *ctx, void *p)
{
    (void)ctx;
    task_args *a = p;
    const job_config *cfg = a->t->cfg;
    layer *l = &a->t->m->layers[a->layer];
    sgd_update(l->params, l->grad, l->velocity, cfg->lr, cfg->momentum, cfg->weight_decay, 0,
               l->nparams);
    return 0;
}

static rt_kind k_load = {.name = "load", .cpu = load_task};
static rt_kind k_conv_fwd = {.name = "conv_forward", .cpu = forward_task};
static rt_kind k_relu_fwd = {.name = "relu_forward", .cpu = forward_task};
static rt_kind k_pool_fwd = {.name = "maxpool_forward", .cpu = forward_task};
static rt_kind k_dense_fwd = {.name = "dense_forward", .cpu = forward_task};
static rt_kind k_loss = {.name = "softmax_xent", .cpu = loss_task};
static rt_kind k_conv_bwd = {.name = "conv_backward", .cpu = backward_task};
static rt_kind k_conv_bwd_input = {.name = "conv_backward_input", .cpu = conv_backward_input_task};
static rt_kind k_conv_pool_fwd = {.name = "conv_maxpool_forward", .cpu = forward_task};
static rt_kind k_conv_pool_bwd = {.name = "conv_maxpool_backward", .cpu = backward_task};
static rt_kind k_relu_bwd = {.name = "relu_backward", .cpu = backward_task};
static rt_kind k_pool_bwd = {.name = "maxpool_backward", .cpu = backward_task};
static rt_kind k_dense_bwd = {.name = "dense_backward", .cpu = backward_task};
static rt_kind k_gradsum = {.name = "gradient_sum", .cpu = gradsum_task};
static rt_kind k_sgd = {.name = "sgd", .cpu = sgd_task};

static rt_kind *forward_kind(layer_type t)
{
    return t == LAYER_CONV ? &k_conv_fwd : t == LAYER_RELU ? &k_relu_fwd
         : t == LAYER_MAXPOOL ? &k_pool_fwd : t == LAYER_DENSE ? &k_dense_fwd : NULL;
}

static rt_kind *backward_kind(layer_type t)
{
    return t == LAYER_CONV ? &k_conv_bwd : t == LAYER_RELU ? &k_relu_bwd
         : t == LAYER_MAXPOOL ? &k_pool_bwd : t == LAYER_DENSE ? &k_dense_bwd : NULL;
}

/* ---- setup ---- */

static int alloc_buffers(trainer *t, buffers *b, const dataset *d)
{
    model *m = t->m;
    int L = m->nlayers, n = t->nchunks;
    long in = (long)d->c * d->h * d->w;
    b->labels = malloc((size_t)t->batch);
    b->samples = calloc((size_t)t->batch, sizeof *b->samples);
    b->hlabels = calloc((size_t)n, sizeof(rt_handle *));
    if (!b->labels || !b->samples || !b->hlabels)
        return -1;
    for (int l = 0; l <= L - 1; l++) {   /* act[L-1] holds the logits */
        if (l > 0 && m->layers[l - 1].type == LAYER_FLATTEN) {
            b->act[l] = b->act[l - 1], b->grad[l] = b->grad[l - 1];
            b->hact[l] = b->hact[l - 1], b->hgrad[l] = b->hgrad[l - 1];
            continue;
        }
        long size = l == 0 ? in : m->layers[l - 1].out_size;
        /* With bytes_input act[0]'s floats are never touched (so never paged in); its handles
         * still order each load before its use. */
        b->act[l] = calloc((size_t)t->batch * (size_t)size, sizeof(float));
        b->grad[l] = calloc((size_t)t->batch * (size_t)size, sizeof(float));
        int g = t->act_groups[l];
        b->hact[l] = calloc((size_t)n * g, sizeof(rt_handle *));
        b->hgrad[l] = calloc((size_t)n, sizeof(rt_handle *));
        if (!b->act[l] || !b->grad[l] || !b->hact[l] || !b->hgrad[l])
            return -1;
        for (int k = 0; k < n; k++) {
            long s0 = (long)k * t->grain;
            for (int i = 0; i < g; i++)
                b->hact[l][k * g + i] = rt_handle_register(t->rt, b->act[l] + s0 * size, 0,
                                                           "activation");
            b->hgrad[l][k] = rt_handle_register(t->rt, b->grad[l] + s0 * size, 0, "gradient");
        }
    }
    for (int l = 0; l < L; l++)
        if (m->layers[l].type == LAYER_MAXPOOL &&
            !(b->argmax[l] = calloc((size_t)t->batch * (size_t)m->layers[l].out_size, 4)))
            return -1;
    for (int k = 0; k < n; k++)
        b->hlabels[k] = rt_handle_register(t->rt, b->labels, 0, "labels");
    return 0;
}

static void free_buffers(trainer *t, buffers *b)
{
    int L = t->m->nlayers;
    for (int l = 0; l <= L - 1; l++) {
        if (l > 0 && t->m->layers[l - 1].type == LAYER_FLATTEN)
            continue;
        for (int k = 0; k < t->nchunks && b->hact[l]; k++) {
            for (int i = 0; i < t->act_groups[l]; i++)
                rt_handle_unregister(t->rt, b->hact[l][k * t->act_groups[l] + i]);
            rt_handle_unregister(t->rt, b->hgrad[l][k]);
        }
        free(b->act[l]), free(b->grad[l]), free(b->hact[l]), free(b->hgrad[l]);
    }
    for (int l = 0; l < L; l++)
        free(b->argmax[l]);
    for (int k = 0; k < t->nchunks && b->hlabels; k++)
        rt_handle_unregister(t->rt, b->hlabels[k]);
    free(b->hlabels);
    free(b->samples);
    free(b->labels);
}

trainer *trainer_create(const job_config *cfg, model *m, rt_runtime *rt, const dataset *train,
                        const dataset *test, char *err, size_t errlen)
{
    trainer *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->cfg = cfg, t->m = m, t->rt = rt;
    t->data[SPLIT_TRAIN] = train, t->data[SPLIT_TEST] = test;
    t->batch = cfg->batch;
    t->grain = train_grain(cfg, m);
    t->nchunks = (t->batch + t->grain - 1) / t->grain;
    long nbatches = (train->n + t->batch - 1) / t->batch;
    long ntest = test ? (test->n + t->batch - 1) / t->batch : 0;
    t->order = malloc(sizeof(long) * (size_t)train->n);
    t->nstats = (nbatches > ntest ? nbatches : ntest) * t->nchunks;
    t->stats = calloc((size_t)t->nstats, sizeof(chunk_stats));
    int ok = t->order && t->stats;
    int seen_params = 0;
    t->act_groups[0] = 1;
    /* A first convolution reads the data set's bytes when a chunk's inputs as floats would not
     * stay in cache between the load and the convolution (beyond ~1 MB): then the bytes cost a
     * quarter of the traffic. Small inputs are cheaper loaded once as floats and reread hot. */
    const char *input = getenv("FRUGAL_INPUT");   /* floats | bytes: tests compare the two */
    t->bytes_input = m->nlayers > 0 && m->layers[0].type == LAYER_CONV &&
                     (input ? !strcmp(input, "bytes")
                            : (double)t->grain * (double)m->layers[0].in_size * sizeof(float) > 1e6);
    for (int l = 0; l < m->nlayers && ok; l++) {
        layer *ly = &m->layers[l];
        t->need_dx[l] = seen_params;
        seen_params |= ly->nparams > 0;
        /* A convolution and the max-pool after it can fuse when nothing needs the convolution's
         * own output or its input gradient (a first layer): that output is then never stored.
         * Worth it (auto) when a chunk's output would not stay in cache between the two. */
        int fusable = ly->type == LAYER_CONV && l + 1 < m->nlayers &&
                      ly[1].type == LAYER_MAXPOOL && !t->need_dx[l] &&
                      conv_pool_fusable(&ly->conv, &ly[1].pool);
        t->fused[l] = fusable && (cfg->fuse > 0 ||
                                  (cfg->fuse == 0 &&
                                   (double)t->grain * (double)ly->out_size * sizeof(float) > 1e6));
        t->groups[l] = t->fused[l] ? 1 : filter_groups(cfg, ly, t->grain);
        /* a flatten's output is a view of its input: same handles */
        t->act_groups[l + 1] = ly->type == LAYER_FLATTEN ? t->act_groups[l] : t->groups[l];
        if (!ly->nparams)
            continue;
        int g = t->groups[l];
        t->hparams[l] = rt_handle_register(rt, ly->params, 0, "parameters");
        t->hgradsum[l] = rt_handle_register(rt, ly->grad, 0, "gradient");
        t->partial[l] = calloc((size_t)t->nchunks * (size_t)ly->nparams, sizeof(float));
        t->hpartial[l] = calloc((size_t)t->nchunks * g, sizeof(rt_handle *));
        ok = t->partial[l] && t->hpartial[l];
        for (int k = 0; ok && k < t->nchunks * g; k++)
            t->hpartial[l][k] = rt_handle_register(rt, t->partial[l], 0, "partial gradient");
    }
    for (int s = 0; s < 2 && ok; s++)
        ok = alloc_buffers(t, &t->set[s], train) == 0;
    if (!ok) {
        snprintf(err, errlen, "out of memory for batch %d (%d tasks of %d samples)", t->batch,
                 t->nchunks, t->grain);
        trainer_destroy(t);
        return NULL;
    }
    return t;
}

void trainer_destroy(trainer *t)
{
    if (!t)
        return;
    rt_wait_all(t->rt);
    for (int s = 0; s < 2; s++)
        free_buffers(t, &t->set[s]);
    for (int l = 0; l < t->m->nlayers; l++) {
        if (!t->m->layers[l].nparams)
            continue;
        rt_handle_unregister(t->rt, t->hparams[l]);
        rt_handle_unregister(t->rt, t->hgradsum[l]);
        for (int k = 0; k < t->nchunks * t->groups[l] && t->hpartial[l]; k++)
            rt_handle_unregister(t->rt, t->hpartial[l][k]);
        free(t->hpartial[l]);
        free(t->partial[l]);
    }
    free(t->order);
    free(t->stats);
    free(t);
}

/* ---- one batch as a task graph ---- */

static void submit(trainer *t, rt_kind *kind, const task_args *a, int prio, int n,
                   const rt_access *acc)
{
    rt_task_desc d = {.kind = kind, .args = a, .args_size = sizeof *a, .priority = prio,
                      .naccess = n};
    memcpy(d.access, acc, sizeof(rt_access) * (size_t)n);
    rt_submit(t->rt, &d);   /* a failure is reported by the next wait */
}

/* Chunk k of a batch of `size`: equal chunks (8,8,8,8 rather than 9,9,9,5), so that no worker
 * waits on a short last one. */
static task_args chunk_args(trainer *t, int split, long first, int size, int set, long stat0,
                            int chunks, int k)
{
    return (task_args){t, first, 0, set, k, (int)((long)k * size / chunks),
                       (int)((long)(k + 1) * size / chunks), split, size, stat0 + k, 0, 0};
}

/* Appends the handles of activation l, chunk k (one per filter group of the layer writing it). */
static int add_act(const trainer *t, const buffers *b, int l, int k, rt_mode mode, rt_access *acc,
                   int n)
{
    for (int g = 0; g < t->act_groups[l]; g++)
        acc[n++] = (rt_access){b->hact[l][k * t->act_groups[l] + g], mode};
    return n;
}

/* The backward tasks of layer l for chunk k; each declares exactly what it reads and writes. */
static void submit_backward(trainer *t, const buffers *b, task_args a, int l, int k)
{
    layer *ly = &t->m->layers[l];
    int groups = t->groups[l], dx = t->need_dx[l] && b->hgrad[l][k] != b->hgrad[l + 1][k];
    rt_access acc[RT_MAX_ACCESS];
    a.layer = l;
    if (t->fused[l]) {   /* the max-pool's output gradient and choices, and the input */
        int n = 0;
        acc[n++] = (rt_access){b->hgrad[l + 2][k], RT_R};
        n = add_act(t, b, l + 2, k, RT_R, acc, n);
        n = add_act(t, b, l, k, RT_R, acc, n);
        acc[n++] = (rt_access){t->hpartial[l][k], RT_W};
        submit(t, &k_conv_pool_bwd, &a, PRIO_BACKWARD, n, acc);
        return;
    }
    for (int g = 0; g < groups; g++) {
        int n = 0;
        acc[n++] = (rt_access){b->hgrad[l + 1][k], RT_R};
        if (ly->type == LAYER_RELU || ly->type == LAYER_MAXPOOL)
            n = add_act(t, b, l + 1, k, RT_R, acc, n);   /* the output, or the pooling's argmax */
        else
            n = add_act(t, b, l, k, RT_R, acc, n);       /* the input */
        if (ly->nparams)
            acc[n++] = (rt_access){t->hpartial[l][k * groups + g], RT_W};
        if (dx && groups == 1) {
            acc[n++] = (rt_access){b->hgrad[l][k], RT_W};
            if (ly->nparams)
                acc[n++] = (rt_access){t->hparams[l], RT_R};
        }
        a.f0 = (int)((long)g * ly->conv.f / groups);
        a.f1 = (int)((long)(g + 1) * ly->conv.f / groups);
        submit(t, backward_kind(ly->type), &a, PRIO_BACKWARD, n, acc);
    }
    if (dx && groups > 1)
        submit(t, &k_conv_bwd_input, &a, PRIO_BACKWARD, 3,
               (rt_access[]){{b->hgrad[l + 1][k], RT_R}, {t->hparams[l], RT_R},
                             {b->hgrad[l][k], RT_W}});
}

/* Submitted layer by layer across the chunks (every chunk's load, then every chunk's first
 * layer, ...): when the submitting thread stops to run a task, each chunk already has work. */
static void submit_batch(trainer *t, int split, long first, int size, int set, long stat0)
{
    model *m = t->m;
    buffers *b = &t->set[set];
    int L = m->nlayers - 1;   /* index of softmax_xent; act[L] holds the logits */
    int chunks = (size + t->grain - 1) / t->grain;
    rt_access acc[RT_MAX_ACCESS];
    task_args a;
    for (int k = 0; k < chunks; k++) {
        a = chunk_args(t, split, first, size, set, stat0, chunks, k);
        submit(t, &k_load, &a, PRIO_LOAD, 2,
               (rt_access[]){{b->hact[0][k], RT_W}, {b->hlabels[k], RT_W}});
    }
    for (int l = 0; l < L; l++) {
        rt_kind *kind = t->fused[l] ? &k_conv_pool_fwd : forward_kind(m->layers[l].type);
        if (!kind || (l > 0 && t->fused[l - 1]))
            continue;   /* flatten: a view; a fused max-pool: done with its convolution */
        int out = t->fused[l] ? l + 2 : l + 1;
        int groups = t->groups[l];
        for (int k = 0; k < chunks; k++)
            for (int g = 0; g < groups; g++) {
                a = chunk_args(t, split, first, size, set, stat0, chunks, k);
                a.layer = l;
                a.f0 = (int)((long)g * m->layers[l].conv.f / groups);
                a.f1 = (int)((long)(g + 1) * m->layers[l].conv.f / groups);
                int n = add_act(t, b, l, k, RT_R, acc, 0);
                if (groups > 1)
                    acc[n++] = (rt_access){b->hact[out][k * groups + g], RT_W};
                else
                    n = add_act(t, b, out, k, RT_W, acc, n);
                if (m->layers[l].nparams)
                    acc[n++] = (rt_access){t->hparams[l], RT_R};
                submit(t, kind, &a, PRIO_FORWARD, n, acc);
            }
    }
    for (int k = 0; k < chunks; k++) {
        a = chunk_args(t, split, first, size, set, stat0, chunks, k);
        a.layer = L;
        int n = add_act(t, b, L, k, RT_R, acc, 0);
        acc[n++] = (rt_access){b->hlabels[k], RT_R};
        if (split == SPLIT_TRAIN)
            acc[n++] = (rt_access){b->hgrad[L][k], RT_W};
        submit(t, &k_loss, &a, PRIO_BACKWARD, n, acc);
    }
    if (split != SPLIT_TRAIN)
        return;
    for (int l = L - 1; l >= 0; l--) {
        layer *ly = &m->layers[l];
        if (!backward_kind(ly->type) || (!ly->nparams && !t->need_dx[l]) ||
            (l > 0 && t->fused[l - 1]))
            continue;
        for (int k = 0; k < chunks; k++)
            submit_backward(t, b, chunk_args(t, split, first, size, set, stat0, chunks, k), l, k);
    }
    for (int l = 0; l < L; l++) {   /* fixed-order reduction, then the update */
        if (!m->layers[l].nparams)
            continue;
        int groups = t->groups[l];
        a = (task_args){t, first, l, set, 0, 0, 0, split, size, 0, 0, 0};
        for (int k = 0; k < chunks; k++) {
            a.chunk = k;
            acc[0] = (rt_access){t->hgradsum[l], k ? RT_RW : RT_W};
            for (int g = 0; g < groups; g++)
                acc[1 + g] = (rt_access){t->hpartial[l][k * groups + g], RT_R};
            submit(t, &k_gradsum, &a, PRIO_UPDATE, 1 + groups, acc);
        }
        submit(t, &k_sgd, &a, PRIO_UPDATE, 2,
               (rt_access[]){{t->hparams[l], RT_RW}, {t->hgradsum[l], RT_R}});
    }
}

static void shuffle(trainer *t, int epoch)
{
    const dataset *d = t->data[SPLIT_TRAIN];
    ops_rng r;
    ops_rng_seed(&r, t->cfg->seed * 1000003ULL + (uint64_t)epoch);
    for (long i = 0; i < d->n; i++)
        t->order[i] = i;
    for (long i = d->n - 1; i > 0; i--) {   /* Fisher-Yates */
        long j = (long)(((uint64_t)ops_rng_next(&r) << 32 | ops_rng_next(&r)) % (uint64_t)(i + 1));
        long tmp = t->order[i];
        t->order[i] = t->order[j];
        t->order[j] = tmp;
    }
}

/* Sums the stats of one pass: loss and accuracy per sample. */
static void pass_totals(trainer *t, long nslots, double *loss, double *acc, long *samples)
{
    double l = 0;
    long c = 0, n = 0;
    for (long i = 0; i < nslots; i++) {
        l += t->stats[i].loss;
        c += t->stats[i].correct;
        n += t->stats[i].samples;
    }
    *loss = n ? l / (double)n : NAN;
    *acc = n ? (double)c / (double)n : NAN;
    *samples = n;
}

static long run_pass(trainer *t, int split)
{
    const dataset *d = t->data[split];
    long slots = 0;
    int b = 0;
    memset(t->stats, 0, sizeof(chunk_stats) * (size_t)((d->n + t->batch - 1) / t->batch) * (size_t)t->nchunks);
    for (long first = 0; first < d->n; first += t->batch, b++) {
        int size = (int)(d->n - first < t->batch ? d->n - first : t->batch);
        submit_batch(t, split, first, size, b & 1, slots);
        slots += t->nchunks;
        if (t->progress && split == SPLIT_TRAIN)
            t->progress(t->progress_ctx, t->epoch, atomic_load(&t->samples_done), d->n,
                        clock_now_s() - t->pass_start);
    }
    return slots;
}

int trainer_epoch(trainer *t, int epoch, epoch_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    shuffle(t, epoch);
    t->epoch = epoch;
    atomic_store(&t->samples_done, 0);
    t->pass_start = clock_now_s();
    rt_stats_reset(t->rt);
    double t0 = clock_now_s();
    long slots = run_pass(t, SPLIT_TRAIN);
    int rc = rt_wait_all(t->rt);
    out->seconds = clock_now_s() - t0;
    rt_stats st;
    rt_stats_get(t->rt, &st);
    out->task_share = st.task_share;
    if (rc) {
        snprintf(err, errlen, "%s", rt_error(t->rt));
        return -1;
    }
    pass_totals(t, slots, &out->train_loss, &out->train_acc, &out->samples);
    out->images_per_s = (double)out->samples / out->seconds;
    out->test_loss = out->test_acc = NAN;
    if (t->data[SPLIT_TEST]) {
        long tslots = run_pass(t, SPLIT_TEST);
        if (rt_wait_all(t->rt)) {
            snprintf(err, errlen, "%s", rt_error(t->rt));
            return -1;
        }
        long n;
        pass_totals(t, tslots, &out->test_loss, &out->test_acc, &n);
    }
    return 0;
}

int trainer_evaluate(trainer *t, const dataset *d, int *predictions, double *loss, double *acc,
                     char *err, size_t errlen)
{
    long need = (d->n + t->batch - 1) / t->batch * t->nchunks;
    if (need > t->nstats) {
        chunk_stats *s = realloc(t->stats, sizeof *s * (size_t)need);
        if (!s) {
            snprintf(err, errlen, "out of memory evaluating %ld images", d->n);
            return -1;
        }
        t->stats = s, t->nstats = need;
    }
    const dataset *keep = t->data[SPLIT_TEST];
    t->data[SPLIT_TEST] = d;
    t->predictions = predictions;
    long slots = run_pass(t, SPLIT_TEST);
    int rc = rt_wait_all(t->rt);
    t->data[SPLIT_TEST] = keep;
    t->predictions = NULL;
    if (rc) {
        snprintf(err, errlen, "%s", rt_error(t->rt));
        return -1;
    }
    long n;
    pass_totals(t, slots, loss, acc, &n);
    return 0;
}
