/* Synchronous training simulated: each batch's chunks dealt as the coordinator deals them
 * (cluster_share_deal, with each node's lag from its link), the parameters sent to every node
 * taking work (a LAYER per layer), a WORK per chunk, the node's chunks on its workers (summed:
 * a GRAD per layer) and a RESULT per chunk back; the batch
 * ends with the last gradient in. A node that fails mid-batch has its chunks computed by the
 * coordinator from then. Machine 0 is the coordinator. */
#include "engine/sim/sim_internal.h"

#include "engine/cluster/proto.h"
#include "energy/power_model.h"
#include "engine/placement/cluster_share.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct sync_sizes {
    size_t work, result;
} sync_sizes;

static sync_sizes message_sizes(void)
{
    uint8_t buf[256];
    msg_work w = {0};
    msg_result r = {0};
    return (sync_sizes){proto_work_encode(&w, buf, sizeof buf), proto_result_head(&r, buf, sizeof buf)};
}

/* Seconds node i's worker spends sealing a batch's gradients for the wire (a GRAD a layer). */
static double seal_s(const sim_state *st, int i)
{
    return st->node[i].seal_s_per_byte * sizeof(float) * (double)st->m.nparams;
}

/* What a round trip adds to node i's chunks (the coordinator's `lag`): the latency both ways,
 * the parameters out and the gradients back, and their sealing on the node's worker. */
static double lag_of(const sim_state *st, int i)
{
    const sim_link *l = scenario_link(st->s, st->node[0].group, st->node[i].group);
    double bytes = 2.0 * sizeof(float) * (double)st->m.nparams;
    return 2 * l->latency_s + bytes * 8 / l->bits_per_s + seal_s(st, i);
}

/* The policy's choice of nodes (cluster_share.h), as the coordinator makes it once measured; a
 * real coordinator holds 64 nodes at most, so larger scenarios keep every node. */
#define POLICY_MAX_MEMBERS 64
static void choose(const sim_state *st, double t, const int *present, int *in)
{
    const sim_scenario *s = st->s;
    if (s->policy < 0 || st->n > POLICY_MAX_MEMBERS) {
        for (int i = 0; i < st->n; i++)
            in[i] = present[i];
        return;
    }
    member_figures m[POLICY_MAX_MEMBERS] = {{0, 0, 0}};
    int index[POLICY_MAX_MEMBERS], k = 0;
    for (int i = 0; i < st->n; i++) {
        in[i] = 0;
        if (!present[i])
            continue;
        index[k] = i, m[k++] = (member_figures){st->r->m[i].img_per_s, sim_watts(st, i, st->node[i].workers),
                                                sim_carbon_at(st, i, t)};
    }
    policy_limits l = {(placement_policy)s->policy, 0, -1, s->carbon};
    int take[POLICY_MAX_MEMBERS];
    cluster_choose(&l, m, k, take);
    for (int j = 0; j < k; j++)
        in[index[j]] = take[j];
}

/* Node i's q chunks from t: the parameters and WORKs out, its chunks, the gradients back; when
 * they are all in. A node failing before the end returns -(the time it failed). */
static double node_batch(sim_state *st, int i, int q, double t, const sync_sizes *z)
{
    for (int l = 0; l < st->param_layers; l++)
        t = sim_send(st, 0, i, PROTO_LAYER_HEAD + sizeof(float) * (size_t)st->layer_n[l], MSG_LAYER, 0, t);
    for (int k = 0; k < q; k++)
        t = sim_send(st, 0, i, z->work, MSG_WORK, 0, t);
    const sim_node *n = &st->node[i];
    double dur = sim_chunks_s(st, i, q);
    int busy = q < n->workers ? q : n->workers;
    if (n->fail_at < t + dur) {
        sim_compute(st, i, t, n->fail_at - t, busy);
        return -n->fail_at;
    }
    sim_compute(st, i, t, dur, busy);
    t += dur;
    sim_compute(st, i, t, seal_s(st, i), 1);   /* its worker seals what it sends */
    t += seal_s(st, i);
    for (int l = 0; l < st->param_layers; l++)   /* the chunks of one WORK run summed: a GRAD a layer */
        t = sim_send(st, i, 0, PROTO_LAYER_HEAD + sizeof(float) * (size_t)st->layer_n[l], MSG_GRAD, 1, t);
    for (int k = 0; k < q; k++)
        t = sim_send(st, i, 0, z->result, MSG_RESULT, 1, t);
    st->r->m[i].chunks += q;
    return t;
}

/* One batch of `size` samples from t: its end. */
static double batch(sim_state *st, double t, int size, deal_member *dm, int *quota, int *present,
                    int *in, const sync_sizes *z)
{
    int nchunks = st->plan.nchunks;
    for (int i = 0; i < st->n; i++)
        present[i] = sim_present(st, i, t);
    choose(st, t, present, in);
    for (int i = 0; i < st->n; i++)
        dm[i] = (deal_member){i ? lag_of(st, i) : 0, st->node[i].chunk_s, in[i] || !i ? st->node[i].workers : 0};
    int remote = cluster_share_deal(dm, st->n, nchunks, quota);
    for (int i = 1; st->s->job.all_nodes && i < st->n; i++)   /* pinned: every node takes one */
        if (present[i] && !quota[i] && remote < nchunks - 1)
            quota[i] = 1, quota[0]--, remote++;
    int here = quota[0];
    double end = t, here_at = t, per_chunk = (double)size / nchunks;
    for (int i = 1; i < st->n; i++) {
        if (!quota[i])
            continue;
        double done = node_batch(st, i, quota[i], t, z);
        if (done < 0)   /* lost: the coordinator computes its chunks once it knows */
            here += quota[i], here_at = -done > here_at ? -done : here_at;
        else
            st->r->m[i].samples += lround(per_chunk * quota[i]), end = done > end ? done : end;
    }
    double dur = sim_chunks_s(st, 0, quota[0]);
    sim_compute(st, 0, t, dur, quota[0] < st->node[0].workers ? quota[0] : st->node[0].workers);
    double mine = t + dur;
    if (here > quota[0]) {   /* a lost node's chunks, after its own and its loss */
        double extra = sim_chunks_s(st, 0, here - quota[0]);
        mine = (mine > here_at ? mine : here_at);
        sim_compute(st, 0, mine, extra, st->node[0].workers);
        mine += extra;
    }
    st->r->m[0].chunks += here, st->r->m[0].samples += lround(per_chunk * here);
    return mine > end ? mine : end;
}

double sim_sync_run(sim_state *st, char *err, size_t errlen)
{
    sync_sizes z = message_sizes();
    deal_member *dm = malloc(sizeof *dm * (size_t)st->n);
    int *quota = malloc(sizeof(int) * (size_t)st->n * 3);
    if (!dm || !quota) {
        free(dm), free(quota);
        snprintf(err, errlen, "out of memory for %d machines", st->n);
        return -1;
    }
    double t = 0;
    long samples = st->s->samples;
    for (int e = 0; e < st->s->epochs; e++) {
        double t0 = t;
        for (long b = 0; b < st->batches && sim_present(st, 0, t); b++) {
            int size = (int)(samples - b * st->plan.batch < st->plan.batch ? samples - b * st->plan.batch : st->plan.batch);
            t = batch(st, t, size, dm, quota, quota + st->n, quota + 2 * st->n, &z);
        }
        sim_epoch_end(st, e, t0, t);
    }
    free(dm), free(quota);
    return t;
}
