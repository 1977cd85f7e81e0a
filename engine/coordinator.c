#include "engine/coordinator_internal.h"

#include "energy/carbon.h"
#include "energy/meter.h"
#include "engine/chunk_engine.h"
#include "engine/cluster_proto.h"
#include "engine/cluster_share.h"
#include "engine/layer.h"
#include "engine/model_delta.h"
#include "engine/remote.h"
#include "common/json.h"
#include "netio/hub.h"
#include "ops/cpu.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double running(double avg, double x)
{
    return avg > 0 ? (1 - COST_WEIGHT) * avg + COST_WEIGHT * x : x;
}

int ready_nodes(const coordinator *c)
{
    int n = 0;
    for (int i = 0; i < c->nnodes; i++)
        n += c->nodes[i].ready && !c->nodes[i].gone;
    return n;
}

/* ---- sending chunks: as nodes have room, queued chunks in order ---- */

/* The node's track in the trace, made on first use; -1 without a trace (or before attach). */
static int node_track(coordinator *c, node *n)
{
    if (!c->rt || n->track < 0)
        return -1;
    if (!n->track) {
        char name[160];
        snprintf(name, sizeof name, "node %.60s (%.60s)", n->addr, n->host[0] ? n->host : "joining");
        int id = rt_trace_track(c->rt, name);
        n->track = id < 0 ? -1 : id + 1;
    }
    return n->track - 1;
}

void trace_node(coordinator *c, node *n, const char *what, double start, double end)
{
    int track = node_track(c, n);
    if (track >= 0)
        rt_trace_span(c->rt, track, what, start, end);
}

/* A message to or from a node as an instant on its track (nothing to format without a trace). */
static void trace_message(coordinator *c, node *n, const char *dir, unsigned type)
{
    if (node_track(c, n) < 0)
        return;
    char what[32];
    snprintf(what, sizeof what, "%s %s", dir, proto_msg_name(type));
    double t = now_s();
    trace_node(c, n, what, t, t);
}

int send_to(coordinator *c, node *n, uint16_t type, const void *head, size_t headlen,
            const void *body, size_t bodylen)
{
    trace_message(c, n, "sent", type);
    return netio_hub_send(c->hub, n->peer, type, head, headlen, body, bodylen);
}

static void steal_for(coordinator *c, node *n);
static void on_tick(coordinator *c);
/* A RECALL of chunk s answered, or moot: outcome 0 (given back, or its node lost), 2 (refused). */
static void recall_over(coordinator *c, slot *s, int outcome);

/* A node the policy keeps: it is sent each batch's parameters and may be dealt chunks. */
static int takes_work(const node *n) { return n->ready && !n->gone && !n->parked; }

/* The slot in that state that comes first in the fixed order, or NULL. */
static slot *first_in(coordinator *c, int state)
{
    slot *best = NULL;
    for (int i = 0; i < c->nslots; i++) {
        slot *s = &c->slots[i];
        if (s->state == state &&
            (!best || s->a.seq < best->a.seq || (s->a.seq == best->a.seq && s->a.chunk < best->a.chunk)))
            best = s;
    }
    return best;
}

static int send_chunk(coordinator *c, node *n, slot *s)
{
    uint8_t head[PROTO_PARAMS_HEAD], work[32];
    msg_work w = {s->a.seq, (uint32_t)s->a.epoch, (uint32_t)s->a.batch, (uint32_t)s->a.chunk,
                  (uint32_t)s->a.size};
    size_t len = proto_work_encode(&w, work, sizeof work);
    if (n->params_seq != s->a.seq) {   /* no LAYER of the next batch between PARAMS and WORK */
        for (int i = 0; i < 8; i++)
            head[i] = (uint8_t)(s->a.seq >> (8 * i));
        pthread_mutex_lock(&c->params_lock);
        int rc = send_to(c, n, MSG_PARAMS, head, sizeof head, s->params, sizeof(float) * (size_t)c->nparams) ||
                 send_to(c, n, MSG_WORK, work, len, NULL, 0);
        pthread_mutex_unlock(&c->params_lock);
        if (rc)
            return -1;
        n->params_seq = s->a.seq, n->layers_seq = UINT64_MAX;
    } else if (send_to(c, n, MSG_WORK, work, len, NULL, 0)) {
        return -1;
    }
    if (n->group_seq != s->a.seq)
        n->group_seq = s->a.seq, n->group = 0;
    n->group++, n->taken++, n->fed_at = c->batches;
    s->state = SLOT_SENT;
    s->node = (int)(n - c->nodes);
    s->ahead = n->inflight;
    s->sent_at = now_s();
    if (!n->inflight++)
        n->active_s -= s->sent_at;   /* active while it has work: closed when it has none */
    if (s->ahead >= n->running)      /* it waits there behind others: the fallback's ticks start */
        pthread_cond_signal(&c->fallback_wake);
    return 0;
}

/* A node may take chunks (its quota of the batch, or as many as it has workers) unless the policy
 * parked it; a parked one takes a probe chunk, or any when every ready node is parked (chunks
 * queued before it was parked still need a home). */
static int may_take(const coordinator *c, const node *n)
{
    if (!n->ready || n->gone || (n->inflight >= n->workers && n->taken >= n->quota))
        return 0;
    if (!n->parked || n->probe)
        return 1;
    for (int i = 0; i < c->nnodes; i++)
        if (takes_work(&c->nodes[i]))
            return 0;
    return 1;
}

/* Locked. Nodes with room take queued chunks, those owed some of their quota first, then the
 * most idle; with no node, the fallback. */
static void pump(coordinator *c)
{
    for (slot *s; (s = first_in(c, SLOT_QUEUED));) {
        node *best = NULL;
        for (int i = 0; i < c->nnodes; i++) {
            node *n = &c->nodes[i];
            if (!may_take(c, n))
                continue;
            int owed = n->taken < n->quota, best_owed = best && best->taken < best->quota;
            if (!best || owed > best_owed ||
                (owed == best_owed && n->inflight * best->workers < best->inflight * n->workers))
                best = n;
        }
        if (!best) {
            if (!ready_nodes(c))
                pthread_cond_signal(&c->fallback_wake);
            return;
        }
        if (send_chunk(c, best, s))
            return;   /* the hub closes that node: its chunks come back then */
        best->probe = 0;
    }
}

static void complete(coordinator *c, rt_task **done, int n)
{
    for (int i = 0; i < n; i++)
        rt_task_complete(c->rt, done[i], 0, NULL);
}

/* The peer worker started a remote task (remote.h): the first of a chunk dealt elsewhere takes
 * a slot, the last puts it in the queue; a stolen chunk's has its slot already. */
