/* Periodic averaging ([cluster] sync_every = K) on the coordinator: an epoch in rounds of K
 * batches, for links too slow to carry a gradient every batch.
 *
 *   split     each batch's chunks are cut into contiguous ranges, one per machine (this one
 *             last), in proportion to their speed: samples per second over their last round;
 *             a node not yet measured counts as its workers times this machine's per worker.
 *             The last node's range may end part way through a chunk: it has that chunk in the
 *             round's first batches, this machine in the others (with 2 chunks a batch, a node
 *             a third as fast would otherwise get half or nothing)
 *   send      every node with a range gets the parameters (PARAMS) and its range (ROUND)
 *   train     this machine takes K local steps on its chunks (trainer_train_share), the nodes
 *             the same on theirs, each from the same parameters with its own momentum
 *   average   once every node's MODEL is in (or the node lost), the models are averaged,
 *             weighted by the samples each trained on, and the average goes on
 *
 * With K = 1 and no momentum a round is the synchronous step, up to rounding. A node lost in a
 * round takes its share of that round with it: those samples are not trained on this epoch, and
 * the round is averaged without it. A node that joins starts with the next round. */
#include "engine/coordinator_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Locked. Each ready node's speed, or its workers' worth of this machine's. */
static double speed_of(const coordinator *c, const node *n, int local_workers)
{
    if (n->img_s > 0)
        return n->img_s;
    return c->round_img_s > 0 ? n->running * c->round_img_s / local_workers : n->running;
}

/* Locked. Sends node n its share of the round (w), from the parameters in c->params; 0, or -1
 * when it cannot take part (its memory, or its link). */
static int send_round(coordinator *c, node *n, const msg_round *w)
{
    if (!n->model && !(n->model = malloc(sizeof(float) * (size_t)c->nparams)))
        return -1;
    uint8_t head[PROTO_PARAMS_HEAD], round[32];
    for (int i = 0; i < 8; i++)
        head[i] = (uint8_t)(w->seq >> (8 * i));
    if (send_to(c, n, MSG_PARAMS, head, sizeof head, c->params, sizeof(float) * (size_t)c->nparams) ||
        send_to(c, n, MSG_ROUND, round, proto_round_encode(w, round, sizeof round), NULL, 0))
        return -1;
    n->params_seq = n->round_seq = w->seq;
    n->in_round = 1, n->round_done = 0;
    n->round_chunks = (int)(w->chunk1 - w->chunk0 - 1) * (int)w->batches + (int)w->partial;
    n->round_sent_at = now_s();
    return 0;
}

/* The last node's end in chunks, x (a real number), as its last chunk and the batches it has
 * that chunk in, the first ones (this machine has it in the rest): a node a fraction of a chunk
 * wide shares that chunk with this machine instead of taking all or none of it. */
static int last_end(double x, long batches, long *partial)
{
    int full = (int)x;
    *partial = lround((x - full) * (double)batches);
    if (*partial == 0)
        return *partial = batches, full;
    return full + 1;
}

/* Locked. Splits the chunks of `batches` batches from `first` among the ready nodes and this
 * machine, and sends the nodes theirs; returns where this machine's chunks start: it has the
 * rest, at least one chunk (and the chunks of a node that could not take part), and the chunk
 * before them too in the batches after the first *partial. */
static int start_round(coordinator *c, int epoch, long first, long batches, int nchunks,
                       long *partial)
{
    int local_workers = rt_active_workers(c->rt), members[MAX_NODES], m = 0;
    double total = c->round_img_s > 0 ? c->round_img_s : local_workers;
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i].ready && !c->nodes[i].gone)
            members[m++] = i, total += speed_of(c, &c->nodes[i], local_workers);
    double upto = 0;
    int k0 = 0;
    *partial = batches;
    c->rounds++;
    for (int j = 0; j < m; j++) {
        node *n = &c->nodes[members[j]];
        upto += speed_of(c, n, local_workers);
        double x = nchunks * upto / total < nchunks - 1 ? nchunks * upto / total : nchunks - 1;
        long with_last = batches;
        int k1 = j < m - 1 ? (int)(x + 0.5) : last_end(x, batches, &with_last);
        msg_round w = {c->rounds, (uint32_t)epoch, (uint32_t)first, (uint32_t)batches,
                       (uint32_t)k0, (uint32_t)k1, (uint32_t)with_last};
        if (k1 > k0 && send_round(c, n, &w) == 0)
            k0 = k1, *partial = with_last;
    }
    c->rounds_shared += *partial < batches;
    return k0;
}

/* Locked. Waits until every node of the round sent its model or was lost. */
static void wait_for_models(coordinator *c)
{
    for (;;) {
        int waiting = 0;
        for (int i = 0; i < c->nnodes; i++)
            waiting |= c->nodes[i].in_round && !c->nodes[i].round_done && !c->nodes[i].gone;
        if (!waiting)
            return;
        pthread_cond_wait(&c->round_over, &c->lock);
    }
}

typedef struct model_share {
    const float *params;
    double weight;           /* samples trained on */
} model_share;

