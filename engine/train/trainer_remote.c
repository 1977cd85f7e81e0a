/* What other machines of a cluster need of a batch, and what they give it (the hooks of
 * remote.h, which the coordinator and the node implement in engine/cluster/):
 *
 * - a coordinator's batch: the chunks dealt to nodes are tasks on the peer worker that complete
 *   when their results arrive; the chunks left here carry claims, so that a node may take one
 *   not yet started (its tasks then skip, and arrival tasks pass on what the node sent); the
 *   parameters are packed for the wire layer by layer, as the updates end;
 * - a node's chunks: computed like any other, each layer's gradient shipped to the sink as
 *   soon as the backward pass has it, summed with the batch's next chunks where the fixed
 *   summing order allows it.
 *
 * One machine's batch (trainer_graph.c) calls the hooks below, which do nothing there. */
#include "engine/train/trainer_internal.h"

#include "engine/train/remote.h"

#include <stdlib.h>
#include <string.h>

/* Accesses: the chunk's partial gradient of the layer, every group's part (R), then the
 * layer's gradient buffer (RW, at sum_at: the run's sum; it chains a group's ship tasks of the
 * layer in the order submitted). Not claimed: a chunk given back still closes the run. */
typedef struct ship_args {
    trainer *t;                     /* its sink, and the layer's run (ship_runs) */
    _Atomic int *claim;
    long n;
    int chunk, layer, sum_at;
    ship_role role;
} ship_args;

/* The run of summed chunks handed to the sink, if it holds any. */
static void ship_run_out(const ship_args *a, ship_run *run, const float *sum)
{
    const trainer_gradient_sink *sink = &a->t->gradients;
    if (run->count)
        sink->ready(sink->ctx, run->next + 1, run->count, a->layer, sum, a->n);
    run->count = 0;
}

/* A node's chunk gradient of one layer, handed to its sink: alone, or summed with the batch's
 * last chunks computed here when it is the next of them down (the order a batch is summed in,
 * trainer_graph.c), the sum handed over once no chunk of the group can extend it. */
static int ship(const rt_ctx *ctx, void *p)
{
    const ship_args *a = p;
    ship_run *run = &a->t->ship_runs[a->layer];
    const trainer_gradient_sink *sink = &a->t->gradients;
    float *sum = rt_ptr(ctx, a->sum_at), *wire = NULL;
    const float *grad = rt_ptr(ctx, 0);
    if (a->role.first)
        *run = (ship_run){a->role.batch_last, 0};
    int ran = !a->claim || atomic_load(a->claim) != RT_CLAIM_ELSEWHERE;
    if (ran && a->t->plan.groups[a->layer] > 1) {   /* a convolution's: its parameters are few */
        if (!(wire = malloc(sizeof(float) * (size_t)a->n)))
            return -1;   /* said as this task failing */
        trainer_grad_to_wire(a->t, a->layer, grad, wire);
        grad = wire;
    }
    int joins = ran && !a->role.alone && a->chunk == run->next;
    if (joins && (run->count || !a->role.last)) {   /* (a run of one goes as it is) */
        trainer_copy_or_add(sum, grad, a->n, !run->count);
        run->count++, run->next--;
    } else {
        ship_run_out(a, run, sum);
        run->next = -1;   /* after a gap, no chunk below extends it */
        if (ran)
            sink->ready(sink->ctx, a->chunk, 1, a->layer, grad, a->n);
    }
    if (a->role.last)
        ship_run_out(a, run, sum);
    free(wire);
    return 0;
}

static rt_kind ship_kind = {.name = "send gradient", .cpu = ship};

static int pack(const rt_ctx *ctx, void *p)
{
    const pack_args *a = p;
    float *packed = (float *)rt_ptr(ctx, 1) + a->offset;
    memcpy(packed, rt_ptr(ctx, 0), sizeof(float) * (size_t)a->n);
    remote_sink *s = rt_device_ctx(ctx);
    s->params(s, a->seq, a->layer, packed, a->n);
    return 0;
}

/* The destination's first part is access 0, the packed parameters access params_at. A chunk
 * dealt here passes nothing on unless a node took it; one that ran here has its gradient
 * measured (its parts are the chunk's gradient, whole, from the first). */
