/* A batch as a task graph, and passes over a data set.
 *
 * For every chunk of a batch: a load task, a forward task per layer (or per filter group), the
 * loss, and when training a backward task per layer, read from the end; then per layer with
 * parameters the partial gradients summed in chunk order and the SGD update. Tasks are chained
 * by the regions they touch, not by barriers, so a chunk enters layer i+1 as soon as it leaves
 * layer i, and the next batch (in the other set of buffers) loads while this one finishes. A
 * batch is submitted layer by layer across its chunks: when the submitting thread stops to run a
 * task, every chunk already has work. On a cluster's coordinator, the chunks dealt elsewhere are
 * tasks that wait for the network (remote.h), and those dealt here carry claims, so that a node
 * may steal the ones not yet started. */
#include "engine/train/trainer_internal.h"

#include "engine/train/remote.h"
#include "ops/layers.h"
#include "runtime/clock.h"

#include <string.h>

/* The backward chain first: a layer's gradient sum and update wait behind the backward tasks
 * still to come (only the first layer's update is on the way to the next batch). */
enum { PRIO_TALLY = 0, PRIO_LOAD = 1, PRIO_FORWARD = 2, PRIO_UPDATE = 2, PRIO_BACKWARD = 3 };

typedef struct access_list {
    rt_access a[RT_MAX_ACCESS];
    int n;
} access_list;

static signed char add(access_list *al, rt_handle *h, rt_mode mode)
{
    al->a[al->n] = (rt_access){h, mode};
    return (signed char)al->n++;
}

/* Every part of chunk k of a buffer (one per filter group of its writer); returns the first. */
static signed char add_chunk(access_list *al, const chunked *c, int k, rt_mode mode)
{
    signed char first = (signed char)al->n;
    for (int g = 0; g < c->groups; g++)
        add(al, c->part[k * c->groups + g], mode);
    return first;
}

/* Where a task may run. With devices = opencl, on a device when it has a device implementation;
 * deterministic, by chunk (even chunks on the CPU, odd ones on the devices; the updates on the
 * CPU), so the same kernel computes the same thing every run; else anywhere, the runtime
 * placing it by expected finish time. A cluster's tasks (remote.h) run on its peer worker
 * alone, whatever the rest. chunk: -1 for a batch's update tasks. */
static unsigned placement(const trainer *t, const rt_kind *kind, int chunk)
{
    const exec_plan *p = &t->plan;
    int on_device = kind->opencl != NULL;
    if (kind->peer)
        return 0;
    if (p->pinned)
        return on_device ? RT_ON(RT_WORKER_OPENCL) : RT_ON(RT_WORKER_CPU);
    if (p->deterministic)
        return on_device && chunk >= 0 && chunk % 2 ? RT_ON(RT_WORKER_OPENCL) : RT_ON(RT_WORKER_CPU);
    return 0;
}

/* claim: NULL, or the claim on the chunk the task computes (remote.h) */
static void submit_claimed(trainer *t, rt_kind *kind, const void *args, size_t size, int prio,
                           const access_list *al, int chunk, _Atomic int *claim)
{
    rt_task_desc d = {.kind = kind, .args = args, .args_size = size, .priority = prio,
                      .naccess = al->n, .kinds = placement(t, kind, chunk), .claim = claim};
    memcpy(d.access, al->a, sizeof(rt_access) * (size_t)al->n);
    rt_submit(t->rt, &d);   /* a failure is reported by the next wait */
}

static void submit(trainer *t, rt_kind *kind, const void *args, size_t size, int prio,
                   const access_list *al, int chunk)
{
    submit_claimed(t, kind, args, size, prio, al, chunk, NULL);
}

/* What one batch is: where its samples start, how many, which buffers, which data set. */
typedef struct batch_ref {
    int split;
    long first;
    int size;
    batch_set *b;
    int mean_over;      /* samples the gradient is the mean over: 0, the batch's size */
    const ship_role *ship;   /* a node's chunk: its gradients go to the sink layer by layer */
    int epoch;
    long index;         /* in the epoch */
    _Atomic int *claims;   /* a coordinator's batch that nodes may take chunks of (remote.h) */
    _Atomic int *recall;   /* a node's chunk that its coordinator may take back */
} batch_ref;

