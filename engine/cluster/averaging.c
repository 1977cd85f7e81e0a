/* Periodic averaging ([cluster] sync_every = K) on the coordinator: an epoch in rounds of K
 * batches, for links too slow to carry a gradient every batch.
 *
 *   split     each batch's chunks are cut into contiguous ranges, one per machine (this one
 *             last), so that all would finish together: a node's share costs its seconds
 *             computing per sample, plus what a round adds (the models' travel), both measured
 *             over its rounds; a node not yet measured counts as its workers times this
 *             machine's per worker. A share may end part way through a chunk: that machine has
 *             the chunk in the round's first batches, the next machine in the others (with 2
 *             chunks a batch, a node a third as fast would otherwise get half the work or none)
 *   send      every node with a range gets the parameters (PARAMS; with compress = on, a
 *             DELTA from the round before's to a node that holds those) and its range (ROUND)
 *   train     this machine takes K local steps on its chunks (trainer_train_share), the nodes
 *             the same on theirs, each from the same parameters with its own momentum
 *   average   once every node's MODEL is in (or the node lost, or dropped past its round's
 *             deadline: drop_late), the models are averaged, weighted by the samples each
 *             trained on, and the average goes on
 *
 * With overlap = on (late_model.h) no machine waits for a round's average: each sends its change
 * over the round and trains the next from its own model; the average of the changes is made
 * when the last comes (maybe_average, on the hub's thread), goes out as AVERAGE, and every
 * machine applies it after the round it trains meanwhile (this one in finish_late). A node that
 * holds no parameters gets the global model as far as this machine applied the averages, and
 * every average from there on. The epoch's last average is waited for, so that it ends alike.
 *
 * With K = 1 and no momentum a round is the synchronous step, up to rounding. A node lost in a
 * round takes its share of that round with it: those samples are not trained on this epoch, and
 * the round is averaged without it. A node that joins starts with the next round. */
#include "engine/cluster/coordinator_internal.h"

#include "engine/cluster/aggregate.h"
#include "engine/cluster/late_model.h"
#include "engine/cluster/model_delta.h"
#include "engine/job/participation_name.h"
#include "engine/placement/participation.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The mode's state (c->mode_state), guarded by the session's lock. */
typedef struct averaging_state {
    pthread_cond_t round_over;   /* a node's MODEL came, or a node was lost */
    float *params;               /* this machine's parameters, then their average */
    double round_img_s;          /* this machine's samples per second over a round */
    double round_s;              /* the last round's seconds, start to average */
    double round_began;          /* clock_now_s() when the round started */
    int backup_k;                /* participation = backup: the slowest not waited for */
    /* with compress = on (model_delta.h) */
    float *round_start;          /* the parameters the round started from, as every node got them */
    uint64_t start_seq;          /* that round (0: none yet) */
    uint8_t *delta;              /* the next round's parameters from round_start's (overlap:
                                    the mean change of a round) */
    size_t delta_len;
    int delta_ready;             /* nodes holding start_seq's parameters get a DELTA */
    /* with overlap = on (late_model.h): this machine's model, its change in round own_seq (its
       samples, 0: none posted), the mean change of round mean_seq and the nodes' figures of it */
    late_model late;
    float *own_change, *mean;
    uint64_t own_seq, mean_seq;
    double own_samples;
    pass_result mean_figures;
    /* with centered_clip = on (aggregate.h): the round's start (the center; overlap = on: none,
       the changes are centred on zero), and what the models combine into */
    float *center, *combined;
} averaging_state;

static averaging_state *averaging_of(const coordinator *c) { return c->mode_state; }

/* Locked. A node's, measured over its rounds, or until it is, its workers' worth of this
 * machine's (`here`, on `local_workers`). */
static share_cost cost_of(const peer_node *n, share_cost here, int local_workers, double per_chunk)
{
    if (n->round_cost > 0)
        return (share_cost){n->round_cost * per_chunk, n->round_lag};
    return (share_cost){here.per_unit * local_workers / n->running, 0};
}

