/* The synchronous mode ([cluster] sync_every = 0): every training batch's chunks are dealt
 * between this machine and the nodes (sync_deal.c); a chunk dealt to a node is a runtime task on
 * the peer worker (engine/train/remote.h) that completes when its gradients and figures come back
 * (sync_slots.c); a node that goes away, or gives a chunk back, has its chunks computed by
 * another node or by the fallback engine here. The weights are those of one machine. */
#include "engine/cluster/sync_internal.h"

#include "engine/cluster/chunk_engine.h"
#include "netio/hub.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SIGNAL_TICK_S 0.2        /* how soon the fallback sees a signal while chunks are out */

/* ---- sending chunks: as nodes have room, queued chunks in order ---- */

int sync_takes_work(const peer_node *n) { return n->ready && !n->gone && !n->parked; }

slot *sync_first_in(coordinator *c, int state)
{
    sync_state *ss = sync_of(c);
    slot *best = NULL;
    for (int i = 0; i < ss->nslots; i++) {
        slot *s = &ss->slots[i];
        if (s->state == state &&
            (!best || s->a.seq < best->a.seq || (s->a.seq == best->a.seq && s->a.chunk < best->a.chunk)))
            best = s;
    }
    return best;
}

int sync_send_chunk(coordinator *c, peer_node *n, slot *s)
{
    sync_state *ss = sync_of(c);
    uint8_t head[PROTO_PARAMS_HEAD], work[32];
    s->alone = s->probe || sync_slot_has_gradients(c, s);   /* a sum with them would count them twice */
    msg_work w = {s->a.seq, (uint32_t)s->a.epoch, (uint32_t)s->a.batch, (uint32_t)s->a.chunk,
                  (uint32_t)s->a.size, (uint32_t)s->alone};
    size_t len = proto_work_encode(&w, work, sizeof work);
    if (n->params_seq != s->a.seq) {   /* no LAYER of the next batch between PARAMS and WORK */
        for (int i = 0; i < 8; i++)
            head[i] = (uint8_t)(s->a.seq >> (8 * i));
        pthread_mutex_lock(&ss->params_lock);
        int rc = coordinator_send_to(c, n, MSG_PARAMS, head, sizeof head, s->params, sizeof(float) * (size_t)c->nparams) ||
                 coordinator_send_to(c, n, MSG_WORK, work, len, NULL, 0);
        pthread_mutex_unlock(&ss->params_lock);
        if (rc)
            return -1;
        n->params_seq = s->a.seq, n->layers_seq = UINT64_MAX;
    } else if (coordinator_send_to(c, n, MSG_WORK, work, len, NULL, 0)) {
        return -1;
    }
    if (n->group_seq != s->a.seq)
        n->group_seq = s->a.seq, n->group = 0;
    n->group++, n->taken++, n->fed_at = c->batches;
    s->state = SLOT_SENT;
    s->node = (int)(n - c->nodes);
    s->ahead = n->inflight;
    s->sent_at = clock_now_s();
    s->due = s->sent_at + sync_deadline(c, n, s);
    if (!n->inflight++)
        n->active_s -= s->sent_at;   /* active while it has work: closed when it has none */
    pthread_cond_signal(&ss->fallback_wake);   /* it watches the deadline (and RECALLs pay when
                                                  the chunk waits there behind others) */
    return 0;
}

/* The probe waiting for its batch's parameters goes once they are packed: a copy of the first
 * chunk, which this machine computes as well (its claim is not taken), so that no batch waits
 * for it. */
void sync_send_probe(coordinator *c)
{
    sync_state *ss = sync_of(c);
    if (ss->probe_seq != ss->batch.seq || ss->packed_seq != ss->batch.seq ||
        ss->packed_layers < c->param_layers)
        return;
    peer_node *n = &c->nodes[ss->probe_node];
    ss->probe_seq = UINT64_MAX;
    remote_args a = {ss->batch.seq, ss->batch.epoch, 0, ss->batch.size, 0, -1, ss->batch.batch, NULL};
    slot *s = n->ready && !n->gone ? sync_slot_new(c, &a, ss->batch.packed, SLOT_QUEUED) : NULL;
    if (!s)
        return;
    s->probe = 1;
    if (sync_send_chunk(c, n, s))
        sync_slot_free(s);   /* the hub closes that node; this machine computes the chunk anyway */
    else
        n->probe = 0, n->probes++;
}

