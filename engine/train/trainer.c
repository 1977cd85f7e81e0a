/* The trainer's lifetime: the buffers of the batches in flight, the partial gradients, and a
 * handle for every region a task touches (a chunk's activations, one filter group's share of
 * them, a chunk's partial gradient...), so that the runtime knows exactly what each task reads
 * and writes, and where it lives. */
#include "engine/train/trainer_internal.h"

#include "common/large_alloc.h"
#include "engine/job/memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void trainer_group_units(const layer *l, int groups, int g, int *u0, int *u1)
{
    int units = (int)(l->nparams - l->nweights);   /* a bias each: filters, outputs */
    *u0 = (int)((long)g * units / groups);
    *u1 = (int)((long)(g + 1) * units / groups);
}

const exec_plan *trainer_plan(const trainer *t) { return &t->plan; }

/* Group g's part of a layer's partial gradient (its units' weights, then their biases) to or
 * from the layer's order. */
static void regroup(const trainer *t, int l, const float *in, float *out, int to_wire)
{
    const layer *ly = &t->m->layers[l];
    int groups = t->plan.groups[l];
    if (groups == 1) {
        memcpy(out, in, sizeof(float) * (size_t)ly->nparams);
        return;
    }
    long per = ly->nweights / (ly->nparams - ly->nweights);
    for (int g = 0; g < groups; g++) {
        int u0, u1;
        trainer_group_units(ly, groups, g, &u0, &u1);
        long part = u0 * (per + 1), weights = u0 * per, biases = ly->nweights + u0;
        size_t nw = (size_t)((u1 - u0) * per), nb = (size_t)(u1 - u0);
        if (to_wire) {
            memcpy(out + weights, in + part, sizeof(float) * nw);
            memcpy(out + biases, in + part + nw, sizeof(float) * nb);
        } else {
            memcpy(out + part, in + weights, sizeof(float) * nw);
            memcpy(out + part + nw, in + biases, sizeof(float) * nb);
        }
    }
}

void trainer_grad_to_wire(const trainer *t, int layer, const float *groups, float *wire)
{
    regroup(t, layer, groups, wire, 1);
}

void trainer_grad_from_wire(const trainer *t, int layer, const float *wire, float *groups)
{
    regroup(t, layer, wire, groups, 0);
}

void trainer_on_progress(trainer *t, progress_fn fn, void *ctx)
{
    t->progress = fn;
    t->progress_ctx = ctx;
}

void trainer_stop_when(trainer *t, const _Atomic int *flag) { t->stop = flag; }

long trainer_samples_done(const trainer *t) { return atomic_load(&((trainer *)t)->samples_done); }

long trainer_batches_closed(const trainer *t, long *first)
{
    *first = t->marks.first;
    return atomic_load_explicit(&((trainer *)t)->marks.closed, memory_order_acquire);
}

pass_result trainer_totals_through(const trainer *t, long batch)
{
    const pass_totals *m = &t->marks.at[batch];
    return (pass_result){.loss = m->loss, .correct = m->correct, .samples = m->samples};
}

/* ---- buffers cut into parts ---- */

/* A buffer of nchunks pieces for the batch in flight, and its whole handle. */
static int chunked_start(trainer *t, chunked *c, const char *name, size_t bytes, int groups)
{
    c->groups = groups;
    c->data = large_alloc(bytes);
    c->part = calloc((size_t)t->plan.nchunks * (size_t)groups, sizeof *c->part);
    return c->data && c->part && (c->whole = rt_handle_register(t->rt, c->data, bytes, name)) ? 0
                                                                                              : -1;
}

/* A batch's worth of per_sample bytes, a part per chunk and group; a group is a run of the
 * planes of plane bytes that make a sample (the filters of a convolution's output). */
static int chunked_alloc(trainer *t, chunked *c, const char *name, size_t per_sample, int groups,
                         size_t plane)
{
    const exec_plan *p = &t->plan;
    c->per_sample = per_sample;
    if (chunked_start(t, c, name, per_sample * (size_t)p->batch, groups))
        return -1;
    size_t units = groups > 1 ? per_sample / plane : 1;
    for (int k = 0; k < p->nchunks; k++) {
        int s0, s1;
        plan_chunk(p, k, p->batch, &s0, &s1);
        for (int g = 0; g < groups; g++) {
            size_t u0 = (size_t)g * units / (size_t)groups, u1 = (size_t)(g + 1) * units / (size_t)groups;
            size_t offset = (size_t)s0 * per_sample + u0 * plane;
            rt_handle *h = groups > 1
                ? rt_handle_part(t->rt, c->whole, offset, (size_t)(s1 - s0), (u1 - u0) * plane,
                                 per_sample, name)
                : rt_handle_part(t->rt, c->whole, offset, 1, (size_t)(s1 - s0) * per_sample, 0, name);
            if (!(c->part[k * groups + g] = h))
                return -1;
        }
    }
    return 0;
}