static int remote_started(const rt_ctx *ctx, void *p)
{
    const remote_args *a = p;
    remote_sink *s = rt_device_ctx(ctx);
    if (a->claim && atomic_load(a->claim) != RT_CLAIM_ELSEWHERE) {
        if (a->layer >= 0 && s->ran_here)
            s->ran_here(s, a, rt_ptr(ctx, 0));
        return 0;
    }
    s->started(s, a, rt_ptr(ctx, 0), a->params_at >= 0 ? rt_ptr(ctx, a->params_at) : NULL,
               ctx->rt, ctx->task);
    return RT_PENDING;
}

static rt_kind pack_kind = {.name = "pack parameters", .peer = pack};
static rt_kind remote_grad_kind = {.name = "remote chunk: gradient", .peer = remote_started};
static rt_kind remote_stats_kind = {.name = "remote chunk: loss", .peer = remote_started};

/* ---- a batch's graph ---- */

/* A node's chunk k gradient of layer l handed to its sink (trainer_stream_gradients) once the
 * layer's backward tasks have it, alone or summed with the group's chunks before it (ship, below).
 * It also takes the layer's input gradient (RW, unchanged), so that the layer before waits for
 * it: the gradient leaves before the rest of the backward pass runs, not after it. */
static void submit_ship(trainer *t, const batch_ref *r, int l, int k)
{
    int groups = t->plan.groups[l];
    ship_args a = {t, r->remote.recall, t->m->layers[l].nparams, k, l, 0, *r->remote.ship};
    access_list al = {.n = 0};
    for (int g = 0; g < groups; g++)
        add(&al, t->hpartial_part[l][k * groups + g], RT_R);
    if (t->plan.need_dx[l])
        add(&al, r->b->grad[l].part[k], RT_RW);
    a.sum_at = add(&al, t->hgrad[l], RT_RW);
    trainer_submit(t, &ship_kind, &a, sizeof a, PRIO_BACKWARD, &al, k);
}

/* What arrives of chunk k from another machine (remote.h): layer l's partial gradient, or the
 * chunk's loss figures (l = -1). A chunk dealt elsewhere waits for it (W) and reads the packed
 * parameters to send; one dealt here passes it on after its own tasks (RW) if it was taken. */
static void submit_arrival(trainer *t, const batch_ref *r, int k, int l, rt_mode mode)
{
    remote_args a = {t->seq, r->epoch, k, r->size, l, -1, r->index,
                     mode == RT_W ? NULL : &r->remote.claims[k]};
    access_list al = {.n = 0};
    if (l < 0)
        add(&al, r->b->stats.part[k], mode);
    for (int g = 0; l >= 0 && g < t->plan.groups[l]; g++)
        add(&al, t->hpartial_part[l][k * t->plan.groups[l] + g], mode);
    if (mode == RT_W)
        a.params_at = add(&al, t->hpack[t->seq & 1], RT_R);
    trainer_submit(t, l < 0 ? &remote_stats_kind : &remote_grad_kind, &a, sizeof a, PRIO_BACKWARD,
                   &al, -1);
}

/* Chunks [k0, k1) of a training batch computed elsewhere: their arrivals and the tally. */
static void submit_remote(trainer *t, const batch_ref *r, int k0, int k1)
{
    for (int k = k0; k < k1; k++) {
        submit_arrival(t, r, k, -1, RT_W);
        for (int l = 0; l < t->m->nlayers; l++)
            if (t->m->layers[l].nparams)
                submit_arrival(t, r, k, l, RT_W);
        trainer_submit_tally(t, r, k, 0, NULL);
    }
}

/* Each layer as soon as its update is done: the last layer first, as the backward pass updates
 * them. */