/* A node may take chunks (its quota of the batch, or as many as it has workers) unless the policy
 * parked it; a parked one takes any when every ready node is parked (chunks queued before it
 * was parked still need a home). */
static int may_take(const coordinator *c, const peer_node *n)
{
    if (!n->ready || n->gone || (n->inflight >= n->workers && n->taken >= n->quota))
        return 0;
    if (!n->parked)
        return 1;
    for (int i = 0; i < c->nnodes; i++)
        if (sync_takes_work(&c->nodes[i]))
            return 0;
    return 1;
}

/* Locked. Nodes with room take queued chunks, those owed some of their quota first, then the
 * most idle; with no node, the fallback. */
static void pump(coordinator *c)
{
    for (slot *s; (s = sync_first_in(c, SLOT_QUEUED));) {
        peer_node *best = NULL;
        for (int i = 0; i < c->nnodes; i++) {
            peer_node *n = &c->nodes[i];
            if (!may_take(c, n))
                continue;
            int owed = n->taken < n->quota, best_owed = best && best->taken < best->quota;
            if (!best || owed > best_owed ||
                (owed == best_owed && n->inflight * best->workers < best->inflight * n->workers))
                best = n;
        }
        if (!best) {
            if (!coordinator_ready_nodes(c))
                pthread_cond_signal(&sync_of(c)->fallback_wake);
            return;
        }
        if (sync_send_chunk(c, best, s))
            return;   /* the hub closes that node: its chunks come back then */
    }
}

static void complete(coordinator *c, rt_task **done, int n)
{
    for (int i = 0; i < n; i++)
        rt_task_complete(c->rt, done[i], 0, NULL);
}

/* ---- chunks computed elsewhere: the peer worker's tasks (remote.h) ---- */

/* The peer worker started a remote task (remote.h): the first of a chunk dealt elsewhere takes
 * a slot, the last puts it in the queue; a stolen chunk's has its slot already. */
static void task_started(remote_sink *sink, const remote_args *a, void *dst, const float *params,
                         rt_runtime *rt, rt_task *task)
{
    coordinator *c = ((sync_state *)sink)->c;
    rt_task *done[1];
    int n = 0;
    pthread_mutex_lock(&c->lock);
    slot *s = sync_slot_of(c, a->seq, a->chunk);
    if (!s && !a->claim)   /* slots outnumber the chunks of two batches: one is free */
        s = sync_slot_new(c, a, params, SLOT_STARTING);
    if (s)
        n = sync_slot_task(c, s, a->layer + 1, dst, task, done);
    if (s && s->state == SLOT_STARTING && ++s->started == s->expected) {
        s->state = SLOT_QUEUED;
        pump(c);
    }
    pthread_mutex_unlock(&c->lock);
    if (!s)
        rt_task_complete(rt, task, 1, "a remote chunk without a slot: its computation failed, or "
                                      "more chunks were in flight than slots");
    complete(c, done, n);
}

/* The peer worker packed a layer's parameters of batch seq (remote.h): they leave now for every
 * node that may take chunks, while the layers before theirs are still computing. They are
 * sealed outside the lock, so that gradients keep arriving meanwhile. A node holds the batch's
 * parameters once each of its layers went; until then it holds none that a chunk could use,
 * and a chunk sent to it carries a whole PARAMS. */