/* A node's state for round seq: a node may be in two rounds at once (overlap = on). */
static node_round *round_of(peer_node *n, uint64_t seq) { return &n->rounds[seq & 1]; }

/* The head of PARAMS and AVERAGE: the round. */
static void put_seq(uint8_t head[PROTO_PARAMS_HEAD], uint64_t seq)
{
    for (int i = 0; i < 8; i++)
        head[i] = (uint8_t)(seq >> (8 * i));
}

/* Locked, overlap = on: the mean change of round q (averaging_of(c)->mean, or its delta) to node n. */
static int send_average(coordinator *c, peer_node *n, uint64_t q)
{
    averaging_state *av = averaging_of(c);
    uint8_t head[PROTO_PARAMS_HEAD];
    put_seq(head, q);
    n->synced = q;
    return c->cfg->compress
               ? coordinator_send_to(c, n, MSG_AVERAGE, head, sizeof head, av->delta, av->delta_len)
               : coordinator_send_to(c, n, MSG_AVERAGE, head, sizeof head, av->mean,
                         sizeof(float) * (size_t)c->nparams);
}

/* Locked. The parameters node n starts round `seq` from: a DELTA from the round before's to a
 * node that holds those (compress = on), else PARAMS; with overlap = on, nothing to a node that
 * follows the averages, else the global model as far as this machine applied them (and the
 * mean change after it, if it is out already). */
static int send_params(coordinator *c, peer_node *n, uint64_t seq)
{
    averaging_state *av = averaging_of(c);
    uint8_t head[PROTO_DELTA_HEAD];
    size_t floats = sizeof(float) * (size_t)c->nparams;
    if (c->cfg->overlap) {
        if (n->following)
            return 0;
        put_seq(head, av->late.synced);
        n->following = 1, n->synced = av->late.synced;
        return coordinator_send_to(c, n, MSG_PARAMS, head, PROTO_PARAMS_HEAD, av->late.base, floats) ||
               (av->mean_seq == av->late.synced + 1 && send_average(c, n, av->mean_seq));
    }
    if (av->delta_ready && n->params_seq == av->start_seq) {   /* it holds the round before's */
        msg_delta d = {seq, av->start_seq, NULL};
        return coordinator_send_to(c, n, MSG_DELTA, head, proto_delta_head(&d, head, sizeof head), av->delta,
                       av->delta_len);
    }
    put_seq(head, seq);
    return coordinator_send_to(c, n, MSG_PARAMS, head, PROTO_PARAMS_HEAD, av->params, floats);
}

/* Locked. Sends node n its share of the round (w, `size` chunk-batches of per_chunk samples),
 * from the parameters in averaging_of(c)->params, due back by a deadline from its measured
 * times; 0, or -1 when it cannot take part (its memory, or its link). */
static int send_round(coordinator *c, peer_node *n, const msg_round *w, long size, double per_chunk)
{
    node_round *r = round_of(n, w->seq);
    if (!r->model && !(r->model = malloc(sizeof(float) * (size_t)c->nparams)))
        return -1;
    uint8_t round[48];
    if (send_params(c, n, w->seq) ||
        coordinator_send_to(c, n, MSG_ROUND, round, proto_round_encode(w, round, sizeof round), NULL, 0))
        return -1;
    n->params_seq = r->seq = w->seq;
    r->in = 1, r->done = 0;
    r->chunks = (int)size;
    r->sent_at = clock_now_s();
    r->late = 0;
    double expected = n->round_cost > 0 ? n->round_lag + n->round_cost * (double)size * per_chunk : 0;
    r->due = r->sent_at + coordinator_deadline(c, expected);
    return 0;
}

/* Chunks of a round's batches, counted in chunk-batches: the place where one machine's share
 * ends and the next one's starts is chunk `chunk` in its first `until` batches (0: none), the
 * one before in the others. */
