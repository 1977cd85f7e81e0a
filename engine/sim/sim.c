/* The simulation's machines, links and energy; sim_run runs the scenario's mode. */
#include "engine/sim/sim_internal.h"

#include "energy/power_model.h"
#include "engine/cluster/proto.h"
#include "engine/cluster/gossip_proto.h"
#include "engine/job/participation_name.h"
#include "netio/hub.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TCP_MSS_BITS (1460 * 8.0)
#define CARBON_STEP_S 300.0      /* idle power is counted against a trace in steps this long */

static const char *traffic_name(unsigned type)
{
    return type >= GOSSIP_MSG_HELLO ? gossip_msg_name(type) : proto_msg_name(type);
}

int sim_present(const sim_state *st, int i, double t)
{
    const sim_node *n = &st->node[i];
    return t >= n->join_at && t < n->leave_at && t < n->fail_at;
}

/* A link's throughput: its bandwidth, or with loss TCP's (Mathis: MSS / RTT * 1.22 / sqrt(p)). */
static double throughput(const sim_link *l)
{
    if (l->loss <= 0)
        return l->bits_per_s;
    double rtt = 2 * l->latency_s > 1e-4 ? 2 * l->latency_s : 1e-4;
    double tcp = TCP_MSS_BITS / rtt * 1.22 / sqrt(l->loss);
    return tcp < l->bits_per_s ? tcp : l->bits_per_s;
}

static void count_traffic(sim_result *r, unsigned type, int dir, unsigned long long wire)
{
    const char *name = traffic_name(type);
    int k = 0;
    while (k < r->ntraffic && strcmp(r->traffic[k].type, name))
        k++;
    if (k == r->ntraffic) {
        if (k == CLUSTER_TRAFFIC_TYPES)
            return;
        r->traffic[r->ntraffic++] = (cluster_traffic){name, 0, 0, 0, 0};
    }
    if (dir == 0)
        r->traffic[k].sent++, r->traffic[k].sent_bytes += wire;
    else
        r->traffic[k].received++, r->traffic[k].received_bytes += wire;
}

double sim_send(sim_state *st, int a, int b, size_t payload, unsigned type, int dir, double t)
{
    sim_node *x = &st->node[a], *y = &st->node[b];
    const sim_link *l = scenario_link(st->s, x->group, y->group);
    unsigned long long wire = netio_wire_bytes(payload);
    double dur = (double)wire * 8 / throughput(l);
    double start = t > x->up_free ? t : x->up_free;
    x->up_free = start + dur;
    double in = start + l->latency_s > y->down_free ? start + l->latency_s : y->down_free;
    y->down_free = in + dur;
    st->r->m[a].bytes_sent += wire, st->r->m[b].bytes_received += wire;
    count_traffic(st->r, type, dir, wire);
    return in + dur;
}

double sim_carbon_at(const sim_state *st, int i, double t)
{
    const sim_scenario *s = st->s;
    int site = s->groups[st->node[i].group].site;
    if (site < 0)
        return s->carbon;
    const sim_site *x = &s->sites[site];
    if (!x->trace.n)
        return x->carbon >= 0 ? x->carbon : s->carbon;
    return grid_trace_at(&x->trace, (s->start > 0 ? s->start : x->trace.t[0]) + t);
}

const sim_site *sim_site_of(const sim_state *st, int i)
{
    int site = st->s->groups[st->node[i].group].site;
    return site < 0 ? NULL : &st->s->sites[site];
}

double sim_renewable_at(const sim_state *st, int i, double t)
{
    const sim_scenario *s = st->s;
    int site = s->groups[st->node[i].group].site;
    if (site < 0 || !s->sites[site].renewable.n)
        return 0;
    const grid_trace *r = &s->sites[site].renewable;
    return grid_trace_at(r, (s->start > 0 ? s->start : r->t[0]) + t);
}