static void params_ready(remote_sink *sink, uint64_t seq, int layer, const float *values, long n)
{
    coordinator *c = ((sync_state *)sink)->c;
    sync_state *ss = sync_of(c);
    int to[MAX_NODES], peer[MAX_NODES], sent[MAX_NODES], m = 0;
    pthread_mutex_lock(&c->lock);
    if (ss->packed_seq != seq)
        ss->packed_seq = seq, ss->packed_layers = 0;
    ss->packed_layers++;
    for (int i = 0; i < c->nnodes; i++) {
        peer_node *x = &c->nodes[i];
        if (sync_takes_work(x)) {
            if (x->layers_seq != seq)
                x->layers_seq = seq, x->layers_sent = 0, x->params_seq = UINT64_MAX;
            coordinator_trace_message(c, x, "sent", MSG_LAYER);
            to[m] = i, peer[m++] = x->peer;
        }
    }
    pthread_mutex_unlock(&c->lock);
    uint8_t head[PROTO_LAYER_HEAD];
    size_t headlen = proto_layer_head(&(msg_layer){.seq = seq, .layer = (uint32_t)layer, .chunks = 1},
                                     head, sizeof head);
    pthread_mutex_lock(&ss->params_lock);
    for (int k = 0; k < m; k++)
        if ((sent[k] = !netio_hub_send(c->hub, peer[k], MSG_LAYER, head, headlen, values,
                                       sizeof(float) * (size_t)n)))
            coordinator_count_message(c, 0, MSG_LAYER, headlen + sizeof(float) * (size_t)n);
    pthread_mutex_unlock(&ss->params_lock);
    pthread_mutex_lock(&c->lock);
    for (int k = 0; k < m; k++) {   /* a PARAMS sent meanwhile started the count over */
        peer_node *x = &c->nodes[to[k]];
        if (x->peer == peer[k] && x->layers_seq == seq && (x->layers_sent += sent[k]) == c->param_layers) {
            x->params_seq = seq;
            sync_steal_for(c, x);
        }
    }
    sync_send_probe(c);   /* after the LAYERs: a node sent them all needs no PARAMS */
    pthread_mutex_unlock(&c->lock);
}

/* ---- the local fallback: chunks no node is left to compute, and those taken back ---- */

int sync_waits_behind(const coordinator *c, const slot *s)
{
    return s->state == SLOT_SENT && s->node >= 0 && !s->recalled && !s->probe &&
           s->ahead >= c->nodes[s->node].running;
}

/* Locked. While a chunk waits behind others, the fallback looks every tick whether a RECALL
 * pays. */
static int recall_possible(const coordinator *c)
{
    sync_state *ss = sync_of(c);
    for (int i = 0; i < ss->nslots; i++)
        if (sync_waits_behind(c, &ss->slots[i]))
            return 1;
    return 0;
}

double sync_fallback_cost(const coordinator *c, int workers)
{
    sync_state *ss = sync_of(c);
    double cpu = ss->fallback_cpu > 0 ? ss->fallback_cpu : ss->local_cost > 0 ? ss->local_cost : 1e-3;
    return cpu / (workers > 1 ? workers : 1);
}

/* Locked: unlocks while it sleeps, at most `seconds`. */
static void wait_a_tick(coordinator *c, double seconds)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    long ns = until.tv_nsec + (long)(seconds * 1e9);
    until.tv_sec += ns / 1000000000L, until.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(&sync_of(c)->fallback_wake, &c->lock, &until);
}

/* Locked: unlocks while it computes chunk s on its own engine (not open: err says why), with as
 * many workers as sleep here for want of tasks. */
static void compute_here(coordinator *c, chunk_engine *e, int open, slot *s, char *err, size_t errlen)
{
    sync_state *ss = sync_of(c);
    rt_task *done[SLOT_PARTS];
    int workers = open ? rt_set_active_workers(e->rt, rt_idle_workers(c->rt)) : 1;
    int taken_back = s->state == SLOT_BACK;
    s->state = SLOT_SENT, s->node = -1;
    msg_work w = {s->a.seq, (uint32_t)s->a.epoch, (uint32_t)s->a.batch, (uint32_t)s->a.chunk,
                  (uint32_t)s->a.size, 0};
    double start = clock_now_s();
    pthread_mutex_unlock(&c->lock);
    msg_result r;
    rt_stats work = {0};   /* the chunk's (chunk_engine_run counts from its start) */
    int ok = open && (e->seq == w.seq || !chunk_engine_params(e, w.seq, s->params, err, errlen)) &&
             !chunk_engine_run(e, &w, NULL, 1, err, errlen);
    if (ok) {
        chunk_engine_result(e, &w, &r);
        rt_stats_get(e->rt, &work);
    }
    pthread_mutex_lock(&c->lock);
    rt_stats_add_work(&ss->fallback_work, &work);
    int n = ok ? sync_slot_result(c, s, &r, r.grads, done) : sync_slot_fail(s, done);
    c->fallback_chunks++, c->taken_back += taken_back;
    ss->fallback_cpu = ok ? coordinator_running_mean(ss->fallback_cpu, workers * (clock_now_s() - start)) : ss->fallback_cpu;
    pthread_mutex_unlock(&c->lock);
    for (int i = 0; i < n; i++)
        rt_task_complete(c->rt, done[i], !ok, ok ? NULL : err);
    pthread_mutex_lock(&c->lock);
}