typedef struct boundary {
    int chunk;
    long until;
} boundary;

/* The boundary at x chunks (a real number) in `batches` batches: a machine a fraction of a
 * chunk wide shares that chunk with the next instead of taking all or none of it. */
static boundary boundary_at(double x, long batches)
{
    boundary b = {(int)x, lround((x - (int)x) * (double)batches)};
    if (b.until == batches)
        b.chunk++, b.until = 0;
    return b;
}

/* The share between two boundaries (round_share in trainer.h), and its size in chunk-batches. */
static round_share share_between(boundary from, boundary to)
{
    return (round_share){from.chunk, to.chunk, from.until, to.until};
}

static long share_size(boundary from, boundary to, long batches)
{
    return (to.chunk - from.chunk) * batches + to.until - from.until;
}

/* Locked. A node still training a round the coordinator did not wait for (backup): it takes no
 * share until its model of it is in. */
static int still_busy(const peer_node *n)
{
    for (int k = 0; k < 2; k++)
        if (n->rounds[k].in && n->rounds[k].skipped)
            return 1;
    return 0;
}

/* Locked. Splits the chunks of `batches` batches from `first` among the ready nodes and this
 * machine, in chunk-batches, so that all would finish together (balance), and sends the nodes
 * theirs; returns where this machine's share starts: it has the rest, at least the last chunk
 * of every batch (and the share of a node that could not take part). */
static boundary start_round(coordinator *c, int epoch, long first, long batches, int nchunks,
                            double per_chunk)
{
    averaging_state *av = averaging_of(c);
    int local_workers = rt_active_workers(c->rt), members[MAX_NODES + 1], m = 1, take[MAX_NODES];
    share_cost cost[MAX_NODES + 1];
    double u[MAX_NODES + 1], speed[MAX_NODES];
    for (int i = 0; i < c->nnodes; i++)
        speed[i] = c->nodes[i].round_cost > 0 ? 1 / c->nodes[i].round_cost : 0;
    long batch = (long)(per_chunk * nchunks + 0.5), per_epoch = (c->train->n + batch - 1) / batch;
    double samples_left = ((double)(c->cfg->epochs - epoch) * (double)per_epoch + (double)(per_epoch - first)) * (double)batch;
    coordinator_participation(c, (unsigned long long)c->rounds, av->round_img_s, c->local_w, speed,
                              samples_left, av->round_s, take);
    cost[0] = (share_cost){av->round_img_s > 0 ? per_chunk / av->round_img_s : 1.0 / local_workers, 0};
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i].ready && !c->nodes[i].gone && take[i] && !still_busy(&c->nodes[i]))
            members[m] = i, cost[m++] = cost_of(&c->nodes[i], cost[0], local_workers, per_chunk);
    cluster_share_balance(cost, m, (double)batches * nchunks, u);
    c->rounds++;
    for (int j = 1; j < m; j++)   /* one left out stays measured: a chunk-batch now and then */
        u[j] = u[j] < 1 && c->rounds % PROBE_EVERY == 0 ? 1 : u[j];
    double upto = 0;
    boundary from = {0, 0};
    int shared = 0;
    for (int j = 1; j < m; j++) {
        peer_node *n = &c->nodes[members[j]];
        upto += u[j] / (double)batches;
        boundary to = boundary_at(upto < nchunks - 1 ? upto : nchunks - 1, batches);
        round_share s = share_between(from, to);
        long size = share_size(from, to, batches);
        msg_round w = {c->rounds, (uint32_t)epoch, (uint32_t)first, (uint32_t)batches,
                       (uint32_t)s.k0, (uint32_t)s.k1, (uint32_t)s.k0_after, (uint32_t)s.k1_until};
        if (size > 0 && send_round(c, n, &w, size, per_chunk) == 0)
            from = to, shared |= to.until > 0;
    }
    c->rounds_shared += shared;
    return from;
}