static void task_started(remote_sink *sink, const remote_args *a, void *dst, const float *params,
                         rt_runtime *rt, rt_task *task)
{
    coordinator *c = (coordinator *)sink;
    rt_task *done[1];
    int n = 0;
    pthread_mutex_lock(&c->lock);
    slot *s = slot_of(c, a->seq, a->chunk);
    if (!s && !a->claim)   /* slots outnumber the chunks of two batches: one is free */
        s = slot_new(c, a, params, SLOT_STARTING);
    if (s)
        n = slot_task(c, s, a->layer + 1, dst, task, done);
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
    coordinator *c = (coordinator *)sink;
    int to[MAX_NODES], peer[MAX_NODES], sent[MAX_NODES], m = 0;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->nnodes; i++) {
        node *x = &c->nodes[i];
        if (takes_work(x)) {
            if (x->layers_seq != seq)
                x->layers_seq = seq, x->layers_sent = 0, x->params_seq = UINT64_MAX;
            trace_message(c, x, "sent", MSG_LAYER);
            to[m] = i, peer[m++] = x->peer;
        }
    }
    pthread_mutex_unlock(&c->lock);
    uint8_t head[PROTO_LAYER_HEAD];
    size_t headlen = proto_layer_head(&(msg_layer){seq, 0, (uint32_t)layer, NULL, 0}, head, sizeof head);
    pthread_mutex_lock(&c->params_lock);
    for (int k = 0; k < m; k++)
        sent[k] = !netio_hub_send(c->hub, peer[k], MSG_LAYER, head, headlen, values,
                                  sizeof(float) * (size_t)n);
    pthread_mutex_unlock(&c->params_lock);
    pthread_mutex_lock(&c->lock);
    for (int k = 0; k < m; k++) {   /* a PARAMS sent meanwhile started the count over */
        node *x = &c->nodes[to[k]];
        if (x->peer == peer[k] && x->layers_seq == seq && (x->layers_sent += sent[k]) == c->param_layers) {
            x->params_seq = seq;
            steal_for(c, x);
        }
    }
    pthread_mutex_unlock(&c->lock);
}

/* ---- the local fallback: chunks no node is left to compute, and those taken back ---- */

/* Locked. Chunk s waits on a node behind at least one per worker there, and was not asked back
 * yet: a RECALL may take it elsewhere. */
static int waits_behind(const coordinator *c, const slot *s)
{
    return s->state == SLOT_SENT && s->node >= 0 && !s->recalled &&
           s->ahead >= c->nodes[s->node].running;
}

/* Locked. While a chunk waits behind others, the fallback looks every tick whether a RECALL
 * pays. */
static int recall_possible(const coordinator *c)
{
    for (int i = 0; i < c->nslots; i++)
        if (waits_behind(c, &c->slots[i]))
            return 1;
    return 0;
}

/* The fallback engine's seconds per chunk on that many workers: its CPU seconds per chunk (a
 * worker's here until measured) spread over them. */
static double fallback_cost(const coordinator *c, int workers)
{
    double cpu = c->fallback_cpu > 0 ? c->fallback_cpu : c->local_cost > 0 ? c->local_cost : 1e-3;
    return cpu / (workers > 1 ? workers : 1);
}

/* Locked: unlocks while it sleeps, at most `seconds`. */
static void wait_a_tick(coordinator *c, double seconds)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    long ns = until.tv_nsec + (long)(seconds * 1e9);
    until.tv_sec += ns / 1000000000L, until.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(&c->fallback_wake, &c->lock, &until);
}

/* Locked: unlocks while it computes chunk s on its own engine (not open: err says why), with as
 * many workers as sleep here for want of tasks. */
static void compute_here(coordinator *c, chunk_engine *e, int open, slot *s, char *err, size_t errlen)
{
    rt_task *done[SLOT_PARTS];
    int workers = open ? rt_set_active_workers(e->rt, rt_idle_workers(c->rt)) : 1;
    int taken_back = s->state == SLOT_BACK;
    s->state = SLOT_SENT, s->node = -1;
    msg_work w = {s->a.seq, (uint32_t)s->a.epoch, (uint32_t)s->a.batch, (uint32_t)s->a.chunk,
                  (uint32_t)s->a.size};
    double start = now_s();
    pthread_mutex_unlock(&c->lock);
    msg_result r;
    int ok = open && (e->seq == w.seq || !chunk_engine_params(e, w.seq, s->params, err, errlen)) &&
             !chunk_engine_run(e, &w, NULL, 1, err, errlen);
    if (ok)
        chunk_engine_result(e, &w, &r);
    pthread_mutex_lock(&c->lock);
    int n = ok ? slot_result(c, s, &r, r.grads, done) : slot_fail(s, done);
    c->fallback_chunks++, c->taken_back += taken_back;
    c->fallback_cpu = ok ? running(c->fallback_cpu, workers * (now_s() - start)) : c->fallback_cpu;
    pthread_mutex_unlock(&c->lock);
    for (int i = 0; i < n; i++)
        rt_task_complete(c->rt, done[i], !ok, ok ? NULL : err);
    pthread_mutex_lock(&c->lock);
}

/* A thread with an engine of its own (as many workers as the runtime here, asleep but while it
 * computes): it computes the chunks given back for this machine, and the queued ones when no
 * node is left. While a chunk waits on a node behind others, it ticks (about once per chunk on
 * one worker) to see whether a RECALL pays (on_tick). */
static void *fallback_main(void *arg)
{
    coordinator *c = arg;
    job_config cfg = *c->cfg;
    cfg.workers = rt_workers(c->rt);
    chunk_engine e;
    char err[512] = "";
    int open = chunk_engine_open(&e, &cfg, c->train, err, sizeof err) == 0;
    pthread_mutex_lock(&c->lock);
    while (!c->stopping) {
        slot *s = first_in(c, SLOT_BACK);
        s = s ? s : ready_nodes(c) ? NULL : first_in(c, SLOT_QUEUED);
        if (s) {
            compute_here(c, &e, open, s, err, sizeof err);
        } else if (recall_possible(c)) {
            on_tick(c);
            double tick = fallback_cost(c, 1);
            wait_a_tick(c, tick < 1e-3 ? 1e-3 : tick > 0.05 ? 0.05 : tick);
        } else {
            pthread_cond_wait(&c->fallback_wake, &c->lock);
        }
    }
    pthread_mutex_unlock(&c->lock);
    if (open || e.rt)
        chunk_engine_close(&e);
    return NULL;
}

/* ---- messages from nodes (on the hub's thread) ---- */

static node *node_of(coordinator *c, int peer)
{
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i].peer == peer && !c->nodes[i].gone)
            return &c->nodes[i];
    return NULL;
}

void refuse(coordinator *c, node *n, const char *why)
{
    fprintf(c->log, "cluster: node %s refused: %s\n", n->addr, why);
    netio_hub_close(c->hub, n->peer, why);
}