/* The average of the models, weighted, into out (which may be the first model). */
static void average(const model_share *s, int n, long nparams, float *out)
{
    double total = 0;
    for (int k = 0; k < n; k++)
        total += s[k].weight;
    if (total <= 0)
        return;
    for (long i = 0; i < nparams; i++) {
        double sum = 0;
        for (int k = 0; k < n; k++)
            sum += s[k].weight * (double)s[k].params[i];
        out[i] = (float)(sum / total);
    }
}

/* After this machine's part: the nodes' models in, the average set, the round's figures added
 * to the pass's. */
static int finish_round(coordinator *c, const pass_result *local, pass_result *out, char *err,
                        size_t errlen)
{
    model_share shares[MAX_NODES + 1] = {{c->params, (double)local->samples}};
    int n = 1;
    out->loss += local->loss, out->correct += local->correct, out->samples += local->samples;
    pthread_mutex_lock(&c->lock);
    wait_for_models(c);
    for (int i = 0; i < c->nnodes; i++) {
        node *x = &c->nodes[i];
        if (x->in_round && x->round_done) {
            shares[n++] = (model_share){x->model, (double)x->round.samples};
            out->loss += x->round.loss;
            out->correct += x->round.correct, out->samples += x->round.samples;
        }
        x->in_round = 0;   /* a late MODEL is refused from now on */
    }
    pthread_mutex_unlock(&c->lock);
    if (n == 1)
        return 0;
    average(shares, n, c->nparams, c->params);
    return trainer_set_params(c->t, c->params, err, errlen);
}

int coordinator_average_epoch(coordinator *c, int epoch, long first_batch, pass_result *out,
                              char *err, size_t errlen)
{
    const exec_plan *p = trainer_plan(c->t);
    long nbatches = (c->train->n + p->batch - 1) / p->batch, every = c->cfg->sync_every;
    double start = now_s();
    memset(out, 0, sizeof *out);
    for (long b = first_batch; b < nbatches && !out->stopped; b += every) {
        long batches = nbatches - b < every ? nbatches - b : every;
        if (trainer_get_params(c->t, c->params, err, errlen))
            return -1;
        long partial;
        pthread_mutex_lock(&c->lock);
        int here = start_round(c, epoch, b, batches, p->nchunks, &partial);
        pthread_mutex_unlock(&c->lock);
        pass_result mine;   /* the chunk before `here` too, after the batches a node has it in */
        if (trainer_train_round(c->t, epoch, b, batches, partial, here, p->nchunks, here - 1,
                                p->nchunks, &mine, err, errlen) ||
            trainer_get_params(c->t, c->params, err, errlen))
            return -1;
        pthread_mutex_lock(&c->lock);
        c->local_chunks += (long)(p->nchunks - here) * mine.batches +
                           (mine.batches > partial ? mine.batches - partial : 0);
        if (mine.samples && mine.seconds > 0)
            c->round_img_s = running(c->round_img_s, (double)mine.samples / mine.seconds);
        pthread_mutex_unlock(&c->lock);
        if (finish_round(c, &mine, out, err, errlen))
            return -1;
        out->batches += mine.batches, out->stopped = mine.stopped;
    }
    out->seconds = now_s() - start;
    return 0;
}

void averaging_on_model(coordinator *c, node *n, const uint8_t *p, size_t len)
{
    msg_result r;
    char why[200];
    if (proto_model_decode(&r, p, len, c->nparams, why, sizeof why))
        return refuse(c, n, why);
    if (!n->in_round || n->round_done || r.seq != n->round_seq)
        return refuse(c, n, "a model for a round it was not sent");
    memcpy(n->model, r.grads, sizeof(float) * (size_t)c->nparams);
    trace_node(c, n, "round: sent, trained, returned", n->round_sent_at, now_s());
    double took = now_s() - n->round_sent_at, computing = r.compute_s / (r.workers ? r.workers : 1);
    n->round = r, n->round.grads = NULL;
    n->chunks += n->round_chunks, n->samples += r.samples, n->compute_s += r.compute_s;
    n->wait_s += took > computing ? took - computing : 0;
    n->active_s += took;
    n->joules = r.joules, n->estimated = (int)r.estimated, n->carbon = r.carbon_g_per_kwh;
    n->running = r.workers < (uint32_t)n->workers ? (int)r.workers : n->workers;
    if (r.samples && took > 0)
        n->img_s = running(n->img_s, r.samples / took);
    if (r.watts > 0)
        n->watts = running(n->watts, r.watts);
    n->round_done = 1;
    pthread_cond_broadcast(&c->round_over);
}

void averaging_node_lost(coordinator *c, node *n)
{
    if (n->in_round && !n->round_done) {
        c->rounds_lost++;
        fprintf(c->log, "cluster: node %s's share of round %llu is lost with it: the round is "
                "averaged without it\n", n->addr, (unsigned long long)n->round_seq);
        n->active_s += now_s() - n->round_sent_at;
    }
    pthread_cond_broadcast(&c->round_over);
}