/* Locked. How many nodes of round q have yet to send their model (and are not lost). */
static int models_due(const coordinator *c, uint64_t q)
{
    int due = 0;
    for (int i = 0; i < c->nnodes; i++) {
        const node_round *r = &c->nodes[i].rounds[q & 1];
        due += r->in && r->seq == q && !r->done && !c->nodes[i].gone;
    }
    return due;
}

/* Locked. participation = backup, after round q: how many of the slowest models the next round
 * does not wait for, from this round's arrivals (placement's participation_backup_k). */
static int backup_k(const coordinator *c, uint64_t q, double began, double here_s)
{
    double t[MAX_NODES];
    int m = 0;
    for (int i = 0; i < c->nnodes; i++) {
        const node_round *r = &c->nodes[i].rounds[q & 1];
        if (r->in && r->seq == q && !c->nodes[i].gone)
            t[m++] = r->done ? c->nodes[i].model_at - began : INFINITY;
    }
    return participation_backup_k(t, m, here_s);
}

/* Locked, waiting for round q: a node past its round's deadline (or, once the run is asked to
 * stop, half the timeout after) is dropped, named, and its share lost with it, so that a node
 * that stalls cannot hold the run. */
static void drop_late(coordinator *c, uint64_t q)
{
    coordinator_stopping(c);
    double now = clock_now_s();
    for (int i = 0; i < c->nnodes; i++) {
        peer_node *n = &c->nodes[i];
        node_round *r = round_of(n, q);
        if (!r->in || r->seq != q || r->done || n->gone || r->late || now < coordinator_due(c, r->due))
            continue;
        char why[200];
        snprintf(why, sizeof why, "late with its model of round %llu (%.1f s, past its deadline)",
                 (unsigned long long)q, now - r->sent_at);
        r->late = 1;
        n->late++;
        coordinator_refuse(c, n, why);
    }
}

/* Locked: unlocks while it waits a while (or until a MODEL comes) for round q. */
static void wait_for_round(coordinator *c, uint64_t q)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    long ns = until.tv_nsec + 200 * 1000000L;
    until.tv_sec += ns / 1000000000L, until.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(&averaging_of(c)->round_over, &c->lock, &until);
    drop_late(c, q);
}

/* A machine's figures of a round added to a pass's. */
static void add_figures(pass_result *out, double loss, long correct, long samples)
{
    out->loss += loss, out->correct += correct, out->samples += samples;
}

/* A round's models (or, center NULL, their changes) made one into out: their mean, or
 * CenteredClip ([cluster] centered_clip, aggregate.h). */
static void combine(coordinator *c, const model_share *s, int n, const float *center, float *out)
{
    averaging_state *av = averaging_of(c);
    if (!c->cfg->centered_clip) {
        aggregate_mean(s, n, c->nparams, out);
        return;
    }
    c->models_clipped += aggregate_centered_clip(s, n, c->nparams, center, av->combined);
    memcpy(out, av->combined, sizeof(float) * (size_t)c->nparams);
}

/* After this machine's part: the nodes' models in, the average set, the round's figures added
 * to the pass's. */
static int finish_round(coordinator *c, const pass_result *local, pass_result *out, char *err,
                        size_t errlen)
{
    averaging_state *av = averaging_of(c);
    model_share shares[MAX_NODES + 1] = {{av->params, (double)local->samples}};
    int n = 1;
    uint64_t q = (uint64_t)c->rounds;
    add_figures(out, local->loss, local->correct, local->samples);
    pthread_mutex_lock(&c->lock);
    int backup = c->cfg->participation == PARTICIPATION_BACKUP;
    double here_s = clock_now_s() - av->round_began;
    while (models_due(c, q) > (backup ? av->backup_k : 0))
        wait_for_round(c, q);
    if (backup)   /* the next round's k, from this one's arrivals */
        av->backup_k = backup_k(c, q, av->round_began, here_s);
    for (int i = 0; i < c->nnodes; i++) {
        node_round *r = round_of(&c->nodes[i], q);
        if (r->skipped && r->seq != q)   /* a round before, not waited for: its model is due */
            continue;
        if (r->in && r->seq == q && r->done)
            shares[n++] = (model_share){r->model, (double)r->figures.samples},
            add_figures(out, r->figures.loss, r->figures.correct, r->figures.samples);
        if (backup && r->in && r->seq == q && !r->done && !c->nodes[i].gone) {
            r->skipped = 1, c->models_skipped++;   /* its model, when it comes, is not used */
            continue;
        }
        r->in = 0;   /* a late MODEL is refused from now on */
    }
    pthread_mutex_unlock(&c->lock);
    if (n == 1)
        return 0;
    combine(c, shares, n, av->center, av->params);
    return trainer_set_params(c->t, av->params, err, errlen);
}