static void on_join(coordinator *c, node *n, const uint8_t *p, size_t len)
{
    msg_join j;
    char why[200];
    if (n->workers || proto_join_decode(&j, p, len, why, sizeof why))
        return refuse(c, n, n->workers ? "a second JOIN" : why);
    if (c->cfg->deterministic && j.isa < (uint32_t)ops_isa_active())
        return refuse(c, n, "it cannot run this run's kernel path (deterministic = on)");
    n->workers = n->running = (int)j.workers, n->isa = j.isa;
    snprintf(n->host, sizeof n->host, "%s", j.host);
    snprintf(n->energy, sizeof n->energy, "%s", j.energy);
    if (!c->cfg->deterministic && j.isa != (uint32_t)ops_isa_active())
        fprintf(c->log, "cluster: node %s (%s) computes with %s kernels, this machine with %s: "
                "they round differently, so the weights will not be bit-identical to a run on "
                "one machine ([execution] deterministic = on makes every node use %s)\n",
                n->addr, n->host, ops_isa_name((ops_isa)j.isa), ops_isa_name(ops_isa_active()),
                ops_isa_name(ops_isa_active()));
    size_t cap = 64 + c->job.text_len + PROTO_MAX_FILES * 600;
    uint8_t *buf = malloc(cap);
    msg_job job = c->job;
    job.isa = c->cfg->deterministic ? (uint32_t)ops_isa_active() : PROTO_ANY_ISA;
    if (!buf || send_to(c, n, MSG_JOB, buf, proto_job_encode(&job, buf, cap), NULL, 0))
        refuse(c, n, "cannot send it the job");
    free(buf);
}

static void on_fetch(coordinator *c, node *n, const uint8_t *p, size_t len)
{
    msg_fetch f;
    char why[200];
    if (proto_fetch_decode(&f, p, len, why, sizeof why))
        return refuse(c, n, why);
    for (uint32_t i = 0; i < c->job.nfiles; i++) {
        const proto_file *pf = &c->job.files[i];
        if (memcmp(pf->hash, f.hash, 32) || f.offset >= pf->size)
            continue;
        size_t want = pf->size - f.offset < PROTO_FILE_PIECE ? (size_t)(pf->size - f.offset)
                                                             : PROTO_FILE_PIECE;
        uint8_t *bytes = malloc(want), head[48];
        int fd = open(c->paths[i], O_RDONLY);
        int ok = bytes && fd >= 0 && pread(fd, bytes, want, (off_t)f.offset) == (ssize_t)want;
        if (fd >= 0)
            close(fd);
        msg_file m = {.offset = f.offset, .total = pf->size};
        memcpy(m.hash, pf->hash, 32);
        if (!ok || send_to(c, n, MSG_FILE, head, proto_file_head(&m, head, sizeof head),
                                  bytes, want))
            refuse(c, n, "cannot send it a training file");
        free(bytes);
        return;
    }
    refuse(c, n, "it asked for a file this run does not share");
}

/* The chunk of batch seq sent to node n, or NULL. */
static slot *sent_slot(coordinator *c, const node *n, uint64_t seq, uint32_t chunk)
{
    for (int i = 0; i < c->nslots; i++)
        if (c->slots[i].state == SLOT_SENT && c->slots[i].node == (int)(n - c->nodes) &&
            c->slots[i].a.seq == seq && c->slots[i].a.chunk == (int)chunk)
            return &c->slots[i];
    return NULL;
}

/* A layer's gradient of a chunk: its task completes now, so that layer's sum and update need
 * not wait for the rest of the chunk. */
static void on_grad(coordinator *c, node *n, const uint8_t *p, size_t len)
{
    msg_layer g;
    char why[200];
    if (proto_layer_decode(MSG_GRAD, &g, p, len, c->layer_params, c->nlayers, why, sizeof why))
        return refuse(c, n, why);
    slot *s = sent_slot(c, n, g.seq, g.chunk);
    if (!s)
        return refuse(c, n, "a gradient for a chunk it was not sent");
    rt_task *done[1];
    int ndone = slot_arrived(c, s, 1 + (int)g.layer, g.values, done);
    pthread_mutex_unlock(&c->lock);
    complete(c, done, ndone);
    pthread_mutex_lock(&c->lock);
}

static void on_result(coordinator *c, node *n, const uint8_t *p, size_t len)
{
    msg_result r;
    char why[200];
    if (proto_result_decode(&r, p, len, why, sizeof why))
        return refuse(c, n, why);
    slot *s = sent_slot(c, n, r.seq, r.chunk);
    if (!s)
        return refuse(c, n, "a result for a chunk it was not sent");
    for (int l = 0; l < c->nlayers; l++)
        if (c->layer_params[l] && !s->came[1 + l])
            return refuse(c, n, "a result before the chunk's gradients");
    double rtt = now_s() - s->sent_at;
    trace_node(c, n, "chunk: sent, computed, returned", s->sent_at, s->sent_at + rtt);
    rt_task *done[SLOT_PARTS];
    n->chunks++, n->samples += r.samples, n->compute_s += r.compute_s;
    n->wait_s += rtt > r.compute_s ? rtt - r.compute_s : 0;
    n->joules = r.joules, n->estimated = (int)r.estimated, n->carbon = r.carbon_g_per_kwh;
    n->running = r.workers < (uint32_t)n->workers ? (int)r.workers : n->workers;
    n->cost = running(n->cost, r.compute_s);
    if (r.seq == n->group_seq) {   /* its chunks of the batch ran side by side on its workers */
        double lag = rtt - ceil((double)n->group / n->running) * r.compute_s;
        n->lag = running(n->lag, lag > 1e-6 ? lag : 1e-6);
    }
    if (r.watts > 0)
        n->watts = running(n->watts, r.watts);
    if (!--n->inflight)
        n->active_s += now_s();
    if (s->recalled == 1)   /* it had started: the RECALLED saying so is still on its way */
        recall_over(c, s, 2);
    int ndone = slot_result(c, s, &r, NULL, done);
    pump(c);
    steal_for(c, n);
    pthread_mutex_unlock(&c->lock);
    complete(c, done, ndone);
    pthread_mutex_lock(&c->lock);
}

/* Node v's answer to a RECALL: a chunk given back goes to the node it was recalled for (or,
 * gone or busy, to the queue), or to the fallback engine when recalled for this machine; one
 * that had started stays, and that node may try another. */
static void on_recalled(coordinator *c, node *v, const uint8_t *p, size_t len)
{
    msg_recall r;
    char why[200];
    if (proto_recall_decode(MSG_RECALLED, &r, p, len, why, sizeof why))
        return refuse(c, v, why);
    slot *s = sent_slot(c, v, r.seq, r.chunk);
    if (!s || s->recalled != 1) {
        if (r.given)
            refuse(c, v, "a chunk given back unasked");
        return;   /* its RESULT came first */
    }
    node *thief = s->thief >= 0 ? &c->nodes[s->thief] : NULL;
    int here = s->thief == THIEF_HERE;
    recall_over(c, s, r.given ? 0 : 2);
    if (!r.given) {
        if (thief)
            steal_for(c, thief);
        return;
    }
    v->given_back++;
    v->group -= s->a.seq == v->group_seq;   /* what its lag is measured against */
    if (!--v->inflight)
        v->active_s += now_s();
    trace_node(c, v, "chunk given back", s->sent_at, now_s());
    s->state = here ? SLOT_BACK : SLOT_QUEUED, s->node = -1;
    if (here)
        pthread_cond_signal(&c->fallback_wake);
    else if (thief && takes_work(thief) && !send_chunk(c, thief, s))
        thief->stolen++, c->stolen_chunks++;
    pump(c);
}