/* The claim on chunk k of the batch, if another machine may take it. */
static _Atomic int *claim_of(const batch_ref *r, int k)
{
    return r->claims ? &r->claims[k] : r->recall;
}

static void submit_arrival(trainer *t, const batch_ref *r, int k, int l, rt_mode mode);

static int chunk_size(const trainer *t, const batch_ref *r, int k, int *s0);

static layer_task task_for(const trainer *t, int l, int n)
{
    layer_task a = {.l = &t->m->layers[l], .n = n, .f1 = 0};
    memset(&a.at, -1, sizeof a.at);
    return a;
}

/* The input of layer l for chunk k: the activation's parts, or the data set's bytes. */
static void add_input(const trainer *t, const batch_ref *r, layer_task *a, access_list *al,
                      int l, int k)
{
    if (l == 0 && t->plan.bytes_input) {
        a->bytes_input = 1;
        a->at.samples = add(al, r->b->samples.part[k], RT_R);
        add(al, t->data[r->split].pixels, RT_R);   /* what the sample pointers point into */
        return;
    }
    a->at.in = add_chunk(al, &r->b->act[l], k, RT_R);
}

static void submit_load(trainer *t, const batch_ref *r, int k)
{
    const dataset *d = t->data[r->split].d;
    int s0, n = chunk_size(t, r, k, &s0);
    load_args a = {r->first + s0, (long)d->c * d->h * d->w, n, r->split == SPLIT_TRAIN,
                   (signed char)t->plan.bytes_input};
    access_list al = {.n = 0};
    add(&al, t->data[r->split].pixels, RT_R);
    add(&al, t->data[r->split].labels, RT_R);
    add(&al, a.bytes ? r->b->samples.part[k] : r->b->act[0].part[k], RT_W);
    add(&al, r->b->labels.part[k], RT_W);
    if (a.shuffled)
        add(&al, t->horder, RT_R);
    submit(t, a.bytes ? &trainer_load_pointers_kind : &trainer_load_kind, &a, sizeof a, PRIO_LOAD, &al, k);
}

/* Layer l's forward task for chunk k and filter group g (or, fused, the convolution, the
 * max-pool after it and maybe a relu). */
static void submit_forward(trainer *t, const batch_ref *r, int l, int k, int g, int n)
{
    const layer *ly = &t->m->layers[l];
    int fused = t->plan.fused[l], groups = t->plan.groups[l];
    layer_task a = task_for(t, l, n);
    trainer_group_units(ly, groups, g, &a.f0, &a.f1);
    access_list al = {.n = 0};
    add_input(t, r, &a, &al, l, k);
    if (fused) {
        a.relu = fused == 2;
        a.at.out = add_chunk(&al, &r->b->act[l + 1 + fused], k, RT_W);
        a.at.aux = add(&al, r->b->aux[l + 1].part[k], RT_W);
    } else {
        a.at.out = groups > 1 ? add(&al, r->b->act[l + 1].part[k * groups + g], RT_W)
                              : add_chunk(&al, &r->b->act[l + 1], k, RT_W);
        if (ly->cls->aux_bytes)
            a.at.aux = add(&al, r->b->aux[l].part[k], RT_W);
    }
    if (ly->nparams)
        a.at.params = add(&al, t->hparams[l], RT_R);
    submit_claimed(t, fused ? ly->cls->fused_forward : ly->cls->forward, &a, sizeof a,
                   PRIO_FORWARD, &al, k, claim_of(r, k));
}