/* Locked, overlap = on. Once this machine posted its change of round q (own_seq) and every peer_node
 * of q sent its own or was lost: their mean, weighted by samples (rounded as a delta carries it,
 * with compress = on), into averaging_of(c)->mean, sent to every node that follows the averages. On the hub's
 * thread when a node's MODEL is the last to come. */
static void maybe_average(coordinator *c)
{
    averaging_state *av = averaging_of(c);
    uint64_t q = av->own_seq;
    if (!q || av->mean_seq == q || models_due(c, q))
        return;
    model_share shares[MAX_NODES + 1] = {{av->own_change, av->own_samples}};
    int n = 1;
    memset(&av->mean_figures, 0, sizeof av->mean_figures);
    for (int i = 0; i < c->nnodes; i++) {
        node_round *r = round_of(&c->nodes[i], q);
        if (r->skipped && r->seq != q)   /* a round before, not waited for: its model is due */
            continue;
        if (r->in && r->seq == q && r->done)
            shares[n++] = (model_share){r->model, (double)r->figures.samples},
            add_figures(&av->mean_figures, r->figures.loss, r->figures.correct, r->figures.samples);
        r->in = r->seq == q ? 0 : r->in;   /* a late MODEL is refused from now on */
    }
    memset(av->mean, 0, sizeof(float) * (size_t)c->nparams);   /* none trained: no change */
    combine(c, shares, n, NULL, av->mean);
    if (c->cfg->compress) {   /* every machine applies the same floats */
        model_delta_encode(NULL, av->mean, c->layer_params, c->nlayers, av->delta);
        model_delta_apply(NULL, av->delta, c->layer_params, c->nlayers, av->mean);
    }
    av->mean_seq = q;
    for (int i = 0; i < c->nnodes; i++) {
        peer_node *x = &c->nodes[i];
        if (x->following && !x->gone && x->synced == q - 1)
            send_average(c, x, q);   /* a broken link is the hub's to report */
    }
    pthread_cond_broadcast(&av->round_over);
}

/* overlap = on: round q's mean change applied to this machine's model (averaging_of(c)->params), once it has
 * come; the nodes' figures of it added to out. */
static int apply_mean(coordinator *c, uint64_t q, pass_result *out, char *err, size_t errlen)
{
    averaging_state *av = averaging_of(c);
    pthread_mutex_lock(&c->lock);
    while (av->mean_seq < q)
        wait_for_round(c, q);
    pthread_mutex_unlock(&c->lock);
    add_figures(out, av->mean_figures.loss, av->mean_figures.correct, av->mean_figures.samples);
    return late_apply(&av->late, q, av->mean, av->params, err, errlen);
}

/* overlap = on, after this machine's share of round q: the mean change of the round before
 * applied (waited for, if it has yet to come), this machine's change in q posted to be
 * averaged; at the epoch's end (last), q's mean applied too, so that every machine ends the
 * epoch on the same model. */