/* A node is gone: what it was computing goes to the others (or the fallback). */
static void node_lost(coordinator *c, node *n, const char *why)
{
    int back = 0, me = (int)(n - c->nodes);
    for (int i = 0; i < c->nslots; i++) {
        slot *s = &c->slots[i];
        if (s->state == SLOT_SENT && s->node == me) {
            s->state = SLOT_QUEUED, back++;
            if (s->recalled == 1)
                recall_over(c, s, 0);
        }
        if (s->state == SLOT_SENT && s->recalled == 1 && s->thief == me)
            s->thief = -1;
    }
    if (n->inflight)
        n->active_s += now_s();
    n->gone = 1, n->inflight = 0;
    netio_hub_peer_stats(c->hub, n->peer, &n->net);
    snprintf(n->left_why, sizeof n->left_why, "%s", why);
    c->lost_nodes += n->ready;
    c->resent_chunks += back;
    fprintf(c->log, "cluster: node %s (%s) lost: %s%s\n", n->addr, n->host[0] ? n->host : "?",
            why, back ? "; its unfinished chunks are computed elsewhere" : "");
    averaging_node_lost(c, n);
    pump(c);
}

static void on_event(void *ctx, const netio_event *e)
{
    coordinator *c = ctx;
    pthread_mutex_lock(&c->lock);
    node *n = node_of(c, e->peer);
    switch (e->kind) {
    case NETIO_REFUSED:
        fprintf(c->log, "cluster: connection from %s refused: %s\n", e->addr, e->why);
        break;
    case NETIO_UP:
        if (c->nnodes == MAX_NODES || c->stopping) {
            netio_hub_close(c->hub, e->peer, c->stopping ? "training is over" : "too many nodes");
            break;
        }
        n = &c->nodes[c->nnodes++];
        memset(n, 0, sizeof *n);
        n->peer = e->peer, n->params_seq = n->layers_seq = UINT64_MAX, n->joined_at = now_s() - c->start;
        snprintf(n->addr, sizeof n->addr, "%s", e->addr);
        break;
    case NETIO_DOWN:
        if (n)
            node_lost(c, n, e->why);
        break;
    case NETIO_MESSAGE:
        if (!n)
            break;
        trace_message(c, n, "received", e->type);
        if (e->type == MSG_JOIN)
            on_join(c, n, e->payload, e->len);
        else if (e->type == MSG_FETCH)
            on_fetch(c, n, e->payload, e->len);
        else if (e->type == MSG_READY) {
            long np;
            char why[200];
            if (proto_ready_decode(&np, e->payload, e->len, why, sizeof why) || np != c->nparams)
                refuse(c, n, np != c->nparams ? "its model has other parameters" : why);
            else if (!n->ready) {
                n->ready = 1;
                fprintf(c->log, "cluster: node %s (%s, %d workers, %s) joined\n", n->addr,
                        n->host, n->workers, n->energy);
                pthread_cond_broadcast(&c->joined);
                pump(c);
            }
        } else if (e->type == MSG_GRAD && n->ready && !c->cfg->sync_every)
            on_grad(c, n, e->payload, e->len);
        else if (e->type == MSG_RESULT && n->ready && !c->cfg->sync_every)
            on_result(c, n, e->payload, e->len);
        else if (e->type == MSG_RECALLED && n->ready && !c->cfg->sync_every)
            on_recalled(c, n, e->payload, e->len);
        else if (e->type == MSG_MODEL && n->ready && c->cfg->sync_every)
            averaging_on_model(c, n, e->payload, e->len);
        else
            refuse(c, n, "a message out of turn");
        break;
    }
    fflush(c->log);
    pthread_mutex_unlock(&c->lock);
}

/* ---- which nodes take work, and how many chunks go to them ---- */

/* This machine's CPU seconds per chunk (from the runtime's busy time) and its power (from its
 * meter, over at least POWER_WINDOW_S). */
static void measure_here(coordinator *c)
{
    rt_stats st;
    rt_stats_get(c->rt, &st);
    if (c->last_local > 0 && st.busy_s > c->last_busy)
        c->local_cost = running(c->local_cost, (st.busy_s - c->last_busy) / (double)c->last_local);
    c->last_busy = st.busy_s;
    double now = now_s();   /* the meter reads every sensor: not on every batch */
    if (!c->meter || now - c->last_power_at < POWER_WINDOW_S)
        return;
    c->last_power_at = now;
    energy_reading r;
    energy_meter_read(c->meter, &r);
    if (c->last_power.t > 0)
        c->local_w = running(c->local_w, (r.total_j - c->last_power.total_j) / (r.t - c->last_power.t));
    c->last_power = r;
    char why[600];   /* a failing file is said by the run's energy report (energy_run.c) */
    carbon_update(&c->carbon, r.t, r.total_j, why, sizeof why);
    c->limits.carbon_g_per_kwh = c->carbon.value;
}

static double img_per_s(double workers, double cost, double per_chunk)
{
    return cost > 0 ? workers / cost * per_chunk : 0;
}

/* Locked. The policy's choice of nodes (cluster_share.h), said when it changes. */
static void choose_nodes(coordinator *c, double per_chunk)
{
    member_figures m[MAX_NODES + 1];
    int index[MAX_NODES + 1], in[MAX_NODES + 1], n = 1;
    c->local_img_s = img_per_s(rt_active_workers(c->rt), c->local_cost, per_chunk);
    m[0] = (member_figures){c->local_img_s, c->local_w, c->carbon.value};
    for (int i = 0; i < c->nnodes; i++) {
        node *x = &c->nodes[i];
        if (x->ready && !x->gone)
            index[n] = i, m[n++] = (member_figures){img_per_s(x->running, x->cost, per_chunk),
                                                    x->watts, x->carbon};
    }
    cluster_choose(&c->limits, m, n, in);
    char taking[160] = "", parked[160] = "";
    int changed = 0, ntaking = 0;
    for (int k = 1; k < n; k++) {
        node *x = &c->nodes[index[k]];
        changed |= x->parked != !in[k];
        x->parked = !in[k];
        ntaking += in[k];
        char *list = in[k] ? taking : parked;
        size_t len = strlen(list);
        snprintf(list + len, 160 - len, "%s%s %.3g J/img", len ? ", " : "", x->addr,
                 m[k].img_per_s > 0 ? m[k].watts / m[k].img_per_s : 0);
        if (x->parked && c->batches - x->probed_at >= PROBE_EVERY)
            x->probe = 1, x->probed_at = c->batches;
    }
    if (!changed)
        return;
    share_decision *d = &c->decisions[c->ndecisions < MAX_SHARE_DECISIONS ? c->ndecisions++
                                                                           : MAX_SHARE_DECISIONS - 1];
    d->t = now_s() - c->start, d->taking = ntaking;
    snprintf(d->why, sizeof d->why, "%s policy: here %.3g J/img; nodes taking work: %s; parked: %s",
             policy_name(c->limits.policy), m[0].img_per_s > 0 ? m[0].watts / m[0].img_per_s : 0,
             taking[0] ? taking : "none", parked[0] ? parked : "none");
    c->decisions_total++;
    fprintf(c->log, "placement: %s\n", d->why);
}

