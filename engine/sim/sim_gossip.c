/* Gossip simulated: every machine a peer with 1/n of the samples (shard = auto); rounds of
 * `every` local steps, then a PUSH of its model to its targets (gossip_targets: the real
 * topology, over the peers up at that round) unless the participation draw (gossip_takes_part)
 * sits it out, and a wait for the pushes it expects; a peer's next round starts when its own
 * steps are done and its expected pushes are in. A failed or departed peer sends nothing and is
 * waited for by no one (the real peers see its link drop). The end: a FINAL from every peer to
 * every other (up to 64 peers, what the real mesh holds). */
#include "engine/sim/sim_internal.h"

#include "engine/cluster/gossip_proto.h"
#include "engine/cluster/gossip_topology.h"

#include <math.h>
#include <stdlib.h>

typedef struct gossip_scratch {
    int *active, *targets;
    uint64_t *ids;
    double *finish, *wait;
    unsigned char *part;
} gossip_scratch;

static size_t push_bytes(const sim_state *st, unsigned type)
{
    uint8_t buf[128];
    gossip_model_msg m = {0};
    return gossip_model_head(type, &m, buf, sizeof buf) + sizeof(float) * (size_t)st->m.nparams;
}

/* Round `round` of `steps` local steps for the peers up; returns the last peer's new clock. */
static double gossip_round(sim_state *st, gossip_scratch *g, uint64_t round, int steps, long step_samples)
{
    const sim_scenario *s = st->s;
    int na = 0;
    for (int i = 0; i < st->n; i++)
        if (sim_present(st, i, st->node[i].clock > st->node[i].join_at ? st->node[i].clock : st->node[i].join_at))
            g->active[na] = i, g->ids[na++] = (uint64_t)i + 1;
    double last = 0;
    for (int a = 0; a < na; a++) {
        int i = g->active[a];
        sim_node *n = &st->node[i];
        n->clock = n->clock > n->join_at ? n->clock : n->join_at;
        double dur = steps * sim_chunks_s(st, i, st->plan.nchunks);
        int busy = st->plan.nchunks < n->workers ? st->plan.nchunks : n->workers;
        double end = n->clock + dur < n->fail_at ? n->clock + dur : n->fail_at;
        sim_compute(st, i, n->clock, end - n->clock, busy);
        g->finish[a] = n->clock + dur, g->wait[a] = g->finish[a];
        g->part[a] = g->finish[a] <= n->fail_at && g->finish[a] <= n->leave_at &&
                     gossip_takes_part(s->job.seed, g->ids[a], round, s->participation);
        if (g->finish[a] <= n->fail_at)
            st->r->m[i].samples += step_samples;
    }
    size_t push = push_bytes(st, GOSSIP_MSG_PUSH);
    for (int a = 0; a < na; a++) {
        if (!g->part[a])
            continue;
        int k = gossip_targets(s->topology, s->neighbours, g->ids, na, a, round, s->job.seed, g->targets);
        double t = g->finish[a];
        for (int j = 0; j < k; j++) {
            int b = g->targets[j];
            t = sim_send(st, g->active[a], g->active[b], push, GOSSIP_MSG_PUSH, 0, t);
            if (g->part[b] && t > g->wait[b])
                g->wait[b] = t;
        }
    }
    for (int a = 0; a < na; a++) {
        sim_node *n = &st->node[g->active[a]];
        n->clock = g->wait[a];
        last = n->clock > last && n->clock <= n->fail_at ? n->clock : last;
    }
    st->r->rounds++;
    return last;
}

/* Every peer's FINAL to every other, from its clock; the last arrival. */
static double finals(sim_state *st, double t)
{
    size_t bytes = push_bytes(st, GOSSIP_MSG_FINAL);
    double end = t;
    for (int i = 0; i < st->n; i++) {
        if (!sim_present(st, i, st->node[i].clock))
            continue;
        double at = st->node[i].clock;
        for (int j = 0; j < st->n; j++)
            if (j != i && sim_present(st, j, st->node[j].clock)) {
                at = sim_send(st, i, j, bytes, GOSSIP_MSG_FINAL, 0, at);
                end = at > end ? at : end;
            }
    }
    return end;
}

double sim_gossip_run(sim_state *st, char *err, size_t errlen)
{
    gossip_scratch g = {malloc(sizeof(int) * (size_t)st->n), malloc(sizeof(int) * (size_t)st->n),
                        malloc(sizeof(uint64_t) * (size_t)st->n), malloc(sizeof(double) * (size_t)st->n),
                        malloc(sizeof(double) * (size_t)st->n), malloc((size_t)st->n)};
    double t = 0;
    if (!g.active || !g.targets || !g.ids || !g.finish || !g.wait || !g.part) {
        snprintf(err, errlen, "out of memory for %d peers", st->n);
        t = -1;
    }
    long shard = (st->s->samples + st->n - 1) / st->n, batch = st->plan.batch < shard ? st->plan.batch : shard;
    long batches = (shard + batch - 1) / batch;
    uint64_t round = 0;
    for (int e = 0; t >= 0 && e < st->s->epochs; e++) {
        double t0 = t;
        for (long b = 0; b < batches; b += st->s->every) {
            int steps = (int)(b + st->s->every <= batches ? st->s->every : batches - b);
            long step_samples = steps * batch < shard - b * batch ? steps * batch : shard - b * batch;
            double last = gossip_round(st, &g, round++, steps, step_samples);
            t = last > t ? last : t;
        }
        if (e == st->s->epochs - 1 && st->n <= CONFIG_MAX_PEERS)
            t = finals(st, t);
        sim_epoch_end(st, e, t0, t);
    }
    free(g.active), free(g.targets), free(g.ids), free(g.finish), free(g.wait), free(g.part);
    return t;
}