static int finish_late(coordinator *c, const pass_result *local, int last, pass_result *out,
                       char *err, size_t errlen)
{
    averaging_state *av = averaging_of(c);
    uint64_t q = (uint64_t)c->rounds;
    add_figures(out, local->loss, local->correct, local->samples);
    if (av->late.older && apply_mean(c, av->late.older, out, err, errlen))
        return -1;
    late_change(&av->late, av->params, av->own_change);
    pthread_mutex_lock(&c->lock);
    av->own_seq = q, av->own_samples = (double)local->samples;
    maybe_average(c);
    pthread_mutex_unlock(&c->lock);
    if (last && apply_mean(c, q, out, err, errlen))
        return -1;
    return trainer_set_params(c->t, av->params, err, errlen);
}

/* With compress = on, before a round: the parameters rounded to what a delta from the round
 * before's carries (when a node holds those), so that this machine starts the round from what
 * such a node rebuilds; the delta kept for those nodes, and the round's start kept for the
 * deltas its nodes send back. 0, or -1 with err. */
static int round_to_delta(coordinator *c, char *err, size_t errlen)
{
    averaging_state *av = averaging_of(c);
    int wanted = 0;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->nnodes && av->start_seq; i++)
        wanted |= c->nodes[i].ready && !c->nodes[i].gone && c->nodes[i].params_seq == av->start_seq;
    pthread_mutex_unlock(&c->lock);
    av->delta_ready = wanted;
    if (wanted) {
        model_delta_encode(av->round_start, av->params, c->layer_params, c->nlayers, av->delta);
        if (model_delta_apply(av->round_start, av->delta, c->layer_params, c->nlayers, av->params) ||
            trainer_set_params(c->t, av->params, err, errlen))
            return -1;
    }
    memcpy(av->round_start, av->params, sizeof(float) * (size_t)c->nparams);
    return 0;
}

static int averaging_epoch(coordinator *c, int epoch, long first_batch, pass_result *out,
                           char *err, size_t errlen)
{
    averaging_state *av = averaging_of(c);
    const exec_plan *p = trainer_plan(c->t);
    long nbatches = (c->train->n + p->batch - 1) / p->batch, every = c->cfg->sync_every;
    double start = clock_now_s();
    memset(out, 0, sizeof *out);
    for (long b = first_batch; b < nbatches && !out->stopped; b += every) {
        long batches = nbatches - b < every ? nbatches - b : every;
        double round_began = av->round_began = clock_now_s();
        int late = c->cfg->overlap, last = b + every >= nbatches;
        if (trainer_get_params(c->t, av->params, err, errlen))
            return -1;
        if (late && b == first_batch)   /* every machine ends an epoch on the same model */
            late_reset(&av->late, av->params, (uint64_t)c->rounds);
        if (late ? late_round_begin(&av->late, av->params, (uint64_t)c->rounds + 1, err, errlen)
                 : c->cfg->compress && round_to_delta(c, err, errlen))
            return -1;
        if (c->cfg->centered_clip && !late)
            memcpy(av->center, av->params, sizeof(float) * (size_t)c->nparams);
        pthread_mutex_lock(&c->lock);
        boundary here = start_round(c, epoch, b, batches, p->nchunks, (double)p->batch / p->nchunks);
        av->start_seq = (uint64_t)c->rounds;
        boundary end = {p->nchunks, 0};
        pthread_mutex_unlock(&c->lock);
        pass_result mine;
        round_share s = share_between(here, end);
        if (trainer_train_share(c->t, epoch, b, batches, &s, &mine, err, errlen) ||
            trainer_get_params(c->t, av->params, err, errlen))
            return -1;
        pthread_mutex_lock(&c->lock);
        c->local_chunks += share_size(here, end, mine.batches);
        if (mine.samples && mine.seconds > 0)
            av->round_img_s = coordinator_running_mean(av->round_img_s, (double)mine.samples / mine.seconds);
        pthread_mutex_unlock(&c->lock);
        if (late ? finish_late(c, &mine, last || mine.stopped, out, err, errlen)
                 : finish_round(c, &mine, out, err, errlen))
            return -1;
        out->batches += mine.batches, out->stopped = mine.stopped;
        av->round_s = clock_now_s() - round_began;
    }
    out->seconds = clock_now_s() - start;
    return 0;
}