/* The loss of chunk k, its gradient when training, and the tally of its figures. */
static void submit_loss(trainer *t, const batch_ref *r, int k)
{
    int L = t->m->nlayers - 1, s0, n = chunk_size(t, r, k, &s0);
    layer_task a = task_for(t, L, n);
    a.scale = 1.0f / (float)(r->mean_over ? r->mean_over : r->size);
    access_list al = {.n = 0};
    a.at.in = add_chunk(&al, &r->b->act[L], k, RT_R);
    a.at.labels = add(&al, r->b->labels.part[k], RT_R);
    a.at.stats = add(&al, r->b->stats.part[k], RT_W);
    if (r->split == SPLIT_TRAIN)
        a.at.dy = add(&al, r->b->grad[L].part[k], RT_W);
    if (t->predictions)
        a.at.aux = add(&al, r->b->aux[L].part[k], RT_W);
    submit_claimed(t, t->m->layers[L].cls->forward, &a, sizeof a, PRIO_BACKWARD, &al, k,
                   claim_of(r, k));
    if (r->claims)
        submit_arrival(t, r, k, -1, RT_RW);

    tally_args ta = {r->first + s0, n, t->predictions != NULL, &t->samples_done};
    access_list tl = {.n = 0};
    add(&tl, r->b->stats.part[k], RT_R);
    add(&tl, t->htotals, RT_RW);
    if (ta.evaluating) {
        add(&tl, r->b->aux[L].part[k], RT_R);
        add(&tl, t->hpredictions, RT_RW);
    }
    submit_claimed(t, &trainer_tally_kind, &ta, sizeof ta, PRIO_TALLY, &tl, -1, r->recall);
}

/* Layer l's backward tasks for chunk k: per filter group the parameter gradient (and, with one
 * group, the input gradient), or a task of its own for the input gradient. Each names exactly
 * what it reads and writes. */
static void submit_backward(trainer *t, const batch_ref *r, int l, int k, int n)
{
    const layer *ly = &t->m->layers[l];
    int fused = t->plan.fused[l], groups = t->plan.groups[l];
    int dx = t->plan.need_dx[l], out = l + 1 + fused;
    for (int g = 0; g < groups; g++) {
        layer_task a = task_for(t, l, n);
        trainer_group_units(ly, groups, g, &a.f0, &a.f1);
        access_list al = {.n = 0};
        a.at.dy = add(&al, r->b->grad[out].part[k], RT_R);
        if (fused) {
            a.at.aux = add(&al, r->b->aux[l + 1].part[k], RT_R);
            if (fused == 2)   /* the relu's output, that its gradient goes through */
                a.at.out = add_chunk(&al, &r->b->act[out], k, RT_R);
            add_input(t, r, &a, &al, l, k);
        } else if (ly->cls->backward_reads & READS_OUTPUT) {
            a.at.out = add_chunk(&al, &r->b->act[l + 1], k, RT_R);
        } else if (ly->cls->backward_reads & READS_AUX) {
            a.at.aux = add(&al, r->b->aux[l].part[k], RT_R);
        } else {
            add_input(t, r, &a, &al, l, k);
        }
        if (ly->nparams)
            a.at.part = add(&al, t->hpartial_part[l][k * groups + g], RT_W);
        if (dx && groups == 1) {
            a.want_dx = 1;
            a.at.dx = add(&al, r->b->grad[l].part[k], RT_W);
            if (ly->nparams)
                a.at.params = add(&al, t->hparams[l], RT_R);
        }
        submit_claimed(t, fused ? ly->cls->fused_backward : ly->cls->backward, &a, sizeof a,
                       PRIO_BACKWARD, &al, k, claim_of(r, k));
    }
    if (dx && groups > 1) {
        layer_task a = task_for(t, l, n);
        access_list al = {.n = 0};
        a.at.dy = add(&al, r->b->grad[l + 1].part[k], RT_R);
        a.at.params = add(&al, t->hparams[l], RT_R);
        a.at.dx = add(&al, r->b->grad[l].part[k], RT_W);
        submit_claimed(t, ly->cls->backward_input, &a, sizeof a, PRIO_BACKWARD, &al, k,
                       claim_of(r, k));
    }
}

/* A node's chunk k gradient of layer l handed to its sink (trainer_stream_gradients) once the
 * layer's backward tasks have it, alone or summed with the group's chunks before it (tasks.c).
 * It also takes the layer's input gradient (RW, unchanged), so that the layer before waits for
 * it: the gradient leaves before the rest of the backward pass runs, not after it. */