/* A buffer of `each` bytes per chunk (a chunk's loss), a part per chunk. */
static int per_chunk_alloc(trainer *t, chunked *c, const char *name, size_t each)
{
    if (chunked_start(t, c, name, each * (size_t)t->plan.nchunks, 1))
        return -1;
    for (int k = 0; k < t->plan.nchunks; k++)
        if (!(c->part[k] = rt_handle_part(t->rt, c->whole, (size_t)k * each, 1, each, 0, name)))
            return -1;
    return 0;
}

static void chunked_free(trainer *t, chunked *c)
{
    if (!c->view) {
        rt_handle_unregister(t->rt, c->whole);   /* its parts first */
        free(c->data);
        free(c->part);
    }
    memset(c, 0, sizeof *c);
}

/* The activations, their gradients and the auxiliary outputs of one batch in flight. Layer l
 * reads act[l] and writes act[l + 1]; a flatten's output is a view of its input; the layers of
 * a fused convolution's task store only the last one's output. */
static int alloc_set(trainer *t, batch_set *b)
{
    const model *m = t->m;
    const exec_plan *p = &t->plan;
    const layer *L0 = &m->layers[0];
    int rc = p->bytes_input
                 ? chunked_alloc(t, &b->samples, "samples", sizeof(const uint8_t *), 1, 0)
                 : chunked_alloc(t, &b->act[0], "input", sizeof(float) * (size_t)L0->in_size, 1, 0);
    rc |= chunked_alloc(t, &b->labels, "labels", 1, 1, 0);
    rc |= per_chunk_alloc(t, &b->stats, "chunk stats", sizeof(chunk_stats));
    for (int l = 0; l < m->nlayers && !rc; l++) {
        const layer *ly = &m->layers[l];
        int last = l == m->nlayers - 1, inside = plan_fused_into(p, l) >= 0;
        int stores = !p->fused[l] && plan_fused_into(p, l + 1) < 0;   /* its output in act */
        size_t plane = sizeof(float) * (size_t)ly->out_h * (size_t)ly->out_w;
        if (l > 0 && !inside && !m->layers[l - 1].cls->view &&
            (last || p->need_dx[l]))
            rc |= chunked_alloc(t, &b->grad[l], "gradient", sizeof(float) * (size_t)ly->in_size, 1, 0);
        if (ly->cls->view) {
            b->act[l + 1] = b->act[l], b->act[l + 1].view = 1;
            b->grad[l + 1] = b->grad[l], b->grad[l + 1].view = 1;
        } else if (!last && stores) {
            rc |= chunked_alloc(t, &b->act[l + 1], "activation",
                                sizeof(float) * (size_t)ly->out_size, p->groups[l], plane);
        }
        if (ly->cls->aux_bytes)
            rc |= chunked_alloc(t, &b->aux[l], "argmax", ly->cls->aux_bytes * (size_t)ly->out_size, 1, 0);
        if (last)
            rc |= chunked_alloc(t, &b->aux[l], "predictions", sizeof(int32_t), 1, 0);
    }
    return rc ? -1 : 0;
}

static void free_set(trainer *t, batch_set *b)
{
    for (int l = CONFIG_MAX_LAYERS; l >= 0; l--) {   /* views before what they view */
        if (b->act[l].data || b->act[l].view)
            chunked_free(t, &b->act[l]);
        if (b->grad[l].data || b->grad[l].view)
            chunked_free(t, &b->grad[l]);
        if (l < CONFIG_MAX_LAYERS && b->aux[l].data)
            chunked_free(t, &b->aux[l]);
    }
    chunked_free(t, &b->samples);
    chunked_free(t, &b->labels);
    chunked_free(t, &b->stats);
}

/* What the batches in flight take, to refuse a job the machine cannot hold before allocating. */
static double set_bytes(const model *m, const exec_plan *p)
{
    double per = sizeof(float) * (double)m->layers[0].in_size + 16;
    for (int l = 0; l < m->nlayers; l++)
        per += 2.0 * sizeof(float) * (double)m->layers[l].out_size +
               (double)m->layers[l].cls->aux_bytes * (double)m->layers[l].out_size;
    return per * p->batch;
}

/* ---- parameters, partial gradients, data ---- */