/* Locked. This machine's CPU seconds per chunk: measured over past batches; before that, the
 * busy seconds of this batch so far over the chunks started here (it grows as they run), so
 * that a machine slower than its nodes is seen as such in its first batch; 1 ms before any. */
static double here_cost(const coordinator *c)
{
    if (c->local_cost > 0)
        return c->local_cost;
    int started = 0;
    for (int i = 0; c->claims && i < c->here_chunks; i++)
        started += atomic_load(&c->claims[i]) == RT_CLAIM_HERE;
    rt_stats st;
    rt_stats_get(c->rt, &st);
    double busy = st.busy_s - c->last_busy;
    return started > 0 && busy > started * 1e-3 ? busy / started : 1e-3;
}

/* Seconds until this machine would finish its `chunks`-th chunk from now: rounds on its
 * workers at its CPU seconds per chunk. */
static double here_finishes(const coordinator *c, int chunks)
{
    return ceil((double)chunks / rt_active_workers(c->rt)) * here_cost(c);
}

/* The same for node n: rounds on its workers at its own cost (as fast as a worker here until
 * measured) after its lag, what a round trip adds (the link, the coordinator's update). */
static double node_finishes(const coordinator *c, const node *n, int chunks)
{
    double cost = n->cost > 0 ? n->cost : c->local_cost > 0 ? c->local_cost : 1e-3;
    return n->lag + ceil((double)chunks / n->running) * cost;
}

/* Locked. The batch's chunks dealt one by one to whichever member would finish its share first.
 * So a fast link or a fast node gets more, and a node whose lag outweighs a chunk gets fewer.
 * At least one chunk stays here, so that its speed stays measured. Returns the chunks the
 * nodes take; each node's share is its quota. */
static int deal_chunks(coordinator *c, int nchunks)
{
    int here = 1, remote = 0;
    for (int i = 0; i < c->nnodes; i++)
        c->nodes[i].quota = c->nodes[i].taken = 0;
    for (int k = 1; k < nchunks; k++) {
        double best = here_finishes(c, here + 1);
        node *to = NULL;
        for (int i = 0; i < c->nnodes; i++) {
            node *n = &c->nodes[i];
            if (!takes_work(n))
                continue;
            double t = node_finishes(c, n, n->quota + 1);
            if (t < best)
                best = t, to = n;
        }
        if (to)
            to->quota++, remote++;
        else
            here++;
    }
    /* pinned by hand, every node takes work; else one chunk keeps measured a parked node due for
     * a probe, and a node this deal left without work for PROBE_EVERY batches */
    for (int i = 0; i < c->nnodes && remote < nchunks - 1; i++) {
        node *n = &c->nodes[i];
        if (n->ready && !n->gone && !n->quota &&
            (c->cfg->all_nodes || (n->parked ? n->probe : c->batches - n->fed_at >= PROBE_EVERY)))
            n->quota = 1, remote++;
    }
    for (int i = 0; i < c->nnodes; i++) {
        node *n = &c->nodes[i];
        n->batches_present += n->ready && !n->gone;
        n->batches_dealt += n->quota > 0;
    }
    return remote;
}

/* Chunks node n has yet to start: those in flight or owed to it, and those it is recalling. */
static int ahead_of(const node *n)
{
    return n->inflight + (n->quota > n->taken ? n->quota - n->taken : 0) + n->recalls;
}

/* Locked. Node n, holding the batch's parameters with a worker that nothing is owed to, steals
 * chunks dealt here that have not started, the last first, while it would finish one before
 * this machine gets to it. The claim keeps this machine's tasks off a stolen chunk. */
static void steal_here_for(coordinator *c, node *n)
{
    while (c->claims && takes_work(n) && n->params_seq == c->batch.seq) {
        int waiting = 0, k = -1;
        for (int i = 0; i < c->here_chunks; i++)
            if (atomic_load(&c->claims[i]) == RT_CLAIM_OPEN)
                waiting++, k = i;
        int ahead = ahead_of(n);
        if (k < 0 || ahead >= n->running ||
            node_finishes(c, n, ahead + 1) >= here_finishes(c, waiting))
            return;
        remote_args a = {c->batch.seq, c->batch.epoch, k, c->batch.size, 0, -1, c->batch.batch,
                         &c->claims[k]};
        slot *s = slot_new(c, &a, c->batch.packed, SLOT_QUEUED);
        if (!s || !(s->held = malloc(sizeof(float) * (size_t)c->nparams))) {
            if (s)
                slot_free(s);
            return;   /* no room to hold what it sends: this machine computes it */
        }
        int open = RT_CLAIM_OPEN;
        if (!atomic_compare_exchange_strong(&c->claims[k], &open, RT_CLAIM_ELSEWHERE)) {
            slot_free(s);
            continue;   /* a worker here started it meanwhile */
        }
        n->stolen++, c->stolen_chunks++;
        c->last_local--, c->local_chunks--;
        if (send_chunk(c, n, s))
            return;   /* the hub closes that node; the chunk waits in the queue */
    }
}

/* Seconds from now until node v returns chunk s: the estimate when it was sent (the chunks
 * ahead of it on v's workers, at v's cost), with that cost stretched when v's oldest chunk in
 * flight is already later than its own estimate (a node slower than measured, or not yet
 * measured). */
static double node_returns(const coordinator *c, const node *v, const slot *s, const slot *oldest,
                           double now)
{
    double cost = v->cost > 0 ? v->cost : c->local_cost > 0 ? c->local_cost : 1e-3;
    double rounds = ceil((oldest->ahead + 1.0) / v->running), waited = now - oldest->sent_at - v->lag;
    if (waited > rounds * cost)
        cost = waited / rounds;
    return s->sent_at + v->lag + ceil((s->ahead + 1.0) / v->running) * cost - now;
}

/* Locked. The chunk worth asking back (RECALL) for `thief` (a node's index, or THIEF_HERE),
 * which would return one `mine` seconds from now: of the chunks of batch seq (UINT64_MAX: any)
 * waiting on another node behind at least one per worker there, the one that node would return
 * last, if later than `mine` even after the RECALL's round trip. NULL: none. */