/* A thread with an engine of its own (as many workers as the runtime here, asleep but while it
 * computes): it computes the chunks given back for this machine or taken from a late node, and
 * the queued ones when no node is left. While a chunk waits on a node behind others, it ticks
 * (about once per chunk on one worker) to see whether a RECALL pays (on_tick); while chunks are
 * at nodes, it wakes for their deadlines, and often enough to see a signal (sync_deadline.c). */
static void *fallback_main(void *arg)
{
    coordinator *c = arg;
    job_config cfg = *c->cfg;
    cfg.workers = rt_workers(c->rt);
    chunk_engine e;
    char err[512] = "";
    int open = chunk_engine_open(&e, &cfg, c->train, NULL, err, sizeof err) == 0;
    pthread_mutex_lock(&c->lock);
    while (!c->stopping) {
        double due = sync_check_deadlines(c);
        slot *s = sync_first_in(c, SLOT_BACK);
        s = s ? s : coordinator_ready_nodes(c) ? NULL : sync_first_in(c, SLOT_QUEUED);
        if (s) {
            compute_here(c, &e, open, s, err, sizeof err);
        } else if (recall_possible(c)) {
            sync_on_tick(c);
            double tick = sync_fallback_cost(c, 1);
            wait_a_tick(c, tick < 1e-3 ? 1e-3 : tick > 0.05 ? 0.05 : tick);
        } else if (due < INFINITY) {
            wait_a_tick(c, due < SIGNAL_TICK_S ? due + 1e-3 : SIGNAL_TICK_S);
        } else {
            pthread_cond_wait(&sync_of(c)->fallback_wake, &c->lock);
        }
    }
    pthread_mutex_unlock(&c->lock);
    if (open || e.rt)
        chunk_engine_close(&e);
    return NULL;
}

/* Locked: the fallback engine's work. */
static int extra_work(coordinator *c, rt_stats *out)
{
    sync_state *ss = sync_of(c);
    *out = ss->fallback_work;
    ss->fallback_work = (rt_stats){0};
    return out->tasks > 0;
}

/* ---- messages from nodes (on the hub's thread) ---- */

/* The chunk of batch seq sent to node n, or NULL. */
static slot *sent_slot(coordinator *c, const peer_node *n, uint64_t seq, uint32_t chunk)
{
    sync_state *ss = sync_of(c);
    for (int i = 0; i < ss->nslots; i++)
        if (ss->slots[i].state == SLOT_SENT && ss->slots[i].node == (int)(n - c->nodes) &&
            ss->slots[i].a.seq == seq && ss->slots[i].a.chunk == (int)chunk)
            return &ss->slots[i];
    return NULL;
}

/* Whether any of node n's chunks [chunk, chunk + count) of batch seq was taken from it. */
static int any_abandoned(const peer_node *n, uint64_t seq, uint32_t chunk, uint32_t count)
{
    for (uint32_t i = 0; i < count && i < MAX_ABANDONED; i++)
        if (sync_was_abandoned(n, seq, chunk + i))
            return 1;
    return 0;
}

/* The last chunk of a batch of `size` samples. */
static int last_chunk(const coordinator *c, int size)
{
    const exec_plan *p = trainer_plan(c->t);
    int k = p->nchunks - 1, s0, s1;
    for (plan_chunk(p, k, size, &s0, &s1); s1 <= s0 && k > 0; plan_chunk(p, --k, size, &s0, &s1))
        ;
    return k;
}

/* Locked. Why node n may not send layer g->layer's gradient summed over chunks [g->chunk,
 * g->chunk + g->chunks), or NULL: it may when they were all sent to it and they are one chunk,
 * or the batch's last chunks (the only sum the fixed order allows a node, trainer_graph.c), none sent to
 * go alone and none whose gradient is here already. Their slots into out. */