static void on_model(coordinator *c, peer_node *n, const uint8_t *p, size_t len)
{
    averaging_state *av = averaging_of(c);
    msg_result r;
    char why[200];
    size_t body = c->cfg->compress ? av->delta_len : sizeof(float) * (size_t)c->nparams;
    if (proto_model_decode(&r, p, len, body, (uint32_t)c->train->n, why, sizeof why))
        return coordinator_refuse(c, n, why);
    node_round *rd = round_of(n, r.seq);
    if (!rd->in || rd->done || r.seq != rd->seq)
        return coordinator_refuse(c, n, "a model for a round it was not sent");
    if (rd->skipped) {   /* backup: the round went on without it; it is free for the next */
        n->model_at = clock_now_s();
        n->joules = r.joules, n->carbon = r.carbon_g_per_kwh, n->grams = r.grams, n->grams_at = n->model_at;
        if (r.samples && r.compute_s > 0)   /* its measured speed still counts */
            n->round_cost = coordinator_running_mean(n->round_cost, r.compute_s / (r.workers ? r.workers : 1) / r.samples);
        rd->in = rd->skipped = 0;
        return;
    }
    const float *base = c->cfg->overlap ? NULL : av->round_start;   /* overlap: the change */
    if (!c->cfg->compress)
        memcpy(rd->model, r.body, body);
    else if (model_delta_apply(base, r.body, c->layer_params, c->nlayers, rd->model))
        return coordinator_refuse(c, n, "a model whose delta has a negative or infinite scale");
    /* overlapped, a round starts on the node once the one before is done */
    double begun = rd->sent_at > n->model_at ? rd->sent_at : n->model_at;
    n->model_at = clock_now_s();
    coordinator_trace_node(c, n, "round: sent, trained, returned", begun, n->model_at);
    double took = n->model_at - begun, computing = r.compute_s / (r.workers ? r.workers : 1);
    rd->figures = r, rd->figures.grads = NULL, rd->figures.body = NULL;
    n->chunks += rd->chunks, n->samples += r.samples, n->compute_s += r.compute_s;
    n->wait_s += took > computing ? took - computing : 0;
    n->active_s += took;
    n->joules = r.joules, n->estimated = (int)r.estimated, n->carbon = r.carbon_g_per_kwh;
    n->renewable_w = r.renewable_w, n->grams = r.grams, n->grams_at = n->model_at;
    n->running = r.workers < (uint32_t)n->workers ? (int)r.workers : n->workers;
    if (r.samples && computing > 0) {   /* what computing costs, and what the round adds */
        n->round_cost = coordinator_running_mean(n->round_cost, computing / r.samples);
        /* overlapped, the models travel while the machines compute: they add nothing */
        n->round_lag = coordinator_running_mean(n->round_lag, took > computing && !c->cfg->overlap ? took - computing
                                                                                 : 1e-6);
    }
    if (r.watts > 0)
        n->watts = coordinator_running_mean(n->watts, r.watts);
    rd->done = 1;
    if (c->cfg->overlap)
        maybe_average(c);
    pthread_cond_broadcast(&av->round_over);
}

static void averaging_node_lost(coordinator *c, peer_node *n)
{
    for (int k = 0; k < 2; k++) {
        node_round *r = &n->rounds[k];
        if (r->in && !r->done) {
            c->rounds_lost++;
            fprintf(c->log, "cluster: node %s's share of round %llu is lost with it: the round is "
                    "averaged without it\n", n->name, (unsigned long long)r->seq);
            n->active_s += clock_now_s() - r->sent_at;
        }
    }
    if (c->cfg->overlap)
        maybe_average(c);
    pthread_cond_broadcast(&averaging_of(c)->round_over);
}

/* ---- the mode (mode.h) ---- */

