/* A batch as a task graph, and passes over a data set.
 *
 * For every chunk of a batch: a load task, a forward task per layer (or per filter group), the
 * loss, and when training a backward task per layer, read from the end; then per layer with
 * parameters the partial gradients summed in chunk order and the SGD update. Tasks are chained
 * by the regions they touch, not by barriers, so a chunk enters layer i+1 as soon as it leaves
 * layer i, and the next batch (in the other set of buffers) loads while this one finishes. A
 * batch is submitted layer by layer across its chunks: when the submitting thread stops to run a
 * task, every chunk already has work. What other machines of a cluster need of a batch (chunks
 * computed elsewhere, claims, parameters and gradients for the wire) is trainer_remote.c's,
 * through the trainer_remote_* calls below. */
#include "engine/train/trainer_internal.h"

#include "ops/layers.h"
#include "common/clock.h"

#include <string.h>

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

void trainer_submit(trainer *t, rt_kind *kind, const void *args, size_t size, int prio,
                    const access_list *al, int chunk)
{
    submit_claimed(t, kind, args, size, prio, al, chunk, NULL);
}

/* The claim on chunk k of the batch, if another machine may take it. */
static _Atomic int *claim_of(const batch_ref *r, int k)
{
    return r->remote.claims ? &r->remote.claims[k] : r->remote.recall;
}

static layer_task task_for(const trainer *t, int l, int n)
{
    layer_task a = {.l = &t->m->layers[l], .n = n, .f1 = 0,
                    .in_lanes = (signed char)t->plan.in_lanes[l],
                    .out_lanes = (signed char)t->plan.out_lanes[l]};
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
    int s0, n = trainer_chunk_size(t, r, k, &s0);
    load_args a = {r->first + s0, (long)d->c * d->h * d->w, n, r->split == SPLIT_TRAIN,
                   (signed char)t->plan.bytes_input};
    access_list al = {.n = 0};
    add(&al, t->data[r->split].pixels, RT_R);
    add(&al, t->data[r->split].labels, RT_R);
    add(&al, a.bytes ? r->b->samples.part[k] : r->b->act[0].part[k], RT_W);
    add(&al, r->b->labels.part[k], RT_W);
    if (a.shuffled)
        add(&al, t->horder, RT_R);
    trainer_submit(t, a.bytes ? &trainer_load_pointers_kind : &trainer_load_kind, &a, sizeof a, PRIO_LOAD, &al, k);
}

/* Layer l's task kind in a direction: fused with the max-pool after it (and maybe a relu),
 * with the relu after it, or its own. */
static rt_kind *fused_kind(const trainer *t, int l, int backward)
{
    const layer_class *c = t->m->layers[l].cls;
    if (!t->plan.fused[l])
        return backward ? c->backward : c->forward;
    if (t->plan.fused_pool[l])
        return backward ? c->fused_backward : c->fused_forward;
    return backward ? c->relu_fused_backward : c->relu_fused_forward;
}

/* Layer l's forward task for chunk k and filter group g (or, fused, the convolution, the
 * max-pool after it and maybe a relu, or the relu after it). */
static void submit_forward(trainer *t, const batch_ref *r, int l, int k, int g, int n)
{
    const layer *ly = &t->m->layers[l];
    int fused = t->plan.fused[l], groups = t->plan.groups[l];
    layer_task a = task_for(t, l, n);
    trainer_group_units(ly, groups, g, &a.f0, &a.f1);
    access_list al = {.n = 0};
    add_input(t, r, &a, &al, l, k);
    if (fused) {
        a.relu = fused > t->plan.fused_pool[l];
        a.at.out = add_chunk(&al, &r->b->act[l + 1 + fused], k, RT_W);
        if (t->plan.fused_pool[l])
            a.at.aux = add(&al, r->b->aux[l + 1].part[k], RT_W);
        else if (ly->cls->aux_bytes)   /* a max-pool with the relu after it (on a device) */
            a.at.aux = add(&al, r->b->aux[l].part[k], RT_W);
    } else {
        a.at.out = groups > 1 ? add(&al, r->b->act[l + 1].part[k * groups + g], RT_W)
                              : add_chunk(&al, &r->b->act[l + 1], k, RT_W);
        if (ly->cls->aux_bytes)
            a.at.aux = add(&al, r->b->aux[l].part[k], RT_W);
    }
    if (ly->nparams)
        a.at.params = add(&al, t->hparams[l], RT_R);
    submit_claimed(t, fused_kind(t, l, 0), &a, sizeof a, PRIO_FORWARD, &al, k, claim_of(r, k));
}

/* The loss of chunk k, its gradient when training, and the tally of its figures. */
static void submit_loss(trainer *t, const batch_ref *r, int k)
{
    int L = t->m->nlayers - 1, s0, n = trainer_chunk_size(t, r, k, &s0);
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
    trainer_remote_pass_on(t, r, k, -1);
    trainer_submit_tally(t, r, k, t->predictions != NULL, r->remote.recall);
}