void trainer_remote_pack(trainer *t)
{
    int p = (int)(t->seq & 1);
    for (int l = t->m->nlayers - 1, first = 1; l >= 0; l--) {
        if (!t->m->layers[l].nparams)
            continue;
        pack_args a = {t->seq, l, t->pack_offset[l], t->m->layers[l].nparams};
        access_list al = {.n = 0};
        add(&al, t->hparams[l], RT_R);
        add(&al, t->hpack[p], first ? RT_W : RT_RW);
        trainer_submit(t, &pack_kind, &a, sizeof a, PRIO_UPDATE, &al, -1);
        first = 0;
    }
    t->packed_seq = t->seq;
}

int trainer_remote_share(trainer *t, batch_ref *r, int chunks)
{
    if (!t->remote.chunks)
        return 0;
    remote_batch b = {t->seq, r->epoch, r->size, chunks, r->index, r->b->claims,
                      t->pack[t->seq & 1], 0};
    int elsewhere = t->remote.chunks(t->remote.ctx, &b);
    r->remote.claims = elsewhere ? r->b->claims : NULL;
    /* the remote chunks first: they wait on the network the longest, and the submitting thread
     * may run local tasks before it submits anything after them */
    if ((elsewhere || b.params_wanted) && t->packed_seq != t->seq)
        trainer_remote_pack(t);
    if (elsewhere)
        submit_remote(t, r, chunks - elsewhere, chunks);
    return elsewhere;
}

void trainer_remote_pass_on(trainer *t, const batch_ref *r, int k, int l)
{
    if (l >= 0 && !t->m->layers[l].nparams)
        return;
    if (l >= 0 && r->remote.ship)
        submit_ship(t, r, l, k);
    if (r->remote.claims)
        submit_arrival(t, r, k, l, RT_RW);
}

/* ---- a node's chunks of batches the coordinator sends ---- */

/* Whether c names a chunk of the training set's batches. */
static int chunk_exists(const trainer *t, const node_chunk *c, char *err, size_t errlen)
{
    long first = c->batch * t->plan.batch, n = t->data[SPLIT_TRAIN].d->n;
    int s0 = 0, s1 = 0;
    if (c->chunk >= 0 && c->chunk < t->plan.nchunks && c->size >= 1 && c->size <= t->plan.batch)
        plan_chunk(&t->plan, c->chunk, c->size, &s0, &s1);
    if (s1 > s0 && first >= 0 && first + c->size <= n && c->epoch >= 1 &&
        (first + c->size == n || c->size == t->plan.batch))
        return 1;
    snprintf(err, errlen, "no chunk %d of batch %ld (%d samples) in a data set of %ld", c->chunk,
             c->batch, c->size, n);
    return 0;
}

int trainer_node_chunks(trainer *t, const node_chunk *c, int n, char *err, size_t errlen)
{
    for (int i = 0; i < n; i++) {
        if (!chunk_exists(t, &c[i], err, errlen))
            return -1;
        if (c[i].epoch != c[0].epoch || c[i].batch != c[0].batch || c[i].size != c[0].size) {
            snprintf(err, errlen, "chunks of batches %ld and %ld computed as one", c[0].batch,
                     c[i].batch);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (c[j].chunk == c[i].chunk) {
                snprintf(err, errlen, "chunk %d of batch %ld twice", c[i].chunk, c[i].batch);
                return -1;
            }
    }
    if (n < 1)
        return 0;
    if (trainer_shuffle_once(t, c[0].epoch, err, errlen))
        return -1;
    batch_ref r = {.split = SPLIT_TRAIN, .first = c[0].batch * t->plan.batch, .size = c[0].size,
                   .b = &t->set[0], .epoch = c[0].epoch, .index = c[0].batch};
    ship_role role = {trainer_batch_chunks(t, &r) - 1, 1, 0, 0};
    /* from the last chunk down, as the batch is summed */
    for (int done = 0, above = t->plan.nchunks; done < n; done++) {
        int next = -1;
        for (int i = 0; i < n; i++)
            if (c[i].chunk < above && (next < 0 || c[i].chunk > c[next].chunk))
                next = i;
        above = c[next].chunk;
        role.last = done == n - 1, role.alone = c[next].alone != 0;
        r.remote.ship = t->gradients.ready ? &role : NULL;
        r.remote.recall = c[next].claim;
        trainer_submit_chunks(t, &r, above, above + 1);
        role.first = 0;
    }
    return 0;
}
