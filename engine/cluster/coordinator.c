/* A cluster's coordinator: nodes joining and leaving (the hub's events), the job and its files
 * sent to them, and synchronous training's chunks sent out and returned as runtime tasks, or
 * computed here on the fallback engine when no node is left (coordinator_internal.h). */
#include "engine/cluster/coordinator_internal.h"

#include "energy/carbon.h"
#include "engine/cluster/chunk_engine.h"
#include "engine/cluster/proto.h"
#include "engine/placement/cluster_share.h"
#include "engine/model/layer.h"
#include "engine/cluster/model_delta.h"
#include "engine/train/remote.h"
#include "netio/hub.h"
#include "ops/cpu.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double coordinator_running_mean(double avg, double x)
{
    return avg > 0 ? (1 - COST_WEIGHT) * avg + COST_WEIGHT * x : x;
}

int coordinator_ready_nodes(const coordinator *c)
{
    int n = 0;
    for (int i = 0; i < c->nnodes; i++)
        n += c->nodes[i].ready && !c->nodes[i].gone;
    return n;
}

/* ---- sending chunks: as nodes have room, queued chunks in order ---- */

/* The node's track in the trace, made on first use; -1 without a trace (or before attach). */
static int node_track(coordinator *c, peer_node *n)
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

void coordinator_trace_node(coordinator *c, peer_node *n, const char *what, double start, double end)
{
    int track = node_track(c, n);
    if (track >= 0)
        rt_trace_span(c->rt, track, what, start, end);
}

/* A message to or from a node as an instant on its track (nothing to format without a trace). */
static void trace_message(coordinator *c, peer_node *n, const char *dir, unsigned type)
{
    if (node_track(c, n) < 0)
        return;
    char what[32];
    snprintf(what, sizeof what, "%s %s", dir, proto_msg_name(type));
    double t = clock_now_s();
    coordinator_trace_node(c, n, what, t, t);
}

int coordinator_send_to(coordinator *c, peer_node *n, uint16_t type, const void *head, size_t headlen,
            const void *body, size_t bodylen)
{
    trace_message(c, n, "sent", type);
    return netio_hub_send(c->hub, n->peer, type, head, headlen, body, bodylen);
}

int sync_takes_work(const peer_node *n) { return n->ready && !n->gone && !n->parked; }

slot *sync_first_in(coordinator *c, int state)
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