static int averaging_open(coordinator *c, void **peer_ctx, char *err, size_t errlen)
{
    averaging_state *av = calloc(1, sizeof *av);
    if (!av) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_cond_init(&av->round_over, NULL);
    c->mode_state = av;
    *peer_ctx = NULL;   /* no chunk runs elsewhere */
    snprintf(c->weights_why, sizeof c->weights_why, "periodic averaging (sync_every = %d): the "
             "weights are an average of the machines' models", c->cfg->sync_every);
    return 0;
}

static int averaging_attach(coordinator *c, char *err, size_t errlen)
{
    averaging_state *av = averaging_of(c);
    const job_config *cfg = c->cfg;
    fprintf(c->log, "cluster: periodic averaging: the models are averaged every %d batches "
            "([cluster] sync_every); every node trains on a share%s%s%s\n", cfg->sync_every,
            cfg->compress ? "; models travel as half-precision deltas ([cluster] compress)" : "",
            cfg->overlap ? "; each round's average travels while the next round trains, and is "
                           "applied after it ([cluster] overlap)" : "",
            cfg->centered_clip ? "; the models are combined by CenteredClip, robust to a machine "
                                 "far off ([cluster] centered_clip)" : "");
    av->delta_len = model_delta_bytes(c->layer_params, c->nlayers);
    size_t bytes = sizeof(float) * (size_t)c->nparams;
    if (!(av->params = malloc(bytes)) ||
        (cfg->compress && !cfg->overlap && !(av->round_start = malloc(bytes))) ||
        (cfg->compress && !(av->delta = malloc(av->delta_len))) ||
        (cfg->overlap && (late_open(&av->late, c->nparams) || !(av->own_change = malloc(bytes)) ||
                          !(av->mean = malloc(bytes)))) ||
        (cfg->centered_clip && (!(av->combined = malloc(bytes)) ||
                                (!cfg->overlap && !(av->center = malloc(bytes)))))) {
        snprintf(err, errlen, "out of memory for %ld parameters", c->nparams);
        return -1;
    }
    return 0;
}

static int averaging_on_message(coordinator *c, peer_node *n, const netio_event *e)
{
    if (e->type != MSG_MODEL)
        return -1;
    on_model(c, n, e->payload, e->len);
    return 0;
}

static void averaging_node_ready(coordinator *c, peer_node *n)
{
    (void)c, (void)n;   /* it takes a share from the next round on */
}

static int averaging_reclaim(coordinator *c, peer_node *n)
{
    (void)c, (void)n;   /* its share of a round is lost with it (averaging_node_lost) */
    return 0;
}

static void averaging_describe_node(const coordinator *c, const peer_node *n, char *out,
                                    size_t len)
{
    (void)c, (void)n;
    snprintf(out, len, "%s", "");
}

static int averaging_extra_work(coordinator *c, rt_stats *out)
{
    (void)c, (void)out;
    return 0;
}

static void averaging_stop(coordinator *c)
{
    (void)c;   /* no thread of its own: the run's thread trained the rounds */
}

static void averaging_close(coordinator *c)
{
    averaging_state *av = averaging_of(c);
    if (!av)
        return;
    free(av->params);
    free(av->round_start);
    free(av->delta);
    for (int i = 0; i < c->nnodes; i++)
        free(c->nodes[i].rounds[0].model), free(c->nodes[i].rounds[1].model);
    late_close(&av->late);
    free(av->own_change);
    free(av->mean);
    free(av->center);
    free(av->combined);
    pthread_cond_destroy(&av->round_over);
    free(av);
    c->mode_state = NULL;
}

const coordinator_mode averaging_mode = {
    .name = "averaging", .open = averaging_open, .attach = averaging_attach,
    .on_message = averaging_on_message, .node_ready = averaging_node_ready,
    .reclaim = averaging_reclaim, .node_lost = averaging_node_lost,
    .train_epoch = averaging_epoch, .describe_node = averaging_describe_node,
    .extra_work = averaging_extra_work, .stop = averaging_stop, .close = averaging_close,
};
