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
#include "engine/placement/participation.h"

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

/* The workers busy on average while a share of `units` chunks takes dur: a last wave may fill
 * some only. */
static double busy_workers(const sim_state *st, int i, long units, double dur)
{
    double waves = dur / st->node[i].chunk_s;
    return waves > 0 ? fmin((double)units / waves, st->node[i].workers) : 0;
}

/* [placement] participation at time t (participation.h, as the coordinator decides): take[i]
 * for every machine present; machine 0 always takes part. */
static void participation_at(sim_state *st, double t, double samples_left, participant *p,
                             int *take, participation_why *why)
{
    const sim_scenario *s = st->s;
    double spent = 0, per_chunk = (double)st->plan.batch / st->plan.nchunks;
    for (int i = 0; i < st->n; i++) {
        const sim_node *x = &st->node[i];
        const sim_site *site = sim_site_of(st, i);
        const grid_trace *f = site && site->trace.n ? &site->trace : NULL;
        double origin = f ? (s->start > 0 ? s->start : f->t[0]) : 0;
        double measured = x->round_active_s > 0 ? (double)st->r->m[i].samples / x->round_active_s : 0;
        p[i] = (participant){measured > 0 ? measured : x->workers / x->chunk_s * per_chunk,
                             sim_watts(st, i, x->workers) - sim_watts(st, i, 0),
                             sim_carbon_at(st, i, t), sim_renewable_at(st, i, t), f, origin + t,
                             origin + s->green_deadline_s};
        spent += st->r->m[i].grams;
    }
    participation_input in = {(participation_policy)s->green_policy, s->green_g_per_kwh, s->budget_g,
                              s->random_share, s->green_deadline_s > 0 ? fmax(s->green_deadline_s - t, 1e-3) : -1,
                              samples_left, spent, st->last_round_s, s->job.seed, (uint64_t)st->r->rounds};
    participation_choose(&in, p, st->n, 1, take, why);
    for (int i = 1; i < st->n; i++)
        st->r->m[i].rounds_out += !take[i] && sim_present(st, i, t);
}

/* One round of `batches` batches of `size` samples from t; its end. */
static double round_at(sim_state *st, double t, long batches, int size, share_cost *cost, double *u,
                       int *member, const round_sizes *z, int first, const int *take)
{
    int nchunks = st->plan.nchunks, m = 0;
    for (int i = 0; i < st->n; i++) {
        if (i && (!sim_present(st, i, t) || !take[i]))
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
        double busy = busy_workers(st, i, whole, dur);
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
    sim_compute(st, 0, t, dur, busy_workers(st, 0, mine, dur));
    st->r->m[0].chunks += mine, st->r->m[0].samples += lround(per_chunk * (double)mine);
    st->r->rounds++;
    return t + dur > end ? t + dur : end;
}

double sim_average_run(sim_state *st, char *err, size_t errlen)
{
    share_cost *cost = malloc(sizeof *cost * (size_t)st->n);
    double *u = malloc(sizeof *u * (size_t)st->n);
    int *member = malloc(sizeof *member * (size_t)st->n), *take = malloc(sizeof *take * (size_t)st->n);
    participant *p = malloc(sizeof *p * (size_t)st->n);
    participation_why *why = malloc(sizeof *why * (size_t)st->n);
    round_sizes z = message_sizes(st);
    double t = 0;
    if (!cost || !u || !member || !take || !p || !why) {
        snprintf(err, errlen, "out of memory for %d machines", st->n);
        t = -1;
    }
    long samples = st->s->samples, every = st->s->every;
    for (int e = 0; t >= 0 && e < st->s->epochs; e++) {
        double t0 = t;
        for (long b = 0; b < st->batches && sim_present(st, 0, t); b += every) {
            long batches = b + every <= st->batches ? every : st->batches - b;
            int size = (int)(samples < st->plan.batch ? samples : st->plan.batch);
            double left = (double)samples * (st->s->epochs - e) - (double)b * size;
            participation_at(st, t, left, p, take, why);
            double began = t;
            t = round_at(st, t, batches, size, cost, u, member, &z, e == 0 && b == 0, take);
            st->last_round_s = t - began;
            for (int i = 0; i < st->n; i++)   /* its speed as the coordinator measures it */
                st->node[i].round_active_s += take[i] && sim_present(st, i, began) ? t - began : 0;
        }
        sim_epoch_end(st, e, t0, t);
    }
    free(cost), free(u), free(member), free(take), free(p), free(why);
    return t;
}