static slot *worth_recalling(coordinator *c, int thief, uint64_t seq, double mine)
{
    const slot *oldest[MAX_NODES] = {NULL};
    for (int i = 0; i < c->nslots; i++) {
        const slot *s = &c->slots[i];
        if (s->state == SLOT_SENT && s->node >= 0 &&
            (!oldest[s->node] || s->sent_at < oldest[s->node]->sent_at))
            oldest[s->node] = s;
    }
    double now = now_s(), gain = 0;
    slot *best = NULL;
    for (int i = 0; i < c->nslots; i++) {
        slot *s = &c->slots[i];
        if (!waits_behind(c, s) || s->node == thief || (seq != UINT64_MAX && s->a.seq != seq))
            continue;
        const node *v = &c->nodes[s->node];
        double g = node_returns(c, v, s, oldest[s->node], now) - v->lag - mine;
        if (g > gain)
            gain = g, best = s;
    }
    return best;
}

/* Locked. The node holding s is asked for it back; it gives it back only if it has not
 * started it. */
static void send_recall(coordinator *c, slot *s, int thief)
{
    uint8_t buf[16];
    msg_recall r = {s->a.seq, (uint32_t)s->a.chunk, 0};
    if (send_to(c, &c->nodes[s->node], MSG_RECALL, buf, proto_recall_encode(&r, buf, sizeof buf),
                NULL, 0))
        return;   /* the hub closes that node: its chunks come back then */
    s->recalled = 1, s->thief = thief;
    if (thief >= 0)
        c->nodes[thief].recalls++;
    else
        c->here_recalls++;
}

/* Locked. Node n, with a worker free still, asks for a chunk back that it would return sooner
 * than the node holding it. */
static void recall_for(coordinator *c, node *n)
{
    int ahead = ahead_of(n);
    if (!takes_work(n) || ahead >= n->running)
        return;
    slot *s = worth_recalling(c, (int)(n - c->nodes), n->params_seq, node_finishes(c, n, ahead + 1));
    if (s)
        send_recall(c, s, (int)(n - c->nodes));
}

/* Locked, each tick of the fallback while a chunk waits on a node behind others: an idle node
 * that has reported nothing since may ask for it, and so may this machine while one of its
 * workers sleeps for want of tasks and its fallback engine is free (one chunk at a time). */
static void on_tick(coordinator *c)
{
    for (int i = 0; i < c->nnodes; i++)
        recall_for(c, &c->nodes[i]);
    if (c->here_recalls || first_in(c, SLOT_BACK) || rt_idle_workers(c->rt) < 1)
        return;
    slot *s = worth_recalling(c, THIEF_HERE, UINT64_MAX, fallback_cost(c, rt_idle_workers(c->rt)));
    if (s)
        send_recall(c, s, THIEF_HERE);
}

static void steal_for(coordinator *c, node *n)
{
    steal_here_for(c, n);
    recall_for(c, n);
}

static void recall_over(coordinator *c, slot *s, int outcome)
{
    if (s->thief >= 0)
        c->nodes[s->thief].recalls--;
    else if (s->thief == THIEF_HERE)
        c->here_recalls--;
    s->recalled = outcome;
}

/* Asked for each training batch: how many of its chunks the nodes take (deal_chunks); when
 * some do, the nodes may steal the others. */
static int remote_chunks(void *ctx, const remote_batch *b)
{
    coordinator *c = ctx;
    int nchunks = b->nchunks;
    pthread_mutex_lock(&c->lock);
    int remote = 0;
    c->batches++;
    if (ready_nodes(c) && nchunks > 1) {
        measure_here(c);
        if (!c->cfg->all_nodes)   /* else the machines are pinned by hand */
            choose_nodes(c, (double)c->cfg->batch / nchunks);
        remote = deal_chunks(c, nchunks);
    }
    c->last_local = nchunks - remote;
    c->local_chunks += nchunks - remote;
    for (int k = 0; k < nchunks; k++)   /* under the lock: no steal from the batch before */
        atomic_store(&b->claims[k], RT_CLAIM_OPEN);
    c->batch = *b;
    c->here_chunks = nchunks - remote;
    c->claims = remote ? b->claims : NULL;
    pthread_mutex_unlock(&c->lock);
    return remote;
}

/* ---- starting and stopping ---- */

static int hash_file(const char *path, proto_file *f, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, 32);
    uint8_t buf[1 << 16];
    ssize_t r;
    f->size = 0;
    while ((r = read(fd, buf, sizeof buf)) > 0) {
        crypto_generichash_update(&st, buf, (size_t)r);
        f->size += (uint64_t)r;
    }
    close(fd);
    crypto_generichash_final(&st, f->hash, 32);
    snprintf(f->name, sizeof f->name, "%s", path);
    if (r < 0)
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return r < 0 ? -1 : 0;
}

/* The job text as nodes get it: the file, then the --set overrides as comment lines. */
static int job_text(coordinator *c, const coordinator_options *o, char *err, size_t errlen)
{
    FILE *f = fopen(o->job_path, "r");
    char *text = malloc(CONFIG_MAX_BYTES + 1);
    size_t len = f && text ? fread(text, 1, CONFIG_MAX_BYTES, f) : 0;
    if (f)
        fclose(f);
    for (int i = 0; text && o->overrides && o->overrides[i]; i++) {
        int n = snprintf(text + len, CONFIG_MAX_BYTES + 1 - len, "\n#--set %s", o->overrides[i]);
        len += n > 0 ? (size_t)n : 0;
        if (len > CONFIG_MAX_BYTES)
            len = CONFIG_MAX_BYTES + 1;
    }
    if (!text || len > CONFIG_MAX_BYTES) {
        snprintf(err, errlen, "%s: cannot read it for the nodes", o->job_path);
        free(text);
        return -1;
    }
    c->job.text = text, c->job.text_len = len;
    return 0;
}

/* The training files: IDX images and labels, or the CIFAR-10 batches. */
static int share_files(coordinator *c, char *err, size_t errlen)
{
    const job_config *cfg = c->cfg;
    char list[CONFIG_PATH * 3];
    if (cfg->format == DATA_IDX)
        snprintf(list, sizeof list, "%s,%s", cfg->train_images, cfg->train_labels);
    else
        snprintf(list, sizeof list, "%s", cfg->train_files);
    char *save = NULL;
    for (char *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        if (c->job.nfiles == PROTO_MAX_FILES) {
            snprintf(err, errlen, "more than %d training files to share", PROTO_MAX_FILES);
            return -1;
        }
        proto_file *f = &c->job.files[c->job.nfiles];
        if (hash_file(p, f, err, errlen) || !(c->paths[c->job.nfiles++] = strdup(p)))
            return -1;
    }
    return 0;
}