static int alloc_layer_state(trainer *t, int l)
{
    layer *ly = &t->m->layers[l];
    rt_runtime *rt = t->rt;
    size_t bytes = sizeof(float) * (size_t)ly->nparams;
    int groups = t->plan.groups[l];
    size_t n = (size_t)t->plan.nchunks * (size_t)ly->nparams;
    if (!(t->hparams[l] = rt_handle_register(rt, ly->params, bytes, "parameters")) ||
        !(t->hgrad[l] = rt_handle_register(rt, ly->grad, bytes, "gradient sum")) ||
        !(t->hvelocity[l] = rt_handle_register(rt, ly->velocity, bytes, "velocity")) ||
        !(t->partial[l] = calloc(n, sizeof(float))) ||
        !(t->hpartial_part[l] = calloc((size_t)t->plan.nchunks * (size_t)groups, sizeof(rt_handle *))) ||
        !(t->hpartial[l] = rt_handle_register(rt, t->partial[l], n * sizeof(float), "partial gradient")))
        return -1;
    long per = ly->nweights / (ly->nparams - ly->nweights);
    for (int k = 0; k < t->plan.nchunks; k++)
        for (int g = 0; g < groups; g++) {
            int u0, u1;
            trainer_group_units(ly, groups, g, &u0, &u1);
            /* chunk k's share, group by group: each group's weights then its biases */
            size_t at = (size_t)k * (size_t)ly->nparams + (size_t)u0 * (size_t)(per + 1);
            size_t len = (size_t)(u1 - u0) * (size_t)(per + 1);
            if (!(t->hpartial_part[l][k * groups + g] =
                      rt_handle_part(rt, t->hpartial[l], at * sizeof(float), 1,
                                     len * sizeof(float), 0, "partial gradient")))
                return -1;
        }
    return 0;
}

int trainer_data_register(trainer *t, data_handles *h, const dataset *d)
{
    size_t per = (size_t)d->c * (size_t)d->h * (size_t)d->w;
    h->d = d;
    h->pixels = rt_handle_register(t->rt, d->pixels, per * (size_t)d->n, "pixels");
    h->labels = rt_handle_register(t->rt, d->labels, (size_t)d->n, "labels");
    return h->pixels && h->labels ? 0 : -1;
}

void trainer_data_unregister(trainer *t, data_handles *h)
{
    rt_handle_unregister(t->rt, h->pixels);
    rt_handle_unregister(t->rt, h->labels);
    memset(h, 0, sizeof *h);
}

static int create_state(trainer *t, const dataset *train, const dataset *test, char *err,
                        size_t errlen)
{
    const exec_plan *p = &t->plan;
    char what[160];
    snprintf(what, sizeof what, "training with batch %d (2 batches in flight: activations, "
             "gradients, %d chunks' partial gradients)", p->batch, p->nchunks);
    if (memory_check(2 * set_bytes(t->m, p) + sizeof(float) * (double)p->nchunks *
                                                  (double)t->m->nparams, what, err, errlen))
        return -1;
    t->order = malloc(sizeof(long) * (size_t)train->n);
    t->marks.nbatches = (train->n + p->batch - 1) / p->batch;
    t->marks.at = calloc((size_t)t->marks.nbatches, sizeof *t->marks.at);
    int ok = t->order && t->marks.at;
    ok = ok && trainer_data_register(t, &t->data[SPLIT_TRAIN], train) == 0;
    if (test == train)   /* one data set, one set of handles */
        t->data[SPLIT_TEST] = t->data[SPLIT_TRAIN];
    else
        ok = ok && (!test || trainer_data_register(t, &t->data[SPLIT_TEST], test) == 0);
    ok = ok && (t->horder = rt_handle_register(t->rt, t->order, sizeof(long) * (size_t)train->n,
                                               "order")) != NULL;
    ok = ok && (t->htotals = rt_handle_register(t->rt, &t->totals, sizeof t->totals, "totals"));
    long packed = 0;
    for (int l = 0; l < t->m->nlayers; l++)
        t->pack_offset[l] = packed, packed += t->m->layers[l].nparams;
    for (int l = 0; l < t->m->nlayers && ok; l++)
        ok = !t->m->layers[l].nparams || alloc_layer_state(t, l) == 0;
    for (int s = 0; s < 2 && ok; s++)
        ok = alloc_set(t, &t->set[s]) == 0;
    if (ok)
        return 0;
    if (rt_error(t->rt)[0])
        snprintf(err, errlen, "%s", rt_error(t->rt));
    else
        snprintf(err, errlen, "out of memory for batch %d (%d chunks of %d samples)", p->batch,
                 p->nchunks, p->grain);
    return -1;
}

