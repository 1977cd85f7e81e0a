/* Periodic averaging simulated: an epoch in rounds of `every` batches; each round's chunk-batches
 * split as the coordinator splits them (cluster_share_balance, each node's lag from its link),
 * every node with a share sent the parameters (PARAMS, or a DELTA with compress = on) and its
 * ROUND, its share computed on its workers, its MODEL back; the round ends with the last model
 * in. A node failing in a round loses its share of it, as the real one does. Machine 0 is the
 * coordinator. overlap = on is simulated as without it (each round waits for its average). */
#include "engine/sim/sim_internal.h"

#include "engine/cluster/model_delta.h"
#include "engine/cluster/proto.h"
#include "engine/placement/cluster_share.h"

#include <math.h>
#include <stdlib.h>

typedef struct round_sizes {
    size_t params, delta, round, model;
} round_sizes;

static round_sizes message_sizes(const sim_state *st)
{
    uint8_t buf[256];
    msg_round w = {0};
    msg_result r = {0};
    size_t floats = sizeof(float) * (size_t)st->m.nparams;
    size_t delta = model_delta_bytes(st->layer_n, st->param_layers);
    int compress = st->s->job.compress;
    return (round_sizes){PROTO_PARAMS_HEAD + floats, PROTO_DELTA_HEAD + delta, proto_round_encode(&w, buf, sizeof buf),
                         proto_result_head(&r, buf, sizeof buf) + (compress ? delta : floats)};
}

/* Seconds a machine takes for `units` chunk-batches over `batches` batches: each batch's chunks
 * on its workers, a share that ends part way through a chunk holding it in some of the batches
 * only (as the coordinator's split does). */
static double share_s(const sim_state *st, int i, long units, long batches)
{
    const sim_node *n = &st->node[i];
    long base = units / batches, extra = units - base * batches;   /* batches with one chunk more */
    double waves = (double)(batches - extra) * (double)((base + n->workers - 1) / n->workers) +
                   (double)extra * (double)((base + n->workers) / n->workers);
    return waves * n->chunk_s;
}

/* One round of `batches` batches of `size` samples from t; its end. */
static double round_at(sim_state *st, double t, long batches, int size, share_cost *cost, double *u,
                       int *member, const round_sizes *z, int first)
{
    int nchunks = st->plan.nchunks, m = 0;
    for (int i = 0; i < st->n; i++) {
        if (i && !sim_present(st, i, t))
            continue;
        const sim_link *l = scenario_link(st->s, st->node[0].group, st->node[i].group);
        double travel = i ? 2 * l->latency_s + (double)(z->params + z->model) * 8 / l->bits_per_s : 0;
        member[m] = i, cost[m++] = (share_cost){st->node[i].chunk_s / st->node[i].workers, travel};
    }
    double units = (double)batches * nchunks, upto = 0, end = t, per_chunk = (double)size / nchunks;
    cluster_share_balance(cost, m, units, u);
    for (int j = 1; j < m; j++) {
        int i = member[j];
        double cap = (double)(nchunks - 1) * batches;   /* the coordinator keeps a chunk a batch */
        double share = upto + u[j] < cap ? u[j] : cap - upto;
        long whole = lround(share);
        if (whole <= 0)
            continue;
        upto += (double)whole;
        double a = sim_send(st, 0, i, st->s->job.compress && !first ? z->delta : z->params,
                            st->s->job.compress && !first ? MSG_DELTA : MSG_PARAMS, 0, t);
        a = sim_send(st, 0, i, z->round, MSG_ROUND, 0, a);
        double dur = share_s(st, i, whole, batches);
        int busy = st->node[i].workers;
        if (st->node[i].fail_at < a + dur) {   /* its share is lost with it */
            sim_compute(st, i, a, st->node[i].fail_at - a, busy);
            continue;
        }
        sim_compute(st, i, a, dur, busy);
        double done = sim_send(st, i, 0, z->model, MSG_MODEL, 1, a + dur);
        st->r->m[i].chunks += whole, st->r->m[i].samples += lround(per_chunk * (double)whole);
        end = done > end ? done : end;
    }
    long mine = lround(units - upto);
    double dur = share_s(st, 0, mine, batches);
    sim_compute(st, 0, t, dur, st->node[0].workers);
    st->r->m[0].chunks += mine, st->r->m[0].samples += lround(per_chunk * (double)mine);
    st->r->rounds++;
    return t + dur > end ? t + dur : end;
}

double sim_average_run(sim_state *st, char *err, size_t errlen)
{
    share_cost *cost = malloc(sizeof *cost * (size_t)st->n);
    double *u = malloc(sizeof *u * (size_t)st->n);
    int *member = malloc(sizeof *member * (size_t)st->n);
    round_sizes z = message_sizes(st);
    double t = 0;
    if (!cost || !u || !member) {
        snprintf(err, errlen, "out of memory for %d machines", st->n);
        t = -1;
    }
    long samples = st->s->samples, every = st->s->every;
    for (int e = 0; t >= 0 && e < st->s->epochs; e++) {
        double t0 = t;
        for (long b = 0; b < st->batches && sim_present(st, 0, t); b += every) {
            long batches = b + every <= st->batches ? every : st->batches - b;
            int size = (int)(samples < st->plan.batch ? samples : st->plan.batch);
            t = round_at(st, t, batches, size, cost, u, member, &z, e == 0 && b == 0);
        }
        sim_epoch_end(st, e, t0, t);
    }
    free(cost), free(u), free(member);
    return t;
}