coordinator *coordinator_start(const coordinator_options *o, const job_config *cfg,
                               const dataset *train, rt_config *rc, FILE *log, char *err,
                               size_t errlen)
{
    coordinator *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->sink.started = task_started;
    c->sink.params = params_ready;
    c->cfg = cfg, c->train = train, c->log = log, c->timeout_s = o->timeout_s, c->start = now_s();
    c->limits = (policy_limits){cfg->policy < 0 ? POLICY_TIME : (placement_policy)cfg->policy,
                                cfg->power_budget_watts, cfg->max_slowdown, cfg->carbon_g_per_kwh};
    carbon_init(&c->carbon, cfg->carbon_g_per_kwh, cfg->carbon_file);
    if (cfg->all_nodes)
        fprintf(log, "placement: nodes pinned by hand ([placement] all_nodes = on): every node "
                "takes work\n");
    snprintf(c->listen_at, sizeof c->listen_at, "%s", o->listen);
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->params_lock, NULL);
    pthread_condattr_t monotonic;   /* the fallback's ticks: not moved by the wall clock */
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
    pthread_cond_init(&c->fallback_wake, &monotonic);
    pthread_condattr_destroy(&monotonic);
    pthread_cond_init(&c->round_over, NULL);
    if (netio_key_load(o->key_path, c->net.key, err, errlen) || job_text(c, o, err, errlen) ||
        share_files(c, err, errlen))
        goto fail;
    if (rc->ndevices == RT_MAX_DEVICES) {
        snprintf(err, errlen, "no room for the cluster's worker beside %d devices", rc->ndevices);
        goto fail;
    }
    rc->devices[rc->ndevices++] = (rt_device){.kind = RT_WORKER_PEER, .name = "cluster",
                                              .ctx = &c->sink};
    return c;
fail:
    coordinator_stop(c, NULL);
    return NULL;
}

int coordinator_attach(coordinator *c, trainer *t, rt_runtime *rt, char *err, size_t errlen)
{
    c->rt = rt;
    c->nparams = trainer_nparams(t);
    c->nslots = 2 * trainer_plan(t)->nchunks;
    if (!(c->slots = calloc((size_t)c->nslots, sizeof *c->slots))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    c->nlayers = trainer_layer_params(t, c->layer_params);   /* the packed order of trainer.c */
    for (int l = 0, at = 0; l < c->nlayers; l++) {
        c->layer_offset[l] = at, at += (int)c->layer_params[l];
        c->param_layers += c->layer_params[l] > 0;
        c->largest = c->layer_params[l] > c->largest ? c->layer_params[l] : c->largest;
    }
    c->net.ctx = c;
    c->net.on_event = on_event;
    c->net.timeout_s = c->timeout_s;
    proto_limits(&c->net.limits, 1, c->nparams, c->largest);
    c->hub = netio_hub_start(&c->net, err, errlen);
    if (!c->hub || netio_hub_listen(c->hub, c->listen_at, c->listen, sizeof c->listen, err, errlen))
        return -1;
    fprintf(c->log, "cluster: listening on %s (nodes join with: frugal join %s --key KEYFILE); a "
            "node silent for %.0f s is lost\n", c->listen, c->listen, c->timeout_s);
    c->t = t;
    if ((c->cfg->compress || c->cfg->overlap) && !c->cfg->sync_every) {
        snprintf(err, errlen, "[cluster] %s = on needs sync_every > 0: synchronous training "
                 "sends whole gradients, so that its weights stay those of one machine",
                 c->cfg->compress ? "compress" : "overlap");
        return -1;
    }
    if (c->cfg->sync_every) {   /* averaging.c runs the epochs */
        fprintf(c->log, "cluster: periodic averaging: the models are averaged every %d batches "
                "([cluster] sync_every); every node trains on a share%s%s\n", c->cfg->sync_every,
                c->cfg->compress ? "; models travel as half-precision deltas ([cluster] compress)" : "",
                c->cfg->overlap ? "; each round's average travels while the next round trains, "
                                  "and is applied after it ([cluster] overlap)" : "");
        c->delta_len = delta_bytes(c->layer_params, c->nlayers);
        size_t bytes = sizeof(float) * (size_t)c->nparams;
        if (!(c->params = malloc(bytes)) ||
            (c->cfg->compress && !c->cfg->overlap && !(c->round_start = malloc(bytes))) ||
            (c->cfg->compress && !(c->delta = malloc(c->delta_len))) ||
            (c->cfg->overlap && (late_open(&c->late, c->nparams) ||
                                 !(c->own_change = malloc(bytes)) || !(c->mean = malloc(bytes))))) {
            snprintf(err, errlen, "out of memory for %ld parameters", c->nparams);
            return -1;
        }
        fflush(c->log);
        return 0;
    }
    if (pthread_create(&c->fallback, NULL, fallback_main, c)) {
        snprintf(err, errlen, "cannot start a thread: %s", strerror(errno));
        return -1;
    }
    c->fallback_started = 1;
    if (trainer_share_work(t, &(trainer_remote){c, remote_chunks}, err, errlen))
        return -1;
    fflush(c->log);
    return 0;
}

void coordinator_use_meter(coordinator *c, energy_meter *meter)
{
    pthread_mutex_lock(&c->lock);
    c->meter = meter;
    pthread_mutex_unlock(&c->lock);
}

int coordinator_wait_for(coordinator *c, int nodes, double seconds)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)seconds;
    pthread_mutex_lock(&c->lock);
    int rc = 0;
    while (ready_nodes(c) < nodes && rc == 0)
        rc = pthread_cond_timedwait(&c->joined, &c->lock, &until);
    int got = ready_nodes(c);
    pthread_mutex_unlock(&c->lock);
    return got;
}

/* Locked. Every machine's joules added up (a node's as it last reported them), and how they
 * were come by: "measured", "estimated", or "partly estimated". */
static double all_machines(const coordinator *c, double here_joules, int here_estimated,
                           const char **how)
{
    double joules = here_joules;
    int estimated = here_estimated, measured = !here_estimated;
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i].ready) {
            joules += c->nodes[i].joules;
            estimated |= c->nodes[i].estimated, measured |= !c->nodes[i].estimated;
        }
    *how = !estimated ? "measured" : measured ? "partly estimated" : "estimated";
    return joules;
}

void coordinator_print_nodes(coordinator *c, FILE *f, double here_joules, int here_estimated)
{
    pthread_mutex_lock(&c->lock);
    if (!c->cfg->sync_every)
        fprintf(f, "  here: %ld chunks (%ld taken back from nodes, %ld computed for lost nodes)\n",
                c->local_chunks + c->fallback_chunks, c->taken_back, c->fallback_chunks - c->taken_back);
    for (int i = 0; i < c->nnodes; i++) {
        node *n = &c->nodes[i];
        if (!n->ready)
            continue;
        if (!n->gone)
            netio_hub_peer_stats(c->hub, n->peer, &n->net);
        char dealing[120] = "";   /* synchronous: how its chunks came to it */
        if (!c->cfg->sync_every)
            snprintf(dealing, sizeof dealing, " (%ld stolen, %ld given back; dealt some in %ld of %ld batches)",
                     n->stolen, n->given_back, n->batches_dealt, n->batches_present);
        fprintf(f, "  node %s (%s): %ld chunks%s, %.0f img/s, %.1f MB sent, %.1f MB received, "
                "%.2f s waiting on the network (%.2f ms a round trip), %.1f J %s%s%s%s\n", n->addr,
                n->host, n->chunks, dealing, n->active_s > 0 ? (double)n->samples / n->active_s : 0,
                n->net.received / 1e6, n->net.sent / 1e6, n->wait_s, 1e3 * n->lag, n->joules, n->estimated ? "estimated" : "measured",
                n->parked && !n->gone ? "; parked by the placement policy" : "",
                n->gone ? "; lost: " : "", n->gone ? n->left_why : "");
    }
    const char *how;
    double joules = all_machines(c, here_joules, here_estimated, &how);
    fprintf(f, "  every machine: %.1f J %s (here %.1f J, nodes %.1f J)\n", joules, how, here_joules,
            joules - here_joules);
    pthread_mutex_unlock(&c->lock);
}