/* Adds chunk k's loss figures (and, evaluating, its predictions) to the pass's. */
void trainer_submit_tally(trainer *t, const batch_ref *r, int k, int evaluating, _Atomic int *claim)
{
    int s0, n = trainer_chunk_size(t, r, k, &s0);
    tally_args ta = {r->first + s0, n, evaluating, &t->samples_done,
                     r->split == SPLIT_TRAIN && t->marks.on ? &t->marks : NULL, r->index};
    access_list tl = {.n = 0};
    add(&tl, r->b->stats.part[k], RT_R);
    add(&tl, t->htotals, RT_RW);
    if (evaluating) {
        add(&tl, r->b->aux[t->m->nlayers - 1].part[k], RT_R);
        add(&tl, t->hpredictions, RT_RW);
    }
    submit_claimed(t, &trainer_tally_kind, &ta, sizeof ta, PRIO_TALLY, &tl, -1, claim);
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
            if (t->plan.fused_pool[l])
                a.at.aux = add(&al, r->b->aux[l + 1].part[k], RT_R);
            if (fused > t->plan.fused_pool[l] && !plan_relu_left_to_next(&t->plan, l))
                a.at.out = add_chunk(&al, &r->b->act[out], k, RT_R);   /* dy goes through it */
            if (!t->plan.fused_pool[l] && (ly->cls->backward_reads & READS_AUX))
                a.at.aux = add(&al, r->b->aux[l].part[k], RT_R);   /* a max-pool's argmax */
            else
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
            a.dx_through_relu = (signed char)t->plan.dx_through_relu[l];
            a.at.dx = add(&al, r->b->grad[l].part[k], RT_W);
            if (ly->nparams)
                a.at.params = add(&al, t->hparams[l], RT_R);
        }
        submit_claimed(t, fused_kind(t, l, 1), &a, sizeof a, PRIO_BACKWARD, &al, k,
                       claim_of(r, k));
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


/* On the CPU alone, a layer of one filter group whose chunks fit in a task's accesses: the sum
 * and the step in one task, the bits of the chain below without the sum written out and read
 * back (DAHL's dense layer: 4 passes over its weights' size a batch instead of 8). */
static int submit_fused_update(trainer *t, int l, int k0, int k1, const sgd_args *s)
{
    int momentum = s->momentum != 0;
    if (t->plan.groups[l] != 1 || t->plan.devices || k1 - k0 > RT_MAX_ACCESS - 1 - momentum)
        return 0;
    update_args u = {*s, k1 - k0, 0};
    access_list al = {.n = 0};
    add(&al, t->hparams[l], RT_RW);
    if (momentum)
        add(&al, t->hvelocity[l], RT_RW);
    u.first_part = al.n;
    for (int k = k1 - 1; k >= k0; k--)
        add(&al, t->hpartial_part[l][k], RT_R);
    trainer_submit(t, &trainer_update_kind, &u, sizeof u, PRIO_UPDATE, &al, -1);
    return 1;
}

/* The partial gradients of chunks [k0, k1) of layer l summed in a fixed order, from the last
 * chunk down (the same weights whatever the workers; and a node computing a batch's last
 * chunks may sum them itself, trainer_remote.c), into the layer's gradient. */
static void submit_gradient_sum(trainer *t, int l, int k0, int k1)
{
    int groups = t->plan.groups[l];
    for (int k = k1 - 1; k >= k0; k--) {
        gradsum_args a = {&t->m->layers[l], groups, k == k1 - 1};
        access_list al = {.n = 0};
        add(&al, t->hgrad[l], k < k1 - 1 ? RT_RW : RT_W);
        for (int g = 0; g < groups; g++)
            add(&al, t->hpartial_part[l][k * groups + g], RT_R);
        trainer_submit(t, &trainer_gradsum_kind, &a, sizeof a, PRIO_UPDATE, &al, -1);
    }
}

/* Layer l's update from chunks [k0, k1): their gradients summed, then the step. One chunk of
 * one filter group (a batch per device) has its partial gradient laid out as the layer's: the
 * step reads it there, without a task that would copy it. */
