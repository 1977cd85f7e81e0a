/* Which nodes take work, and how many chunks of each batch go to them (synchronous training):
 * this machine's and the nodes' speeds measured, the placement policy's choice of nodes, the
 * deal, an idle node's steal of chunks not started here, and RECALLs of chunks waiting on a
 * slow node for an idle machine. */
#include "engine/cluster/sync_internal.h"

#include "energy/meter.h"
#include "engine/cluster/proto.h"
#include "engine/placement/policy.h"
#include "runtime/runtime.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* This machine's CPU seconds per chunk (from the runtime's busy time) and its power (from its
 * meter, over at least POWER_WINDOW_S). */
static void measure_here(coordinator *c)
{
    sync_state *ss = sync_of(c);
    rt_stats st;
    rt_stats_get(c->rt, &st);
    if (ss->last_local > 0 && st.busy_s > ss->last_busy)
        ss->local_cost = coordinator_running_mean(ss->local_cost, (st.busy_s - ss->last_busy) / (double)ss->last_local);
    ss->last_busy = st.busy_s;
    double now = clock_now_s();   /* the meter reads every sensor: not on every batch */
    if (!c->meter || now - c->last_power_at < POWER_WINDOW_S)
        return;
    c->last_power_at = now;
    energy_reading r;
    energy_meter_read(c->meter, &r);
    if (c->last_power.t > 0)
        c->local_w = coordinator_running_mean(c->local_w, (r.total_j - c->last_power.total_j) / (r.t - c->last_power.t));
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
    c->local_img_s = img_per_s(rt_active_workers(c->rt), sync_of(c)->local_cost, per_chunk);
    m[0] = (member_figures){c->local_img_s, c->local_w, c->carbon.value};
    for (int i = 0; i < c->nnodes; i++) {
        peer_node *x = &c->nodes[i];
        if (x->ready && !x->gone)
            index[n] = i, m[n++] = (member_figures){img_per_s(x->running, x->cost, per_chunk),
                                                    x->watts, x->carbon};
    }
    cluster_choose(&c->limits, m, n, in);
    double speed[MAX_NODES];
    int take[MAX_NODES];
    for (int i = 0; i < c->nnodes; i++)
        speed[i] = img_per_s(c->nodes[i].running, c->nodes[i].cost, per_chunk);
    long per_epoch = (c->train->n + c->cfg->batch - 1) / c->cfg->batch;
    double left = (double)((long)c->cfg->epochs * per_epoch - c->batches) * c->cfg->batch;
    coordinator_participation(c, (unsigned long long)c->batches, c->local_img_s, c->local_w, speed,
                              left, c->local_img_s > 0 ? c->cfg->batch / c->local_img_s : 0, take);
    char taking[160] = "", parked[160] = "";
    int changed = 0, ntaking = 0;
    for (int k = 1; k < n; k++) {
        peer_node *x = &c->nodes[index[k]];
        x->sitting_out = !take[index[k]];
        in[k] &= !x->sitting_out;
        changed |= x->parked != !in[k];
        x->parked = !in[k];
        ntaking += in[k];
        char *list = in[k] ? taking : parked;
        size_t len = strlen(list);
        snprintf(list + len, 160 - len, "%s%s %.3g J/img", len ? ", " : "", x->name,
                 m[k].img_per_s > 0 ? m[k].watts / m[k].img_per_s : 0);
        if (x->parked && !x->sitting_out && c->batches - x->probed_at >= PROBE_EVERY)
            x->probe = 1, x->probed_at = c->batches;
    }
    if (!changed)
        return;
    share_decision *d = &c->decisions[c->ndecisions < MAX_SHARE_DECISIONS ? c->ndecisions++
                                                                           : MAX_SHARE_DECISIONS - 1];
    d->t = clock_now_s() - c->start, d->taking = ntaking;
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
    sync_state *ss = sync_of(c);
    if (ss->local_cost > 0)
        return ss->local_cost;
    int started = 0;
    for (int i = 0; ss->claims && i < ss->here_chunks; i++)
        started += atomic_load(&ss->claims[i]) == RT_CLAIM_HERE;
    rt_stats st;
    rt_stats_get(c->rt, &st);
    double busy = st.busy_s - ss->last_busy;
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
static double node_finishes(const coordinator *c, const peer_node *n, int chunks)
{
    sync_state *ss = sync_of(c);
    double cost = n->cost > 0 ? n->cost : ss->local_cost > 0 ? ss->local_cost : 1e-3;
    return n->lag + ceil((double)chunks / n->running) * cost;
}

/* Locked. Whether a probe is out (a slot holds one). */
static int probe_out(const coordinator *c)
{
    sync_state *ss = sync_of(c);
    for (int i = 0; i < ss->nslots; i++)
        if (ss->slots[i].state != SLOT_FREE && ss->slots[i].probe)
            return 1;
    return 0;
}

/* Locked. The batch's chunks dealt one by one to whichever member would finish its share first.
 * So a fast link or a fast node gets more, and a node whose lag outweighs a chunk gets fewer.
 * At least one chunk stays here, so that its speed stays measured. Returns the chunks the
 * nodes take; each node's share is its quota. A node due a probe is named in probe_node (which
 * the caller cleared). */
static int deal_chunks(coordinator *c, int nchunks)
{
    sync_state *ss = sync_of(c);
    deal_member m[MAX_NODES + 1];
    int quota[MAX_NODES + 1];
    double node_default = ss->local_cost > 0 ? ss->local_cost : 1e-3;
    m[0] = (deal_member){0, here_cost(c), rt_active_workers(c->rt)};
    for (int i = 0; i < c->nnodes; i++) {
        peer_node *n = &c->nodes[i];
        m[1 + i] = (deal_member){n->lag, n->cost > 0 ? n->cost : node_default,
                                 sync_takes_work(n) ? n->running : 0};
    }
    int remote = cluster_share_deal(m, c->nnodes + 1, nchunks, quota);
    for (int i = 0; i < c->nnodes; i++)
        c->nodes[i].quota = quota[1 + i], c->nodes[i].taken = 0;
    /* pinned by hand, every node takes work; else a probe keeps measured a parked node due for
     * one, or a node this deal left without work for PROBE_EVERY batches */
    for (int i = 0; i < c->nnodes; i++) {
        peer_node *n = &c->nodes[i];
        if (!n->ready || n->gone || n->quota)
            continue;
        if (c->cfg->all_nodes && remote < nchunks - 1)
            n->quota = 1, remote++;
        else if (!c->cfg->all_nodes && ss->probe_node < 0 &&
                 (n->parked ? n->probe : c->batches - n->fed_at >= PROBE_EVERY) && !probe_out(c))
            ss->probe_node = i;
    }
    for (int i = 0; i < c->nnodes; i++) {
        peer_node *n = &c->nodes[i];
        n->batches_present += n->ready && !n->gone;
        n->batches_dealt += n->quota > 0;
    }
    return remote;
}

/* Chunks node n has yet to start: those in flight or owed to it, and those it is recalling. */
static int ahead_of(const peer_node *n)
{
    return n->inflight + (n->quota > n->taken ? n->quota - n->taken : 0) + n->recalls;
}

/* Locked. Node n, holding the batch's parameters with a worker that nothing is owed to, steals
 * chunks dealt here that have not started, the last first, while it would finish one before
 * this machine gets to it. The claim keeps this machine's tasks off a stolen chunk. */
static void steal_here_for(coordinator *c, peer_node *n)
{
    sync_state *ss = sync_of(c);
    while (ss->claims && sync_takes_work(n) && n->params_seq == ss->batch.seq) {
        int waiting = 0, k = -1;
        for (int i = 0; i < ss->here_chunks; i++)
            if (atomic_load(&ss->claims[i]) == RT_CLAIM_OPEN) {
                waiting++;
                k = sync_slot_of(c, ss->batch.seq, i) ? k : i;   /* not one out as a probe */
            }
        int ahead = ahead_of(n);
        if (k < 0 || ahead >= n->running ||
            node_finishes(c, n, ahead + 1) >= here_finishes(c, waiting))
            return;
        remote_args a = {ss->batch.seq, ss->batch.epoch, k, ss->batch.size, 0, -1, ss->batch.batch,
                         &ss->claims[k]};
        slot *s = sync_slot_new(c, &a, ss->batch.packed, SLOT_QUEUED);
        if (!s || !(s->held = malloc(sizeof(float) * (size_t)c->nparams))) {
            if (s)
                sync_slot_free(s);
            return;   /* no room to hold what it sends: this machine computes it */
        }
        int open = RT_CLAIM_OPEN;
        if (!atomic_compare_exchange_strong(&ss->claims[k], &open, RT_CLAIM_ELSEWHERE)) {
            sync_slot_free(s);
            continue;   /* a worker here started it meanwhile */
        }
        n->stolen++, c->stolen_chunks++;
        ss->last_local--, c->local_chunks--;
        if (sync_send_chunk(c, n, s))
            return;   /* the hub closes that node; the chunk waits in the queue */
    }
}

/* Seconds from now until node v returns chunk s: the estimate when it was sent (the chunks
 * ahead of it on v's workers, at v's cost), with that cost stretched when v's oldest chunk in
 * flight is already later than its own estimate (a node slower than measured, or not yet
 * measured). */
static double node_returns(const coordinator *c, const peer_node *v, const slot *s, const slot *oldest,
                           double now)
{
    sync_state *ss = sync_of(c);
    double cost = v->cost > 0 ? v->cost : ss->local_cost > 0 ? ss->local_cost : 1e-3;
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
    sync_state *ss = sync_of(c);
    const slot *oldest[MAX_NODES] = {NULL};
    for (int i = 0; i < ss->nslots; i++) {
        const slot *s = &ss->slots[i];
        if (s->state == SLOT_SENT && s->node >= 0 &&
            (!oldest[s->node] || s->sent_at < oldest[s->node]->sent_at))
            oldest[s->node] = s;
    }
    double now = clock_now_s(), gain = 0;
    slot *best = NULL;
    for (int i = 0; i < ss->nslots; i++) {
        slot *s = &ss->slots[i];
        if (!sync_waits_behind(c, s) || s->node == thief || (seq != UINT64_MAX && s->a.seq != seq))
            continue;
        const peer_node *v = &c->nodes[s->node];
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
    if (coordinator_send_to(c, &c->nodes[s->node], MSG_RECALL, buf, proto_recall_encode(&r, buf, sizeof buf),
                NULL, 0))
        return;   /* the hub closes that node: its chunks come back then */
    s->recalled = 1, s->thief = thief;
    if (thief >= 0)
        c->nodes[thief].recalls++;
    else
        sync_of(c)->here_recalls++;
}

/* Locked. Node n, with a worker free still, asks for a chunk back that it would return sooner
 * than the node holding it. */
static void recall_for(coordinator *c, peer_node *n)
{
    int ahead = ahead_of(n);
    if (!sync_takes_work(n) || ahead >= n->running)
        return;
    slot *s = worth_recalling(c, (int)(n - c->nodes), n->params_seq, node_finishes(c, n, ahead + 1));
    if (s)
        send_recall(c, s, (int)(n - c->nodes));
}

/* Locked, each tick of the fallback while a chunk waits on a node behind others: an idle peer_node
 * that has reported nothing since may ask for it, and so may this machine while one of its
 * workers sleeps for want of tasks and its fallback engine is free (one chunk at a time). */
void sync_on_tick(coordinator *c)
{
    for (int i = 0; i < c->nnodes; i++)
        recall_for(c, &c->nodes[i]);
    if (sync_of(c)->here_recalls || sync_first_in(c, SLOT_BACK) || rt_idle_workers(c->rt) < 1)
        return;
    slot *s = worth_recalling(c, THIEF_HERE, UINT64_MAX, sync_fallback_cost(c, rt_idle_workers(c->rt)));
    if (s)
        send_recall(c, s, THIEF_HERE);
}

void sync_steal_for(coordinator *c, peer_node *n)
{
    steal_here_for(c, n);
    recall_for(c, n);
}

void sync_recall_over(coordinator *c, slot *s, int outcome)
{
    if (s->thief >= 0)
        c->nodes[s->thief].recalls--;
    else if (s->thief == THIEF_HERE)
        sync_of(c)->here_recalls--;
    s->recalled = outcome;
}

/* Asked for each training batch: how many of its chunks the nodes take (deal_chunks); when
 * some do, the nodes may steal the others. */
int sync_remote_chunks(void *ctx, remote_batch *b)
{
    coordinator *c = ctx;
    sync_state *ss = sync_of(c);
    int nchunks = b->nchunks;
    pthread_mutex_lock(&c->lock);
    int remote = 0;
    c->batches++;
    ss->probe_node = -1;
    if (coordinator_ready_nodes(c) && nchunks > 1) {
        measure_here(c);
        if (!c->cfg->all_nodes)   /* else the machines are pinned by hand */
            choose_nodes(c, (double)c->cfg->batch / nchunks);
        remote = deal_chunks(c, nchunks);
    }
    ss->last_local = nchunks - remote;
    c->local_chunks += nchunks - remote;
    for (int k = 0; k < nchunks; k++)   /* under the lock: no steal from the batch before */
        atomic_store(&b->claims[k], RT_CLAIM_OPEN);
    ss->batch = *b;
    ss->here_chunks = nchunks - remote;
    ss->claims = remote ? b->claims : NULL;
    ss->probe_seq = ss->probe_node >= 0 ? b->seq : UINT64_MAX;
    b->params_wanted = ss->probe_node >= 0;
    sync_send_probe(c);   /* now if the nodes were sent the batch's parameters already */
    pthread_mutex_unlock(&c->lock);
    return remote;
}