double sim_watts(const sim_state *st, int i, double busy)
{
    const sim_profile *p = &st->s->groups[st->node[i].group].profile;
    return power_model_profile_watts(p->power, p->cpus, busy);
}

/* Joules at `w` watts from t0 to t1, counted against the machine's grid in steps; the
 * machine's renewable power, less `below` watts it covers already (its idle draw), counts no
 * grams. */
static void spend(sim_state *st, int i, double t0, double t1, double w, double below)
{
    sim_machine_result *m = &st->r->m[i];
    for (double t = t0; t < t1; t += CARBON_STEP_S) {
        double end = t + CARBON_STEP_S < t1 ? t + CARBON_STEP_S : t1, mid = (t + end) / 2;
        double own = fmin(fmax(sim_renewable_at(st, i, mid) - below, 0), w);
        m->joules += w * (end - t);
        m->grams += (w - own) * (end - t) * sim_carbon_at(st, i, mid) / 3.6e6;
    }
}

void sim_compute(sim_state *st, int i, double t, double dur, double workers)
{
    if (dur <= 0 || workers <= 0)
        return;
    sim_machine_result *m = &st->r->m[i];
    m->compute_s += dur, m->worker_s += dur * workers;
    spend(st, i, t, t + dur, sim_watts(st, i, workers) - sim_watts(st, i, 0), sim_watts(st, i, 0));
}

double sim_chunks_s(const sim_state *st, int i, int chunks)
{
    const sim_node *n = &st->node[i];
    return ceil((double)chunks / n->workers) * n->chunk_s;
}

void sim_epoch_end(sim_state *st, int e, double t0, double t1)
{
    double joules = 0, grams = 0, samples = 0;
    for (int i = 0; i < st->n; i++) {
        const sim_node *n = &st->node[i];
        double from = t0 > n->join_at ? t0 : n->join_at;
        double to = t1 < n->leave_at ? t1 : n->leave_at;
        to = to < n->fail_at ? to : n->fail_at;
        if (to > from) {
            spend(st, i, from, to, sim_watts(st, i, 0), 0);
            st->r->m[i].present_s += to - from;
        }
        joules += st->r->m[i].joules, grams += st->r->m[i].grams, samples += (double)st->r->m[i].samples;
    }
    st->r->epochs[e] = (sim_epoch){t1 - t0, samples - st->samples_before, joules - st->joules_before,
                                   grams - st->grams_before};
    st->joules_before = joules, st->grams_before = grams, st->samples_before = samples;
}

/* ---- setup ---- */

/* Machines of one host share its cores: each one's speed scaled by the host's cores over the
 * workers on it (all busy at once: what a synchronous batch does). */
static double host_share(const sim_scenario *s, int group)
{
    const sim_group *g = &s->groups[group];
    if (!g->host[0])
        return 1;
    int workers = 0;
    for (int i = 0; i < s->ngroups; i++)
        if (!strcmp(s->groups[i].host, g->host))
            workers += s->groups[i].workers * s->groups[i].count;
    return workers > g->profile.cpus ? (double)g->profile.cpus / workers : 1;
}

static int make_nodes(sim_state *st, char *err, size_t errlen)
{
    const sim_scenario *s = st->s;
    st->n = (int)s->machines;
    st->node = calloc((size_t)st->n, sizeof *st->node);
    st->r->m = calloc((size_t)st->n, sizeof *st->r->m);
    if (!st->node || !st->r->m)
        return snprintf(err, errlen, "out of memory for %d machines", st->n), -1;
    st->r->n = st->n;
    int k = 0;
    double per_chunk = (double)st->plan.batch / st->plan.nchunks;
    for (int g = 0; g < s->ngroups; g++) {
        const sim_group *grp = &s->groups[g];
        const sim_profile *p = &grp->profile;
        double img = profile_img_per_s(p, grp->workers, st->m.flops_per_sample);
        img *= host_share(s, g) / grp->slowdown;
        double seal = p->seal_bytes_per_s > 0
                          ? (p->slowdown > 1 ? p->slowdown : 1) * grp->slowdown / host_share(s, g) / p->seal_bytes_per_s
                          : 0;
        for (int c = 0; c < grp->count; c++, k++) {
            sim_node *n = &st->node[k];
            *n = (sim_node){g, grp->workers, per_chunk * grp->workers / img, seal, grp->join_at,
                            grp->leave_at, grp->fail_at, 0, 0, grp->join_at, 0};
            sim_machine_result *m = &st->r->m[k];
            if (grp->count > 1)
                snprintf(m->name, sizeof m->name, "%s-%d", grp->name, c + 1);
            else
                snprintf(m->name, sizeof m->name, "%s", grp->name);
            m->group = g, m->img_per_s = img, m->chunk_s = n->chunk_s;
        }
    }
    return 0;
}