static void submit_update(trainer *t, int l, int k0, int k1)
{
    const layer *ly = &t->m->layers[l];
    const job_config *cfg = t->cfg;
    sgd_args s = {ly->nparams, cfg->lr, cfg->momentum, cfg->weight_decay};
    if (submit_fused_update(t, l, k0, k1, &s))
        return;
    rt_handle *grad = t->hgrad[l];
    if (k1 - k0 == 1 && t->plan.groups[l] == 1)
        grad = t->hpartial_part[l][k0];
    else
        submit_gradient_sum(t, l, k0, k1);
    access_list al = {.n = 0};
    add(&al, t->hparams[l], RT_RW);
    add(&al, grad, RT_R);
    add(&al, t->hvelocity[l], RT_RW);
    trainer_submit(t, &trainer_sgd_kind, &s, sizeof s, PRIO_UPDATE, &al, -1);
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
int trainer_chunk_size(const trainer *t, const batch_ref *r, int k, int *s0)
{
    int s1;
    plan_chunk(&t->plan, k, r->size, s0, &s1);
    return s1 - *s0;
}

/* Chunks [k0, k1) of a batch computed here: load, forward, loss and, training, backward. */
void trainer_submit_chunks(trainer *t, const batch_ref *r, int k0, int k1)
{
    const exec_plan *p = &t->plan;
    int s0;
    for (int k = k0; k < k1; k++)
        submit_load(t, r, k);
    for (int l = 0; l < t->m->nlayers; l++)
        for (int k = k0; k < k1 && has_task(t, l, 0); k++)
            for (int g = 0; g < p->groups[l]; g++)
                submit_forward(t, r, l, k, g, trainer_chunk_size(t, r, k, &s0));
    for (int k = k0; k < k1; k++)
        submit_loss(t, r, k);
    if (r->split != SPLIT_TRAIN)
        return;
    for (int l = t->m->nlayers - 1; l >= 0; l--)
        for (int k = k0; k < k1 && has_task(t, l, 1); k++) {
            submit_backward(t, r, l, k, trainer_chunk_size(t, r, k, &s0));
            trainer_remote_pass_on(t, r, k, l);
        }
}




/* Chunks in the batch: a short batch has fewer. */
int trainer_batch_chunks(const trainer *t, const batch_ref *r)
{
    int s0, chunks = 0;
    while (chunks < t->plan.nchunks && trainer_chunk_size(t, r, chunks, &s0) > 0)
        chunks++;
    return chunks;
}


/* One batch: its chunks (load, forward, loss, backward), then per layer the partial gradients
 * summed and the update. On a coordinator, other machines may compute the batch's last chunks
 * (trainer_remote.c): those are submitted first, as they wait on the network the longest. */
static void submit_batch(trainer *t, batch_ref *r)
{
    int chunks = trainer_batch_chunks(t, r);
    int elsewhere = r->split == SPLIT_TRAIN ? trainer_remote_share(t, r, chunks) : 0;
    trainer_submit_chunks(t, r, 0, chunks - elsewhere);
    if (r->split != SPLIT_TRAIN)
        return;
    t->seq++;
    for (int l = 0; l < t->m->nlayers; l++)
        if (t->m->layers[l].nparams)
            submit_update(t, l, 0, chunks);
    if (elsewhere)   /* the next batch's, likely shared too: they travel as each update ends */
        trainer_remote_pack(t);
}

/* Periodic averaging: chunks [k0, k1) of a training batch here, this replica's model updated
 * with their gradient alone, the mean over their samples. The rest of the batch is the other
 * replicas' (counted as done, for the progress line). */
static void submit_share(trainer *t, batch_ref *r, int k0, int k1)
{
    int chunks = trainer_batch_chunks(t, r), first, last, unused;
    k1 = k1 < chunks ? k1 : chunks;
    if (k0 >= k1) {
        atomic_fetch_add(&t->samples_done, r->size);
        return;
    }
    plan_chunk(&t->plan, k0, r->size, &first, &unused);
    plan_chunk(&t->plan, k1 - 1, r->size, &unused, &last);
    r->mean_over = last - first;
    atomic_fetch_add(&t->samples_done, r->size - r->mean_over);
    trainer_submit_chunks(t, r, k0, k1);
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
    if (split == SPLIT_TRAIN) {
        t->marks.on = 1;
        t->marks.first = t->marks.next = first_batch;
        atomic_store(&t->marks.closed, first_batch);
    }
    atomic_store(&t->samples_done, first_batch * batch);
    double start = clock_now_s();
    for (long b = first_batch; b < nbatches; b++) {
        if (t->stop && atomic_load_explicit(t->stop, memory_order_relaxed)) {
            out->stopped = 1;
            break;
        }
        long first = b * batch;
        batch_ref r = {.split = split, .first = first, .b = &t->set[b & 1], .epoch = epoch,
                       .index = b, .size = (int)(d->n - first < batch ? d->n - first : batch)};
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
    t->marks.on = 0;
    out->seconds = clock_now_s() - start;
    if (rc || !(tot = rt_handle_acquire(t->rt, t->htotals, RT_R))) {
        snprintf(err, errlen, "%s", rt_error(t->rt));
        return -1;
    }
    out->loss = tot->loss, out->correct = tot->correct, out->samples = tot->samples;
    if (split == SPLIT_TRAIN) {
        trainer_close_marks(&t->marks, first_batch + out->batches, tot);
        if (t->progress)   /* the pass's last batches are tallied now */
            t->progress(t->progress_ctx, atomic_load(&t->samples_done), d->n, out->seconds);
    }
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
int trainer_shuffle_once(trainer *t, int epoch, char *err, size_t errlen)
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
    if (trainer_shuffle_once(t, epoch, err, errlen))
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