void coordinator_write_json(coordinator *c, FILE *f, double here_joules, int here_estimated)
{
    pthread_mutex_lock(&c->lock);
    const char *how;
    double joules = all_machines(c, here_joules, here_estimated, &how);
    fprintf(f, "\"joules_every_machine\": %.3f, \"joules_here\": %.3f, \"joules_nodes\": %.3f, "
            "\"joules_how\": \"%s\", ", joules, here_joules, joules - here_joules, how);
    long remote = 0;
    for (int i = 0; i < c->nnodes; i++)
        remote += c->nodes[i].chunks;
    long all = remote + c->local_chunks + c->fallback_chunks;
    fputs("\"listen\": ", f);
    json_string(f, c->listen);
    fprintf(f, ", \"mode\": \"%s\", \"sync_every\": %d, \"compress\": %s, \"overlap\": %s, "
            "\"rounds\": %ld, \"node_rounds_lost\": %ld, \"rounds_sharing_a_chunk\": %ld",
            c->cfg->sync_every ? "averaging" : "synchronous", c->cfg->sync_every,
            c->cfg->compress ? "true" : "false", c->cfg->overlap ? "true" : "false", c->rounds,
            c->rounds_lost, c->rounds_shared);
    fprintf(f, ", \"timeout_s\": %g, \"coordinator_chunks\": %ld, \"coordinator_share\": %.4f, "
            "\"nodes_lost\": %ld, \"chunks_resent\": %ld, \"chunks_computed_by_the_fallback\": %ld, "
            "\"chunks_stolen\": %ld, \"chunks_taken_back\": %ld, \"nodes\": [", c->timeout_s,
            c->local_chunks + c->fallback_chunks,
            all ? (double)(c->local_chunks + c->fallback_chunks) / (double)all : 1.0, c->lost_nodes,
            c->resent_chunks, c->fallback_chunks, c->stolen_chunks, c->taken_back);
    for (int i = 0, first = 1; i < c->nnodes; i++) {
        node *n = &c->nodes[i];
        if (!n->ready)
            continue;
        if (!n->gone)
            netio_hub_peer_stats(c->hub, n->peer, &n->net);
        fprintf(f, "%s{\"address\": ", first ? "" : ", ");
        json_string(f, n->addr);
        fputs(", \"host\": ", f);
        json_string(f, n->host);
        fprintf(f, ", \"workers\": %d, \"active_workers\": %d, \"kernel_path\": \"%s\", "
                "\"joined_after_s\": %.2f, "
                "\"chunks\": %ld, \"chunks_stolen\": %ld, \"chunks_given_back\": %ld, \"batches_dealt\": %ld, \"batches_present\": %ld, "
                "\"share\": %.4f, \"img_per_s\": %.1f, \"bytes_sent\": %llu, "
                "\"bytes_received\": %llu, \"network_wait_s\": %.3f, \"compute_s\": %.3f, "
                "\"chunk_cost_ms\": %.3f, \"round_trip_lag_ms\": %.3f, \"joules\": %.3f, \"watts_computing\": %.3f, \"carbon_g_per_kwh\": %g, "
                "\"parked\": %s, \"energy\": ", n->workers, n->running, ops_isa_name((ops_isa)n->isa),
                n->joined_at, n->chunks, n->stolen, n->given_back, n->batches_dealt, n->batches_present, all ? (double)n->chunks / (double)all : 0,
                n->active_s > 0 ? (double)n->samples / n->active_s : 0,
                (unsigned long long)n->net.received, (unsigned long long)n->net.sent, n->wait_s,
                n->compute_s, 1e3 * n->cost, 1e3 * n->lag, n->joules, n->watts, n->carbon, n->parked ? "true" : "false");
        json_string(f, n->energy);
        fprintf(f, ", \"estimated\": %s, \"lost\": ", n->estimated ? "true" : "false");
        if (n->gone)
            json_string(f, n->left_why);
        else
            fputs("null", f);
        fputc('}', f);
        first = 0;
    }
    fprintf(f, "], \"placement\": {\"policy\": \"%s\", \"nodes_pinned\": %s, "
            "\"power_budget_watts\": %g, \"max_slowdown\": %g, \"coordinator_img_per_s\": %.1f, \"coordinator_watts\": %.3f, "
            "\"coordinator_carbon_g_per_kwh\": %g, \"probe_every_batches\": %d, "
            "\"decisions_total\": %d, \"decisions\": [", policy_name(c->limits.policy),
            c->cfg->all_nodes ? "true" : "false", c->limits.budget_w, c->limits.max_slowdown,
            c->local_img_s, c->local_w, c->carbon.value, PROBE_EVERY, c->decisions_total);
    for (int i = 0; i < c->ndecisions; i++) {
        fprintf(f, "%s{\"t\": %.3f, \"nodes_taking_work\": %d, \"why\": ", i ? ", " : "",
                c->decisions[i].t, c->decisions[i].taking);
        json_string(f, c->decisions[i].why);
        fputc('}', f);
    }
    fputs("]}", f);
    pthread_mutex_unlock(&c->lock);
}

void coordinator_stop(coordinator *c, const char *why)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    c->stopping = 1;
    for (int i = 0; why && c->hub && i < c->nnodes; i++)
        if (!c->nodes[i].gone)
            netio_hub_send(c->hub, c->nodes[i].peer, MSG_DONE, why, strlen(why), NULL, 0);
    pthread_cond_broadcast(&c->fallback_wake);
    pthread_mutex_unlock(&c->lock);
    if (c->fallback_started)
        pthread_join(c->fallback, NULL);
    if (c->hub && why)
        usleep(100 * 1000);   /* DONE on its way before the connections close */
    netio_hub_stop(c->hub);
    sodium_memzero(c->net.key, sizeof c->net.key);
    proto_job_free(&c->job);
    for (int i = 0; i < PROTO_MAX_FILES; i++)
        free(c->paths[i]);
    for (int i = 0; c->slots && i < c->nslots; i++)   /* stopped with stolen chunks under way */
        free(c->slots[i].held);
    free(c->slots);
    free(c->params);
    free(c->round_start);
    free(c->delta);
    for (int i = 0; i < c->nnodes; i++)
        free(c->nodes[i].rounds[0].model), free(c->nodes[i].rounds[1].model);
    late_close(&c->late);
    free(c->own_change);
    free(c->mean);
    pthread_cond_destroy(&c->fallback_wake);
    pthread_cond_destroy(&c->round_over);
    pthread_cond_destroy(&c->joined);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->params_lock);
    free(c);
}