int sync_send_chunk(coordinator *c, peer_node *n, slot *s)
{
    uint8_t head[PROTO_PARAMS_HEAD], work[32];
    s->alone = s->probe || sync_slot_has_gradients(c, s);   /* a sum with them would count them twice */
    msg_work w = {s->a.seq, (uint32_t)s->a.epoch, (uint32_t)s->a.batch, (uint32_t)s->a.chunk,
                  (uint32_t)s->a.size, (uint32_t)s->alone};
    size_t len = proto_work_encode(&w, work, sizeof work);
    if (n->params_seq != s->a.seq) {   /* no LAYER of the next batch between PARAMS and WORK */
        for (int i = 0; i < 8; i++)
            head[i] = (uint8_t)(s->a.seq >> (8 * i));
        pthread_mutex_lock(&c->params_lock);
        int rc = coordinator_send_to(c, n, MSG_PARAMS, head, sizeof head, s->params, sizeof(float) * (size_t)c->nparams) ||
                 coordinator_send_to(c, n, MSG_WORK, work, len, NULL, 0);
        pthread_mutex_unlock(&c->params_lock);
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
    if (!n->inflight++)
        n->active_s -= s->sent_at;   /* active while it has work: closed when it has none */
    if (s->ahead >= n->running)      /* it waits there behind others: the fallback's ticks start */
        pthread_cond_signal(&c->fallback_wake);
    return 0;
}

/* The probe waiting for its batch's parameters goes once they are packed: a copy of the first
 * chunk, which this machine computes as well (its claim is not taken), so that no batch waits
 * for it. */
void sync_send_probe(coordinator *c)
{
    if (c->probe_seq != c->batch.seq || c->packed_seq != c->batch.seq ||
        c->packed_layers < c->param_layers)
        return;
    peer_node *n = &c->nodes[c->probe_node];
    c->probe_seq = UINT64_MAX;
    remote_args a = {c->batch.seq, c->batch.epoch, 0, c->batch.size, 0, -1, c->batch.batch, NULL};
    slot *s = n->ready && !n->gone ? sync_slot_new(c, &a, c->batch.packed, SLOT_QUEUED) : NULL;
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
                pthread_cond_signal(&c->fallback_wake);
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

/* The peer worker started a remote task (remote.h): the first of a chunk dealt elsewhere takes
 * a slot, the last puts it in the queue; a stolen chunk's has its slot already. */
static void task_started(remote_sink *sink, const remote_args *a, void *dst, const float *params,
                         rt_runtime *rt, rt_task *task)
{
    coordinator *c = (coordinator *)sink;
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
    coordinator *c = (coordinator *)sink;
    int to[MAX_NODES], peer[MAX_NODES], sent[MAX_NODES], m = 0;
    pthread_mutex_lock(&c->lock);
    if (c->packed_seq != seq)
        c->packed_seq = seq, c->packed_layers = 0;
    c->packed_layers++;
    for (int i = 0; i < c->nnodes; i++) {
        peer_node *x = &c->nodes[i];
        if (sync_takes_work(x)) {
            if (x->layers_seq != seq)
                x->layers_seq = seq, x->layers_sent = 0, x->params_seq = UINT64_MAX;
            trace_message(c, x, "sent", MSG_LAYER);
            to[m] = i, peer[m++] = x->peer;
        }
    }
    pthread_mutex_unlock(&c->lock);
    uint8_t head[PROTO_LAYER_HEAD];
    size_t headlen = proto_layer_head(&(msg_layer){.seq = seq, .layer = (uint32_t)layer, .chunks = 1},
                                     head, sizeof head);
    pthread_mutex_lock(&c->params_lock);
    for (int k = 0; k < m; k++)
        sent[k] = !netio_hub_send(c->hub, peer[k], MSG_LAYER, head, headlen, values,
                                  sizeof(float) * (size_t)n);
    pthread_mutex_unlock(&c->params_lock);
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
    for (int i = 0; i < c->nslots; i++)
        if (sync_waits_behind(c, &c->slots[i]))
            return 1;
    return 0;
}

double sync_fallback_cost(const coordinator *c, int workers)
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
    rt_stats_add_work(&c->fallback_work, &work);
    int n = ok ? sync_slot_result(c, s, &r, r.grads, done) : sync_slot_fail(s, done);
    c->fallback_chunks++, c->taken_back += taken_back;
    c->fallback_cpu = ok ? coordinator_running_mean(c->fallback_cpu, workers * (clock_now_s() - start)) : c->fallback_cpu;
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
    int open = chunk_engine_open(&e, &cfg, c->train, NULL, err, sizeof err) == 0;
    pthread_mutex_lock(&c->lock);
    while (!c->stopping) {
        slot *s = sync_first_in(c, SLOT_BACK);
        s = s ? s : coordinator_ready_nodes(c) ? NULL : sync_first_in(c, SLOT_QUEUED);
        if (s) {
            compute_here(c, &e, open, s, err, sizeof err);
        } else if (recall_possible(c)) {
            sync_on_tick(c);
            double tick = sync_fallback_cost(c, 1);
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

int coordinator_fallback_stats(coordinator *c, rt_stats *out)
{
    pthread_mutex_lock(&c->lock);
    *out = c->fallback_work;
    c->fallback_work = (rt_stats){0};
    pthread_mutex_unlock(&c->lock);
    return out->tasks > 0;
}

/* ---- messages from nodes (on the hub's thread) ---- */

static peer_node *node_of(coordinator *c, int peer)
{
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i].peer == peer && !c->nodes[i].gone)
            return &c->nodes[i];
    return NULL;
}

/* Says once per reason (at the start, or as a node joins) why the weights will not be
 * bit-identical to a run on one machine, and what would make them so; the first reason goes to
 * summary.json. */
static void weights_differ(coordinator *c, const char *why, const char *remedy)
{
    fprintf(c->log, "cluster: %s, so the weights will not be bit-identical to a run on one "
            "machine (%s)\n", why, remedy);
    if (!c->weights_why[0])
        snprintf(c->weights_why, sizeof c->weights_why, "%s", why);
}

void coordinator_refuse(coordinator *c, peer_node *n, const char *why)
{
    fprintf(c->log, "cluster: node %s refused: %s\n", n->addr, why);
    netio_hub_close(c->hub, n->peer, why);
}

static void on_join(coordinator *c, peer_node *n, const uint8_t *p, size_t len)
{
    msg_join j;
    char why[200];
    if (n->workers || proto_join_decode(&j, p, len, why, sizeof why))
        return coordinator_refuse(c, n, n->workers ? "a second JOIN" : why);
    if (c->cfg->deterministic && j.isa < (uint32_t)ops_isa_active())
        return coordinator_refuse(c, n, "it cannot run this run's kernel path (deterministic = on)");
    n->workers = n->running = (int)j.workers, n->isa = j.isa;
    snprintf(n->host, sizeof n->host, "%s", j.host);
    snprintf(n->energy, sizeof n->energy, "%s", j.energy);
    if (!c->cfg->deterministic && j.isa != (uint32_t)ops_isa_active()) {
        char why[300], remedy[120];
        const char *here = ops_isa_name(ops_isa_active());
        snprintf(why, sizeof why, "node %s (%s) computes with %s kernels, this machine with %s: "
                 "they round differently", n->addr, n->host, ops_isa_name((ops_isa)j.isa), here);
        snprintf(remedy, sizeof remedy, "[execution] deterministic = on makes every node use %s",
                 here);
        weights_differ(c, why, remedy);
    }
    size_t cap = 64 + c->job.text_len + PROTO_MAX_FILES * 600;
    uint8_t *buf = malloc(cap);
    msg_job job = c->job;
    job.isa = c->cfg->deterministic ? (uint32_t)ops_isa_active() : PROTO_ANY_ISA;
    if (!buf || coordinator_send_to(c, n, MSG_JOB, buf, proto_job_encode(&job, buf, cap), NULL, 0))
        coordinator_refuse(c, n, "cannot send it the job");
    free(buf);
}

/* The node built the model: it takes work from the next batch on. What it computes on is said,
 * and so is a device that makes its chunks round otherwise than this machine's CPU. */
static void on_ready(coordinator *c, peer_node *n, const uint8_t *p, size_t len)
{
    msg_ready r;
    char why[400];
    if (proto_ready_decode(&r, p, len, why, sizeof why) || r.nparams != c->nparams)
        return coordinator_refuse(c, n, r.nparams != c->nparams ? "its model has other parameters" : why);
    if (n->ready)
        return;
    n->ready = 1;
    snprintf(n->devices, sizeof n->devices, "%s", r.devices);
    netio_hub_peer_stats(c->hub, n->peer, &n->net);
    fprintf(c->log, "cluster: node %s (%s, %d workers, %s; computing on %s; traffic %s) joined\n",
            n->addr, n->host, n->workers, n->energy, n->devices, n->net.cipher);
    if (strcmp(n->devices, "cpu")) {
        snprintf(why, sizeof why, "node %s (%s) computes on OpenCL devices (%s): they round "
                 "differently from CPUs", n->addr, n->host, n->devices);
        weights_differ(c, why, "frugal join --devices cpu keeps a node on its CPU");
    }
    pthread_cond_broadcast(&c->joined);
    pump(c);
}

static void on_fetch(coordinator *c, peer_node *n, const uint8_t *p, size_t len)
{
    msg_fetch f;
    char why[200];
    if (proto_fetch_decode(&f, p, len, why, sizeof why))
        return coordinator_refuse(c, n, why);
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
        if (!ok || coordinator_send_to(c, n, MSG_FILE, head, proto_file_head(&m, head, sizeof head),
                                  bytes, want))
            coordinator_refuse(c, n, "cannot send it a training file");
        free(bytes);
        return;
    }
    coordinator_refuse(c, n, "it asked for a file this run does not share");
}

/* The chunk of batch seq sent to node n, or NULL. */
static slot *sent_slot(coordinator *c, const peer_node *n, uint64_t seq, uint32_t chunk)
{
    for (int i = 0; i < c->nslots; i++)
        if (c->slots[i].state == SLOT_SENT && c->slots[i].node == (int)(n - c->nodes) &&
            c->slots[i].a.seq == seq && c->slots[i].a.chunk == (int)chunk)
            return &c->slots[i];
    return NULL;
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
    if (g->chunks > (uint32_t)(c->nslots / 2))   /* the slots hold two batches' and a probe */
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
    msg_layer g;
    char why[200];
    if (proto_layer_decode(MSG_GRAD, &g, p, len, c->layer_params, c->nlayers, why, sizeof why))
        return coordinator_refuse(c, n, why);
    const char *not_allowed = summed_slots(c, n, &g, c->summed);
    if (not_allowed)
        return coordinator_refuse(c, n, not_allowed);
    rt_task **done = c->summed_done;
    int ndone = 0;
    for (uint32_t i = 0; i < g.chunks; i++) {
        c->summed[i]->summed |= i > 0;
        ndone += sync_slot_arrived(c, c->summed[i], 1 + (int)g.layer, i ? NULL : g.values, done + ndone);
    }
    pthread_mutex_unlock(&c->lock);
    complete(c, done, ndone);
    pthread_mutex_lock(&c->lock);
}

static void on_result(coordinator *c, peer_node *n, const uint8_t *p, size_t len)
{
    msg_result r;
    char why[200];
    if (proto_result_decode(&r, p, len, why, sizeof why))
        return coordinator_refuse(c, n, why);
    slot *s = sent_slot(c, n, r.seq, r.chunk);
    if (!s)
        return coordinator_refuse(c, n, "a result for a chunk it was not sent");
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
        if (r.given)
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
        pthread_cond_signal(&c->fallback_wake);
    else if (thief && sync_takes_work(thief) && !sync_send_chunk(c, thief, s))
        thief->stolen++, c->stolen_chunks++;
    pump(c);
}

/* A node is gone: what it was computing goes to the others (or the fallback). */
static void node_lost(coordinator *c, peer_node *n, const char *why)
{
    int back = 0, me = (int)(n - c->nodes);
    for (int i = 0; i < c->nslots; i++) {
        slot *s = &c->slots[i];
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
    if (n->inflight)
        n->active_s += clock_now_s();
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
    peer_node *n = node_of(c, e->peer);
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
        n->peer = e->peer, n->params_seq = n->layers_seq = UINT64_MAX, n->joined_at = clock_now_s() - c->start;
        snprintf(n->addr, sizeof n->addr, "%s", e->addr);
        break;
    case NETIO_DOWN:
        if (n && c->stopping)   /* it leaves on the DONE: not lost */
            n->gone = 1;
        else if (n)
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
        else if (e->type == MSG_READY)
            on_ready(c, n, e->payload, e->len);
        else if (e->type == MSG_GRAD && n->ready && !c->cfg->sync_every)
            on_grad(c, n, e->payload, e->len);
        else if (e->type == MSG_RESULT && n->ready && !c->cfg->sync_every)
            on_result(c, n, e->payload, e->len);
        else if (e->type == MSG_RECALLED && n->ready && !c->cfg->sync_every)
            on_recalled(c, n, e->payload, e->len);
        else if (e->type == MSG_MODEL && n->ready && c->cfg->sync_every)
            averaging_on_model(c, n, e->payload, e->len);
        else
            coordinator_refuse(c, n, "a message out of turn");
        break;
    }
    fflush(c->log);
    pthread_mutex_unlock(&c->lock);
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
    c->cfg = cfg, c->train = train, c->log = log, c->timeout_s = o->timeout_s, c->start = clock_now_s();
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
    if (cfg->sync_every)
        snprintf(c->weights_why, sizeof c->weights_why, "periodic averaging (sync_every = %d): "
                 "the weights are an average of the machines' models", cfg->sync_every);
    else if (rc->ndevices > 0)
        weights_differ(c, "this machine computes some of its chunks on OpenCL devices and every "
                       "node on its CPU: they round differently", "devices = cpu keeps them so");
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
    c->nslots = 2 * trainer_plan(t)->nchunks + 1;   /* two batches' chunks, and a probe */
    c->probe_seq = c->packed_seq = UINT64_MAX;
    size_t nchunks = (size_t)trainer_plan(t)->nchunks;
    if (!(c->slots = calloc((size_t)c->nslots, sizeof *c->slots)) ||
        !(c->summed = calloc(nchunks, sizeof *c->summed)) ||
        !(c->summed_done = calloc(nchunks, sizeof *c->summed_done))) {
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
    if (proto_cipher_from_env(&c->net, err, errlen))
        return -1;
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
        c->delta_len = model_delta_bytes(c->layer_params, c->nlayers);
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
    if (trainer_share_work(t, &(trainer_remote){c, sync_remote_chunks}, err, errlen))
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
    while (coordinator_ready_nodes(c) < nodes && rc == 0)
        rc = pthread_cond_timedwait(&c->joined, &c->lock, &until);
    int got = coordinator_ready_nodes(c);
    pthread_mutex_unlock(&c->lock);
    return got;
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
    free(c->summed);
    free(c->summed_done);
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