static const char *summed_slots(coordinator *c, const peer_node *n, const msg_layer *g, slot **out)
{
    if (g->chunks > (uint32_t)(sync_of(c)->nslots / 2))   /* the slots hold two batches' and a probe */
        return "a gradient summed over more chunks than a batch has";
    for (uint32_t i = 0; i < g->chunks; i++) {
        slot *s = out[i] = sent_slot(c, n, g->seq, g->chunk + i);
        if (!s)
            return "a gradient for a chunk it was not sent";
        if (g->chunks > 1 && s->alone)
            return "a gradient summed over a chunk sent to go alone";
        if (g->chunks > 1 && s->came[1 + g->layer])
            return "a gradient summed over a chunk whose gradient came before";
    }
    if (g->chunks > 1 && out[g->chunks - 1]->a.chunk != last_chunk(c, out[0]->a.size))
        return "a gradient summed over chunks that do not end with the batch's last";
    return NULL;
}

/* A layer's gradient of a chunk, or of a batch's last chunks summed on the node: their tasks
 * complete now, so that the layer's sum and update need not wait for the rest of the chunks.
 * Of a sum, the first chunk's part holds it, the others' -0.0. */
static void on_grad(coordinator *c, peer_node *n, const uint8_t *p, size_t len)
{
    sync_state *ss = sync_of(c);
    msg_layer g;
    char why[200];
    if (proto_layer_decode(MSG_GRAD, &g, p, len, c->layer_params, c->nlayers, why, sizeof why))
        return coordinator_refuse(c, n, why);
    const char *not_allowed = summed_slots(c, n, &g, ss->summed);
    if (not_allowed && any_abandoned(n, g.seq, g.chunk, g.chunks))
        return;   /* too late: computed here */
    if (not_allowed)
        return coordinator_refuse(c, n, not_allowed);
    if ((not_allowed = sync_grad_check(c, &g, ss->summed[0]->a.size, why, sizeof why))) {
        char differ[300];
        snprintf(differ, sizeof differ, "node %s sent %s; its earlier gradients, within the "
                 "bound, were summed", n->name, not_allowed);
        coordinator_weights_differ(c, differ, "train without that machine");
        return coordinator_refuse(c, n, not_allowed);
    }
    rt_task **done = ss->summed_done;
    int ndone = 0;
    for (uint32_t i = 0; i < g.chunks; i++) {
        ss->summed[i]->summed |= i > 0;
        ndone += sync_slot_arrived(c, ss->summed[i], 1 + (int)g.layer, i ? NULL : g.values, done + ndone);
    }
    pthread_mutex_unlock(&c->lock);
    complete(c, done, ndone);
    pthread_mutex_lock(&c->lock);
}

static void on_result(coordinator *c, peer_node *n, const uint8_t *p, size_t len)
{
    msg_result r;
    char why[200];
    if (proto_result_decode(&r, p, len, (uint32_t)c->cfg->batch, why, sizeof why))
        return coordinator_refuse(c, n, why);
    slot *s = sent_slot(c, n, r.seq, r.chunk);
    if (!s && sync_was_abandoned(n, r.seq, r.chunk))
        return;   /* too late: computed here */
    if (!s)
        return coordinator_refuse(c, n, "a result for a chunk it was not sent");
    int s0, s1;
    plan_chunk(trainer_plan(c->t), s->a.chunk, s->a.size, &s0, &s1);
    if (r.samples != (uint32_t)(s1 - s0))
        return coordinator_refuse(c, n, "a result whose sample count is not its chunk's");
    for (int l = 0; l < c->nlayers; l++)
        if (c->layer_params[l] && !s->came[1 + l])
            return coordinator_refuse(c, n, "a result before the chunk's gradients");
    double rtt = clock_now_s() - s->sent_at;
    coordinator_trace_node(c, n, s->probe ? "probe (a chunk computed here too): sent, computed, returned"
                              : "chunk: sent, computed, returned", s->sent_at, s->sent_at + rtt);
    rt_task *done[SLOT_PARTS];
    n->chunks += !s->probe, n->summed += s->summed;
    n->samples += r.samples, n->compute_s += r.compute_s;
    n->wait_s += rtt > r.compute_s ? rtt - r.compute_s : 0;
    n->joules = r.joules, n->estimated = (int)r.estimated, n->carbon = r.carbon_g_per_kwh;
    n->renewable_w = r.renewable_w, n->grams = r.grams, n->grams_at = clock_now_s();
    n->late_in_row = 0;
    n->running = r.workers < (uint32_t)n->workers ? (int)r.workers : n->workers;
    n->cost = coordinator_running_mean(n->cost, r.compute_s);
    if (r.seq == n->group_seq) {   /* its chunks of the batch ran side by side on its workers */
        double lag = rtt - ceil((double)n->group / n->running) * r.compute_s;
        n->lag = coordinator_running_mean(n->lag, lag > 1e-6 ? lag : 1e-6);
    }
    if (r.watts > 0)
        n->watts = coordinator_running_mean(n->watts, r.watts);
    if (!--n->inflight)
        n->active_s += clock_now_s();
    if (s->recalled == 1)   /* it had started: the RECALLED saying so is still on its way */
        sync_recall_over(c, s, 2);
    int ndone = sync_slot_result(c, s, &r, NULL, done);
    pump(c);
    sync_steal_for(c, n);
    pthread_mutex_unlock(&c->lock);
    complete(c, done, ndone);
    pthread_mutex_lock(&c->lock);
}