static int make_model(sim_state *st, char *err, size_t errlen)
{
    const sim_scenario *s = st->s;
    if (model_build(&st->m, s->job.path, s->job.layers, s->job.nlayers, s->channels, s->height, s->width,
                    s->classes, 0, err, errlen))
        return -1;
    job_config cfg = s->job;
    plan_make(&st->plan, &cfg, &st->m, 0);
    for (int l = 0; l < st->m.nlayers; l++)
        if (st->m.layers[l].nparams)
            st->layer_n[st->param_layers++] = st->m.layers[l].nparams;
    st->batches = (s->samples + st->plan.batch - 1) / st->plan.batch;
    st->r->flops_per_sample = st->m.flops_per_sample, st->r->nparams = st->m.nparams;
    st->r->nchunks = st->plan.nchunks;
    return 0;
}

static void find_busiest(sim_result *r)
{
    unsigned long long most = 0;
    for (int i = 0; i < r->n; i++)
        if (r->m[i].bytes_sent + r->m[i].bytes_received > most)
            most = r->m[i].bytes_sent + r->m[i].bytes_received, r->busiest = i;
}

int sim_run(const sim_scenario *s, sim_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    sim_state st = {.s = s, .r = out};
    out->nepochs = s->epochs;
    out->epochs = calloc((size_t)s->epochs, sizeof *out->epochs);
    int rc = !out->epochs ? (snprintf(err, errlen, "out of memory"), -1)
                          : make_model(&st, err, errlen) || make_nodes(&st, err, errlen) ? -1 : 0;
    double end = -1;
    if (!rc && s->green_policy != PARTICIPATION_ALWAYS && s->mode != CLUSTER_AVERAGE)
        rc = -1, snprintf(err, errlen, "%s: green_policy = %s is simulated in mode = average only",
                          s->path, participation_name((participation_policy)s->green_policy));
    if (!rc)
        end = s->mode == CLUSTER_SYNC      ? sim_sync_run(&st, err, errlen)
              : s->mode == CLUSTER_AVERAGE ? sim_average_run(&st, err, errlen)
                                           : sim_gossip_run(&st, err, errlen);
    if (!rc && end >= 0) {
        out->seconds = end;
        for (int i = 0; i < out->n; i++)
            out->joules += out->m[i].joules, out->grams += out->m[i].grams;
        for (int e = 0; e < out->nepochs; e++)
            out->samples += out->epochs[e].samples;
        find_busiest(out);
    }
    free(st.node);
    model_free(&st.m);
    if (rc || end < 0)
        sim_result_free(out);
    return rc || end < 0 ? -1 : 0;
}

void sim_result_free(sim_result *r)
{
    free(r->m);
    free(r->epochs);
    memset(r, 0, sizeof *r);
}

void sim_mode_name(const sim_scenario *s, char *out, size_t cap)
{
    if (s->mode == CLUSTER_SYNC)
        snprintf(out, cap, "synchronous");
    else if (s->mode == CLUSTER_AVERAGE)
        snprintf(out, cap, "averaging every %d", s->every);
    else
        snprintf(out, cap, "gossip %s every %d", config_gossip_topology_name(s->topology), s->every);
}