trainer *trainer_create(const job_config *cfg, model *m, rt_runtime *rt, const dataset *train,
                        const dataset *test, char *err, size_t errlen)
{
    trainer *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    t->cfg = cfg, t->m = m, t->rt = rt;
    plan_make(&t->plan, cfg, m, rt_devices(rt));
    if (create_state(t, train, test, err, errlen)) {
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
        free_set(t, &t->set[s]);
    for (int l = 0; l < t->m->nlayers; l++) {
        rt_handle_unregister(t->rt, t->hparams[l]);   /* the parameters back in host memory */
        rt_handle_unregister(t->rt, t->hgrad[l]);
        rt_handle_unregister(t->rt, t->hvelocity[l]);
        rt_handle_unregister(t->rt, t->hpartial[l]);
        free(t->hpartial_part[l]);
        free(t->partial[l]);
    }
    if (t->data[SPLIT_TEST].d != t->data[SPLIT_TRAIN].d)
        trainer_data_unregister(t, &t->data[SPLIT_TEST]);
    trainer_data_unregister(t, &t->data[SPLIT_TRAIN]);
    rt_handle_unregister(t->rt, t->horder);
    rt_handle_unregister(t->rt, t->htotals);
    for (int p = 0; p < 2; p++) {
        rt_handle_unregister(t->rt, t->hpack[p]);
        free(t->pack[p]);
        free(t->set[p].claims);
    }
    free(t->order);
    free(t->marks.at);
    free(t);
}

int trainer_sync(trainer *t, char *err, size_t errlen)
{
    int rc = 0;
    for (int l = 0; l < t->m->nlayers; l++)
        if (t->hparams[l])
            rc |= rt_wait_handle(t->rt, t->hparams[l], RT_R) |
                  rt_wait_handle(t->rt, t->hvelocity[l], RT_R);
    if (rc)
        snprintf(err, errlen, "%s", rt_error(t->rt));
    return rc ? -1 : 0;
}

/* ---- a cluster ---- */

int trainer_share_work(trainer *t, const trainer_remote *r, char *err, size_t errlen)
{
    size_t bytes = sizeof(float) * (size_t)(t->m->nparams ? t->m->nparams : 1);
    for (int p = 0; p < 2; p++)
        if (!(t->pack[p] = malloc(bytes)) ||
            !(t->hpack[p] = rt_handle_register(t->rt, t->pack[p], bytes, "packed parameters")) ||
            !(t->set[p].claims = calloc((size_t)t->plan.nchunks, sizeof(_Atomic int)))) {
            snprintf(err, errlen, "out of memory for the parameters sent to other machines "
                     "(%ld floats)", t->m->nparams);
            return -1;
        }
    t->packed_seq = UINT64_MAX;
    t->remote = *r;
    return 0;
}

void trainer_stream_gradients(trainer *t, const trainer_gradient_sink *s) { t->gradients = *s; }

long trainer_nparams(const trainer *t) { return t->m->nparams; }

int trainer_layer_params(const trainer *t, long *per_layer)
{
    for (int l = 0; l < t->m->nlayers; l++)
        per_layer[l] = t->m->layers[l].nparams;
    return t->m->nlayers;
}

int trainer_set_layer_params(trainer *t, int l, const void *values, char *err, size_t errlen)
{
    if (rt_wait_all(t->rt)) {
        snprintf(err, errlen, "%s", rt_error(t->rt));
        return -1;
    }
    t->packed_seq = UINT64_MAX;   /* what other machines were sent is stale: pack them again */
    long n = t->m->layers[l].nparams;
    float *params = n ? rt_handle_acquire(t->rt, t->hparams[l], RT_W) : NULL;
    if (params)
        memcpy(params, values, sizeof(float) * (size_t)n);
    return 0;
}

int trainer_set_params(trainer *t, const void *packed, char *err, size_t errlen)
{
    for (int l = 0; l < t->m->nlayers; l++)
        if (trainer_set_layer_params(t, l, (const char *)packed + sizeof(float) * (size_t)t->pack_offset[l],
                                     err, errlen))
            return -1;
    return 0;
}

int trainer_get_params(trainer *t, float *packed, char *err, size_t errlen)
{
    if (rt_wait_all(t->rt)) {
        snprintf(err, errlen, "%s", rt_error(t->rt));
        return -1;
    }
    for (int l = 0; l < t->m->nlayers; l++) {
        const layer *ly = &t->m->layers[l];
        const float *params = ly->nparams ? rt_handle_acquire(t->rt, t->hparams[l], RT_R) : NULL;
        if (params)
            memcpy(packed + t->pack_offset[l], params, sizeof(float) * (size_t)ly->nparams);
    }
    return 0;
}

void trainer_node_result(trainer *t, int chunk, double *loss, int *correct, int *samples,
                         float *grads)
{
    const chunk_stats *c = (const chunk_stats *)t->set[0].stats.data + chunk;
    *loss = c->loss, *correct = c->correct, *samples = c->samples;
    for (int l = 0; grads && l < t->m->nlayers; l++) {
        long n = t->m->layers[l].nparams;
        if (n)
            trainer_grad_to_wire(t, l, t->partial[l] + (size_t)chunk * (size_t)n,
                                 grads + t->pack_offset[l]);
    }
}