/* Node v's answer to a RECALL: a chunk given back goes to the node it was recalled for (or,
 * gone or busy, to the queue), or to the fallback engine when recalled for this machine; one
 * that had started stays, and that node may try another. */
static void on_recalled(coordinator *c, peer_node *v, const uint8_t *p, size_t len)
{
    msg_recall r;
    char why[200];
    if (proto_recall_decode(MSG_RECALLED, &r, p, len, why, sizeof why))
        return coordinator_refuse(c, v, why);
    slot *s = sent_slot(c, v, r.seq, r.chunk);
    if (!s || s->recalled != 1) {
        if (r.given && !sync_was_abandoned(v, r.seq, r.chunk))
            coordinator_refuse(c, v, "a chunk given back unasked");
        return;   /* its RESULT came first */
    }
    peer_node *thief = s->thief >= 0 ? &c->nodes[s->thief] : NULL;
    int here = s->thief == THIEF_HERE;
    sync_recall_over(c, s, r.given ? 0 : 2);
    if (!r.given) {
        if (thief)
            sync_steal_for(c, thief);
        return;
    }
    v->given_back++;
    v->group -= s->a.seq == v->group_seq;   /* what its lag is measured against */
    if (!--v->inflight)
        v->active_s += clock_now_s();
    coordinator_trace_node(c, v, "chunk given back", s->sent_at, clock_now_s());
    s->state = here ? SLOT_BACK : SLOT_QUEUED, s->node = -1;
    if (here)
        pthread_cond_signal(&sync_of(c)->fallback_wake);
    else if (thief && sync_takes_work(thief) && !sync_send_chunk(c, thief, s))
        thief->stolen++, c->stolen_chunks++;
    pump(c);
}

/* ---- the mode (mode.h) ---- */

static int sync_open(coordinator *c, void **peer_ctx, char *err, size_t errlen)
{
    sync_state *ss = calloc(1, sizeof *ss);
    if (!ss) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    ss->sink.started = task_started;
    ss->sink.params = params_ready;
    ss->sink.ran_here = sync_grad_ran_here;
    ss->c = c;
    pthread_mutex_init(&ss->params_lock, NULL);
    pthread_condattr_t monotonic;   /* the fallback's ticks: not moved by the wall clock */
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
    pthread_cond_init(&ss->fallback_wake, &monotonic);
    pthread_condattr_destroy(&monotonic);
    c->mode_state = ss;
    *peer_ctx = &ss->sink;
    return 0;
}

/* Two batches' slots and a probe's; the fallback engine's thread; the trainer asks each batch's
 * deal (sync_remote_chunks). */