static void submit_ship(trainer *t, const batch_ref *r, int l, int k)
{
    int groups = t->plan.groups[l];
    ship_args a = {t, r->recall, t->m->layers[l].nparams, k, l, 0, *r->ship};
    access_list al = {.n = 0};
    for (int g = 0; g < groups; g++)
        add(&al, t->hpartial_part[l][k * groups + g], RT_R);
    if (t->plan.need_dx[l])
        add(&al, r->b->grad[l].part[k], RT_RW);
    a.sum_at = add(&al, t->hgrad[l], RT_RW);
    submit(t, &trainer_ship_kind, &a, sizeof a, PRIO_BACKWARD, &al, k);
}

/* The partial gradients of chunks [k0, k1) of layer l summed in a fixed order, from the last
 * chunk down (the same weights whatever the workers; and a node computing a batch's last
 * chunks may sum them itself, tasks.c), then the update. */
static void submit_update(trainer *t, int l, int k0, int k1)
{
    const layer *ly = &t->m->layers[l];
    int groups = t->plan.groups[l];
    for (int k = k1 - 1; k >= k0; k--) {
        gradsum_args a = {ly, groups, k == k1 - 1};
        access_list al = {.n = 0};
        add(&al, t->hgrad[l], k < k1 - 1 ? RT_RW : RT_W);
        for (int g = 0; g < groups; g++)
            add(&al, t->hpartial_part[l][k * groups + g], RT_R);
        submit(t, &trainer_gradsum_kind, &a, sizeof a, PRIO_UPDATE, &al, -1);
    }
    const job_config *cfg = t->cfg;
    sgd_args s = {ly->nparams, cfg->lr, cfg->momentum, cfg->weight_decay};
    access_list al = {.n = 0};
    add(&al, t->hparams[l], RT_RW);
    add(&al, t->hgrad[l], RT_R);
    add(&al, t->hvelocity[l], RT_RW);
    submit(t, &trainer_sgd_kind, &s, sizeof s, PRIO_UPDATE, &al, -1);
}

/* Whether layer l has a task of its own in direction `backward` (flatten is a view, the
 * max-pool and relu of a fused convolution run in its tasks, the loss is submitted apart). */
static int has_task(const trainer *t, int l, int backward)
{
    const layer *ly = &t->m->layers[l];
    if (l == t->m->nlayers - 1 || plan_fused_into(&t->plan, l) >= 0)
        return 0;
    if (!backward)
        return ly->cls->forward != NULL;
    return ly->cls->backward && (ly->nparams || t->plan.need_dx[l]);
}

/* Samples in chunk k of the batch, and where they start. */
static int chunk_size(const trainer *t, const batch_ref *r, int k, int *s0)
{
    int s1;
    plan_chunk(&t->plan, k, r->size, s0, &s1);
    return s1 - *s0;
}

/* Chunks [k0, k1) of a batch computed here: load, forward, loss and, training, backward. */
static void submit_chunks(trainer *t, const batch_ref *r, int k0, int k1)
{
    const exec_plan *p = &t->plan;
    int s0;
    for (int k = k0; k < k1; k++)
        submit_load(t, r, k);
    for (int l = 0; l < t->m->nlayers; l++)
        for (int k = k0; k < k1 && has_task(t, l, 0); k++)
            for (int g = 0; g < p->groups[l]; g++)
                submit_forward(t, r, l, k, g, chunk_size(t, r, k, &s0));
    for (int k = k0; k < k1; k++)
        submit_loss(t, r, k);
    if (r->split != SPLIT_TRAIN)
        return;
    for (int l = t->m->nlayers - 1; l >= 0; l--)
        for (int k = k0; k < k1 && has_task(t, l, 1); k++) {
            submit_backward(t, r, l, k, chunk_size(t, r, k, &s0));
            if (r->ship && t->m->layers[l].nparams)
                submit_ship(t, r, l, k);
            if (r->claims && t->m->layers[l].nparams)
                submit_arrival(t, r, k, l, RT_RW);
        }
}

/* The parameters of batch t->seq packed for other machines (remote.h), each layer as soon as
 * its update is done: the last layer first, as the backward pass updates them. */
static void submit_packs(trainer *t)
{
    int p = (int)(t->seq & 1);
    for (int l = t->m->nlayers - 1, first = 1; l >= 0; l--) {
        if (!t->m->layers[l].nparams)
            continue;
        pack_args a = {t->seq, l, t->pack_offset[l], t->m->layers[l].nparams};
        access_list al = {.n = 0};
        add(&al, t->hparams[l], RT_R);
        add(&al, t->hpack[p], first ? RT_W : RT_RW);
        submit(t, &trainer_pack_kind, &a, sizeof a, PRIO_UPDATE, &al, -1);
        first = 0;
    }
    t->packed_seq = t->seq;
}

/* What arrives of chunk k from another machine (remote.h): layer l's partial gradient, or the
 * chunk's loss figures (l = -1). A chunk dealt elsewhere waits for it (W) and reads the packed
 * parameters to send; one dealt here passes it on after its own tasks (RW) if it was taken. */
static void submit_arrival(trainer *t, const batch_ref *r, int k, int l, rt_mode mode)
{
    remote_args a = {t->seq, r->epoch, k, r->size, l, -1, r->index,
                     mode == RT_W ? NULL : claim_of(r, k)};
    access_list al = {.n = 0};
    if (l < 0)
        add(&al, r->b->stats.part[k], mode);
    for (int g = 0; l >= 0 && g < t->plan.groups[l]; g++)
        add(&al, t->hpartial_part[l][k * t->plan.groups[l] + g], mode);
    if (mode == RT_W)
        a.params_at = add(&al, t->hpack[t->seq & 1], RT_R);
    submit(t, l < 0 ? &trainer_remote_stats_kind : &trainer_remote_grad_kind, &a, sizeof a, PRIO_BACKWARD, &al, -1);
}

/* Chunks [k0, k1) of a training batch computed elsewhere: their arrivals and the tally. */
static void submit_remote(trainer *t, const batch_ref *r, int k0, int k1)
{
    int s0;
    for (int k = k0; k < k1; k++) {
        submit_arrival(t, r, k, -1, RT_W);
        for (int l = 0; l < t->m->nlayers; l++)
            if (t->m->layers[l].nparams)
                submit_arrival(t, r, k, l, RT_W);
        int n = chunk_size(t, r, k, &s0);
        tally_args ta = {r->first + s0, n, 0, &t->samples_done};
        access_list tl = {.n = 0};
        add(&tl, r->b->stats.part[k], RT_R);
        add(&tl, t->htotals, RT_RW);
        submit(t, &trainer_tally_kind, &ta, sizeof ta, PRIO_TALLY, &tl, -1);
    }
}

/* Chunks in the batch: a short batch has fewer. */
static int batch_chunks(const trainer *t, const batch_ref *r)
{
    int s0, chunks = 0;
    while (chunks < t->plan.nchunks && chunk_size(t, r, chunks, &s0) > 0)
        chunks++;
    return chunks;
}

/* Asks the coordinator, if any, how many of the batch's chunks other machines compute; when
 * some do, the chunks left here carry claims, for nodes to take the ones not yet started.
 * *packs: whether the batch's parameters are to be packed for other machines. */
static int share_batch(trainer *t, batch_ref *r, int chunks, int *packs)
{
    *packs = 0;
    if (r->split != SPLIT_TRAIN || !t->remote.chunks)
        return 0;
    remote_batch b = {t->seq, r->epoch, r->size, chunks, r->index, r->b->claims,
                      t->pack[t->seq & 1], 0};
    int elsewhere = t->remote.chunks(t->remote.ctx, &b);
    r->claims = elsewhere ? r->b->claims : NULL;
    *packs = elsewhere || b.params_wanted;
    return elsewhere;
}

static void submit_batch(trainer *t, batch_ref *r)
{
    int packs, chunks = batch_chunks(t, r), elsewhere = share_batch(t, r, chunks, &packs);
    /* the remote chunks first: they wait on the network the longest, and the submitting thread
     * may run local tasks before it submits anything after them */
    if (packs && t->packed_seq != t->seq)
        submit_packs(t);
    if (elsewhere)
        submit_remote(t, r, chunks - elsewhere, chunks);
    submit_chunks(t, r, 0, chunks - elsewhere);
    if (r->split != SPLIT_TRAIN)
        return;
    t->seq++;
    for (int l = 0; l < t->m->nlayers; l++)
        if (t->m->layers[l].nparams)
            submit_update(t, l, 0, chunks);
    if (elsewhere)   /* the next batch's, likely shared too: they travel as each update ends */
        submit_packs(t);
}