static int sync_attach(coordinator *c, char *err, size_t errlen)
{
    sync_state *ss = sync_of(c);
    size_t nchunks = (size_t)trainer_plan(c->t)->nchunks;
    ss->nslots = 2 * (int)nchunks + 1;
    ss->probe_seq = ss->packed_seq = UINT64_MAX;
    if (!(ss->slots = calloc((size_t)ss->nslots, sizeof *ss->slots)) ||
        !(ss->summed = calloc(nchunks, sizeof *ss->summed)) ||
        !(ss->summed_done = calloc(nchunks, sizeof *ss->summed_done))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (pthread_create(&ss->fallback, NULL, fallback_main, c)) {
        snprintf(err, errlen, "cannot start a thread: %s", strerror(errno));
        return -1;
    }
    ss->fallback_started = 1;
    return trainer_share_work(c->t, &(trainer_remote){c, sync_remote_chunks}, err, errlen);
}

static int sync_on_message(coordinator *c, peer_node *n, const netio_event *e)
{
    switch (e->type) {
    case MSG_GRAD: on_grad(c, n, e->payload, e->len); return 0;
    case MSG_RESULT: on_result(c, n, e->payload, e->len); return 0;
    case MSG_RECALLED: on_recalled(c, n, e->payload, e->len); return 0;
    }
    return -1;
}

/* A node ready, or lost: the queued chunks go to the nodes there are now. */
static void sync_nodes_changed(coordinator *c, peer_node *n)
{
    (void)n;
    pump(c);
}

/* What the node was computing goes back to the queue, for the others (or the fallback). */
static int sync_reclaim(coordinator *c, peer_node *n)
{
    sync_state *ss = sync_of(c);
    int back = 0, me = (int)(n - c->nodes);
    for (int i = 0; i < ss->nslots; i++) {
        slot *s = &ss->slots[i];
        if (s->state == SLOT_SENT && s->node == me && s->probe) {
            sync_slot_free(s);   /* computed here anyway */
        } else if (s->state == SLOT_SENT && s->node == me) {
            s->state = SLOT_QUEUED, back++;
            if (s->recalled == 1)
                sync_recall_over(c, s, 0);
        }
        if (s->state == SLOT_SENT && s->recalled == 1 && s->thief == me)
            s->thief = -1;
    }
    return back;
}

static int sync_train_epoch(coordinator *c, int epoch, long first_batch, pass_result *out,
                            char *err, size_t errlen)
{
    return trainer_train(c->t, epoch, first_batch, out, err, errlen);
}

static void sync_print_here(coordinator *c, FILE *f)
{
    fprintf(f, "  here: %ld chunks (%ld taken back from nodes, %ld computed for lost nodes)\n",
            c->local_chunks + c->fallback_chunks, c->taken_back, c->fallback_chunks - c->taken_back);
}

/* How its chunks came to it. */
static void sync_describe_node(const coordinator *c, const peer_node *n, char *out, size_t len)
{
    (void)c;
    snprintf(out, len, " (%ld stolen, %ld given back, %ld summed there; dealt some in %ld of %ld "
             "batches; %ld probes)", n->stolen, n->given_back, n->summed, n->batches_dealt,
             n->batches_present, n->probes);
}

static void sync_stop(coordinator *c)
{
    sync_state *ss = sync_of(c);
    if (!ss)
        return;
    pthread_mutex_lock(&c->lock);
    pthread_cond_broadcast(&ss->fallback_wake);
    pthread_mutex_unlock(&c->lock);
    if (ss->fallback_started)
        pthread_join(ss->fallback, NULL);
}

static void sync_close(coordinator *c)
{
    sync_state *ss = sync_of(c);
    if (!ss)
        return;
    for (int i = 0; ss->slots && i < ss->nslots; i++)   /* stopped with stolen chunks under way */
        free(ss->slots[i].held);
    free(ss->slots);
    free(ss->summed);
    free(ss->summed_done);
    pthread_cond_destroy(&ss->fallback_wake);
    pthread_mutex_destroy(&ss->params_lock);
    free(ss);
    c->mode_state = NULL;
}

const coordinator_mode sync_mode = {
    .name = "synchronous", .open = sync_open, .attach = sync_attach,
    .on_message = sync_on_message, .node_ready = sync_nodes_changed, .reclaim = sync_reclaim,
    .node_lost = sync_nodes_changed, .train_epoch = sync_train_epoch, .print_here = sync_print_here,
    .describe_node = sync_describe_node, .extra_work = extra_work, .stop = sync_stop,
    .close = sync_close,
};