/* Periodic averaging: chunks [k0, k1) of a training batch here, this replica's model updated
 * with their gradient alone, the mean over their samples. The rest of the batch is the other
 * replicas' (counted as done, for the progress line). */
static void submit_share(trainer *t, batch_ref *r, int k0, int k1)
{
    int chunks = batch_chunks(t, r), first, last, unused;
    k1 = k1 < chunks ? k1 : chunks;
    if (k0 >= k1) {
        atomic_fetch_add(&t->samples_done, r->size);
        return;
    }
    plan_chunk(&t->plan, k0, r->size, &first, &unused);
    plan_chunk(&t->plan, k1 - 1, r->size, &unused, &last);
    r->mean_over = last - first;
    atomic_fetch_add(&t->samples_done, r->size - r->mean_over);
    submit_chunks(t, r, k0, k1);
    t->seq++;
    for (int l = 0; l < t->m->nlayers; l++)
        if (t->m->layers[l].nparams)
            submit_update(t, l, k0, k1);
}

/* ---- passes ---- */

static void shuffle(trainer *t, int epoch)
{
    long n = t->data[SPLIT_TRAIN].d->n;
    long *order = rt_handle_acquire(t->rt, t->horder, RT_W);
    ops_rng r;
    ops_rng_seed(&r, t->cfg->seed * 1000003ULL + (uint64_t)epoch);
    for (long i = 0; i < n; i++)
        order[i] = i;
    for (long i = n - 1; i > 0; i--) {   /* Fisher-Yates */
        long j = (long)(((uint64_t)ops_rng_next(&r) << 32 | ops_rng_next(&r)) % (uint64_t)(i + 1));
        long tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
    }
}

/* With a cluster, each batch's share of the chunks is decided from fresh measurements: a batch
 * is submitted once the one before has updated the parameters (its chunks could not start
 * earlier anyway), not a window of tasks ahead. */
static void wait_for_parameters(trainer *t)
{
    for (int l = 0; l < t->m->nlayers; l++)
        if (t->m->layers[l].nparams) {
            rt_wait_handle(t->rt, t->hparams[l], RT_R);
            return;
        }
}

/* A replica's part of a pass under periodic averaging: `batches` batches, its share of each. */
typedef struct pass_share {
    long batches;
    round_share s;
} pass_share;

/* Batches [first_batch, ...) of the split's data set, until its end, a stop or the end of the
 * share (NULL: every chunk of every batch). */
static int run_pass(trainer *t, int split, int epoch, long first_batch, const pass_share *share,
                    pass_result *out, char *err, size_t errlen)
{
    const dataset *d = t->data[split].d;
    int batch = t->plan.batch;
    long nbatches = (d->n + batch - 1) / batch;
    if (share && first_batch + share->batches < nbatches)
        nbatches = first_batch + share->batches;
    memset(out, 0, sizeof *out);
    pass_totals *tot = rt_handle_acquire(t->rt, t->htotals, RT_W);
    memset(tot, 0, sizeof *tot);
    atomic_store(&t->samples_done, first_batch * batch);
    double start = clock_now_s();
    for (long b = first_batch; b < nbatches; b++) {
        if (t->stop && atomic_load_explicit(t->stop, memory_order_relaxed)) {
            out->stopped = 1;
            break;
        }
        long first = b * batch;
        batch_ref r = {split, first, (int)(d->n - first < batch ? d->n - first : batch),
                       &t->set[b & 1], 0, 0, epoch, b, NULL, NULL};
        if (split == SPLIT_TRAIN && t->remote.chunks)
            wait_for_parameters(t);
        long i = b - first_batch;   /* the batch's place in the share */
        if (share)
            submit_share(t, &r, share->s.k0 + (i < share->s.k0_after),
                         share->s.k1 + (i < share->s.k1_until));
        else
            submit_batch(t, &r);
        out->batches++;
        if (t->progress)
            t->progress(t->progress_ctx, atomic_load(&t->samples_done), d->n, clock_now_s() - start);
    }
    int rc = rt_wait_all(t->rt);
    out->seconds = clock_now_s() - start;
    if (rc || !(tot = rt_handle_acquire(t->rt, t->htotals, RT_R))) {
        snprintf(err, errlen, "%s", rt_error(t->rt));
        return -1;
    }
    out->loss = tot->loss, out->correct = tot->correct, out->samples = tot->samples;
    return 0;
}

int trainer_train(trainer *t, int epoch, long first_batch, pass_result *out, char *err,
                  size_t errlen)
{
    shuffle(t, epoch);
    t->shuffled_epoch = epoch;
    return run_pass(t, SPLIT_TRAIN, epoch, first_batch, NULL, out, err, errlen);
}

/* The epoch's order, unless it is the one shuffled last (nothing reads it now). */
static int shuffle_once(trainer *t, int epoch, char *err, size_t errlen)
{
    if (epoch == t->shuffled_epoch)
        return 0;
    if (rt_wait_all(t->rt)) {
        snprintf(err, errlen, "%s", rt_error(t->rt));
        return -1;
    }
    shuffle(t, epoch);
    t->shuffled_epoch = epoch;
    return 0;
}

int trainer_train_share(trainer *t, int epoch, long first_batch, long batches,
                        const round_share *s, pass_result *out, char *err, size_t errlen)
{
    pass_share share = {batches, *s};
    if (shuffle_once(t, epoch, err, errlen))
        return -1;
    return run_pass(t, SPLIT_TRAIN, epoch, first_batch, &share, out, err, errlen);
}

int trainer_evaluate(trainer *t, const dataset *d, int32_t *predictions, pass_result *out,
                     char *err, size_t errlen)
{
    data_handles keep = t->data[SPLIT_TEST];
    int own = d && d != keep.d && d != t->data[SPLIT_TRAIN].d;
    if (d && d == t->data[SPLIT_TRAIN].d)
        t->data[SPLIT_TEST] = t->data[SPLIT_TRAIN];
    else if (own && trainer_data_register(t, &t->data[SPLIT_TEST], d)) {
        snprintf(err, errlen, "%s", rt_error(t->rt));
        t->data[SPLIT_TEST] = keep;
        return -1;
    }
    if (!t->data[SPLIT_TEST].d) {
        snprintf(err, errlen, "no data to evaluate");
        return -1;
    }
    int rc = 0;
    if (predictions) {
        t->hpredictions = rt_handle_register(t->rt, predictions,
                                             sizeof(int32_t) * (size_t)t->data[SPLIT_TEST].d->n,
                                             "predictions");
        rc = t->hpredictions ? 0 : -1;
        t->predictions = predictions;
    }
    rc = rc ? rc : run_pass(t, SPLIT_TEST, 0, 0, NULL, out, err, errlen);
    if (predictions) {
        rt_handle_unregister(t->rt, t->hpredictions);   /* the predictions back in host memory */
        t->hpredictions = NULL;
        t->predictions = NULL;
    }
    if (own)
        trainer_data_unregister(t, &t->data[SPLIT_TEST]);
    t->data[SPLIT_TEST] = keep;
    return rc;
}

/* ---- a node of a cluster: chunks of batches the coordinator sends ---- */

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
    if (shuffle_once(t, c[0].epoch, err, errlen))
        return -1;
    batch_ref r = {SPLIT_TRAIN, c[0].batch * t->plan.batch, c[0].size, &t->set[0], 0, NULL,
                   c[0].epoch, c[0].batch, NULL, NULL};
    ship_role role = {batch_chunks(t, &r) - 1, 1, 0, 0};
    /* from the last chunk down, as the batch is summed */
    for (int done = 0, above = t->plan.nchunks; done < n; done++) {
        int next = -1;
        for (int i = 0; i < n; i++)
            if (c[i].chunk < above && (next < 0 || c[i].chunk > c[next].chunk))
                next = i;
        above = c[next].chunk;
        role.last = done == n - 1, role.alone = c[next].alone != 0;
        r.ship = t->gradients.ready ? &role : NULL;
        r.recall = c[next].claim;
        submit_chunks(t, &r, above, above + 1);
        role.first = 0;
    }
    return 0;
}
