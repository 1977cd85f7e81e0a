/* A gossip peer's rounds and its end (engine/cluster/gossip.h):
 *
 *   train     K local steps on this peer's data (trainer_train_share over whole batches)
 *   push      the round's targets (gossip_topology.h) get the parameters with a share of the
 *             push-sum weight w; this peer keeps w / (d + 1)
 *   wait      for the round's expected pushes, until a deadline of 3 times how late the
 *             slowest of those neighbours has been (measured, EWMA), at least 0.1 s, at most the
 *             timeout; pushes that come later are mixed into the next round (none is lost)
 *   mix       z = (w z + sum of m_i z_i) / (w + sum of m_i), w = w + sum of m_i: the weighted
 *             mean of every peer's z is kept whatever arrives when
 *
 * Pushes are summed as they arrive (acc, on the hub's thread), so memory does not grow with the
 * neighbours. */
#include "engine/cluster/gossip_internal.h"

#include "common/clock.h"
#include "engine/cluster/gossip_topology.h"
#include "engine/placement/participation.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIN_WAIT_S 0.1
#define MIN_WEIGHT 1e-3           /* a peer that gets nothing back for long keeps some say */

static void timed_wait(gossip_peer *g, double until)
{
    double now = clock_now_s(), step = until - now < 0.05 ? until - now : 0.05;
    if (step <= 0)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + (long)(step * 1e9);
    ts.tv_sec += ns / 1000000000L, ts.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(&g->changed, &g->lock, &ts);
}

static int stop_asked(const gossip_peer *g) { return g->o.stop && atomic_load(g->o.stop); }

double gossip_joules_here(gossip_peer *g, int *estimated)
{
    energy_reading r = {0};
    if (g->meter)
        energy_meter_read(g->meter, &r);
    *estimated = !g->meter || energy_meter_estimated(g->meter);
    return r.total_j;
}

/* ---- on the hub's thread ---- */

static void note_lateness(gossip_member *m, double s)
{
    m->late_s = m->late_measured ? 0.7 * m->late_s + 0.3 * s : s;
    m->late_measured = 1;
}

void gossip_on_push(gossip_peer *g, gossip_member *m, const gossip_model_msg *msg)
{
    if (m->state != MEMBER_UP)
        return;
    for (long i = 0; i < g->nparams && g->acc; i++) {
        float v;
        memcpy(&v, msg->values + 4 * i, 4);
        g->acc[i] += msg->mass * v;
    }
    g->acc_w += msg->mass;
    m->pushes_in++, g->pushes_in++;
    double now = clock_now_s();
    if (msg->round < g->ready_round) {   /* this peer left that round already */
        m->pushes_late++, g->pushes_late++;
        note_lateness(m, now - g->ready_at + (double)(g->ready_round - msg->round) * g->round_s);
    } else {
        note_lateness(m, msg->round == g->ready_round && g->ready_at > 0 ? now - g->ready_at : 0);
    }
    if (!m->pushed || msg->round > m->pushed_round)
        m->pushed_round = msg->round;
    m->pushed = 1;
    m->epoch = msg->epoch, m->batch = msg->batch, m->round = msg->round;
    m->round_s = msg->round_s, m->joules = msg->joules, m->estimated = (int)msg->estimated;
    pthread_cond_broadcast(&g->changed);
}

void gossip_on_state_ask(gossip_peer *g, gossip_member *m)
{
    if (!g->t)   /* not training yet: nothing worth starting from */
        return;
    gossip_model_msg s = {.round = g->round, .epoch = (uint32_t)g->last_epoch};
    uint8_t head[GOSSIP_STATE_HEAD];
    gossip_send(g, m, GOSSIP_MSG_STATE, head, gossip_model_head(GOSSIP_MSG_STATE, &s, head, sizeof head),
                g->z, sizeof(float) * (size_t)g->nparams);
}

void gossip_on_state(gossip_peer *g, gossip_member *m, const gossip_model_msg *msg)
{
    if (g->state_from != (int)(m - g->members) || g->state_in || !g->state_model)
        return;
    memcpy(g->state_model, msg->values, sizeof(float) * (size_t)g->nparams);
    g->state_round = msg->round, g->state_epoch = msg->epoch;
    g->state_in = 1;
    pthread_cond_broadcast(&g->changed);
}

void gossip_on_final(gossip_peer *g, gossip_member *m, const gossip_model_msg *msg)
{
    if (m->final_model || !(m->final_model = malloc(sizeof(float) * (size_t)g->nparams)))
        return;
    memcpy(m->final_model, msg->values, sizeof(float) * (size_t)g->nparams);
    m->final_samples = msg->samples, m->final_joules = m->joules = msg->joules;
    m->estimated = (int)msg->estimated;
    if (m->state == MEMBER_UP)
        m->state = MEMBER_FINISHED;
    pthread_cond_broadcast(&g->changed);
}

/* ---- joining ---- */

/* Locked. The member furthest on, if any was training already when this peer met it (peers that
 * start together meet at round 0). */
static gossip_member *furthest(gossip_peer *g)
{
    gossip_member *best = NULL;
    for (int i = 0; i < g->nmembers; i++) {
        gossip_member *m = &g->members[i];
        if (m->state == MEMBER_UP && m->hello_round > 0 && (!best || m->round > best->round))
            best = m;
    }
    return best;
}

/* Locked. A newcomer takes the model and epoch of the neighbour furthest on. */
static void take_state(gossip_peer *g, int *start_epoch)
{
    gossip_member *m = furthest(g);
    if (!m || !(g->state_model = malloc(sizeof(float) * (size_t)g->nparams)))
        return;
    g->state_from = (int)(m - g->members);
    uint8_t ask[4] = {0};
    gossip_send(g, m, GOSSIP_MSG_STATE_ASK, ask, sizeof ask, NULL, 0);
    double until = clock_now_s() + g->net.timeout_s;
    while (!g->state_in && m->state == MEMBER_UP && clock_now_s() < until && !stop_asked(g))
        timed_wait(g, until);
    if (!g->state_in) {
        fprintf(g->log, "gossip: peer %016llx sent no model to start from: starting from the "
                "job's initial weights\n", (unsigned long long)m->id);
        return;
    }
    memcpy(g->z, g->state_model, sizeof(float) * (size_t)g->nparams);
    g->round = g->ready_round = g->state_round;
    *start_epoch = g->state_epoch > 0 ? (int)g->state_epoch : 1;
    g->joined_at_epoch = *start_epoch;
    snprintf(g->joined_from, sizeof g->joined_from, "%s", m->addr);
    fprintf(g->log, "gossip: joining mid-run: the model of peer %016llx at %s (round %llu), from "
            "epoch %d\n", (unsigned long long)m->id, m->addr, (unsigned long long)g->state_round,
            *start_epoch);
}

int gossip_attach(gossip_peer *g, trainer *t, const char *csv_path, int *start_epoch, char *err,
                  size_t errlen)
{
    *start_epoch = 1;
    if (trainer_nparams(t) != g->nparams)
        return snprintf(err, errlen, "gossip: the trainer has %ld parameters, the model %ld",
                        trainer_nparams(t), g->nparams), -1;
    if (!(g->csv = fopen(csv_path, "w")))
        return snprintf(err, errlen, "%s: cannot create: %s", csv_path, strerror(errno)), -1;
    fputs("round,epoch,batch,seconds,took_part,targets,expected,received,late,wait_s,weight,"
          "consensus_distance,peers_up,bytes_sent,bytes_received\n", g->csv);
    pthread_mutex_lock(&g->lock);
    int rc = 0;
    if (!(g->z = malloc(sizeof(float) * (size_t)g->nparams)) ||
        !(g->acc = calloc((size_t)g->nparams, sizeof(double))))
        rc = -1, snprintf(err, errlen, "out of memory for the gossip's %ld parameters", g->nparams);
    rc = rc || trainer_get_params(t, g->z, err, errlen);
    if (!rc)
        take_state(g, start_epoch);
    g->t = t;
    pthread_mutex_unlock(&g->lock);
    g->last_round_at = clock_now_s();
    return rc || trainer_set_params(t, g->z, err, errlen) ? -1 : 0;
}

/* ---- a round ---- */

/* Locked. The peers exchanging in `round`, this one included, in id order (their members in
 * who, -1 for this one); how many; this one's place in *self. */
static int round_view(gossip_peer *g, uint64_t round, uint64_t *ids, int *who, int *self)
{
    int n = 0;
    *self = -1;
    for (int i = -1; i < g->nmembers; i++) {
        uint64_t id = i < 0 ? g->id : g->members[i].id;
        if ((i < 0 || g->members[i].state == MEMBER_UP) &&
            gossip_takes_part(g->cfg->seed, id, round, g->cfg->gossip_participation)) {
            int at = n++;
            while (at > 0 && ids[at - 1] > id)
                ids[at] = ids[at - 1], who[at] = who[at - 1], at--;
            ids[at] = id, who[at] = i;
        }
    }
    for (int j = 0; j < n; j++)
        if (who[j] < 0)
            *self = j;
    return n;
}

/* Locked. How long to wait for the expected pushes: 3 times the latest the slowest of them has
 * been (before any is measured: twice this peer's round, at least a second). */
static double deadline_after(gossip_peer *g, const int *expected, int n)
{
    double worst = 0;
    for (int i = 0; i < n; i++) {
        const gossip_member *m = &g->members[expected[i]];
        double late = m->late_measured ? m->late_s : fmax(1.0, 2 * g->round_s);
        worst = fmax(worst, late);
    }
    double s = fmax(MIN_WAIT_S, 3 * worst + 0.02);
    return fmin(s, g->net.timeout_s);
}

static int all_in(gossip_peer *g, const int *expected, int n, uint64_t round, int *received)
{
    int waiting = 0;
    *received = 0;
    for (int i = 0; i < n; i++) {
        const gossip_member *m = &g->members[expected[i]];
        if (m->pushed && m->pushed_round >= round)
            (*received)++;
        else if (m->state == MEMBER_UP)
            waiting++;
    }
    return !waiting;
}

/* Locked. The pushes summed so far mixed into z; the consensus distance (the root mean square of
 * z minus the pushes' mean) measured before. */
static void mix(gossip_peer *g)
{
    if (g->acc_w <= 0)
        return;
    double sq = 0, total = g->w + g->acc_w;
    for (long i = 0; i < g->nparams; i++) {
        double theirs = g->acc[i] / g->acc_w, d = g->z[i] - theirs;
        sq += d * d;
        g->z[i] = (float)((g->w * g->z[i] + g->acc[i]) / total);
        g->acc[i] = 0;
    }
    g->consensus = sqrt(sq / (double)g->nparams);
    g->w = total, g->acc_w = 0;
}

/* Locked. Sends the round's pushes; their count. away: weight 0, this peer sits the round out
 * and keeps its weight (its targets are not held waiting for it). */
static int push(gossip_peer *g, const uint64_t *ids, const int *who, int n, int self, int epoch,
                long batch, int away)
{
    int targets[CONFIG_MAX_PEERS];
    int d = gossip_targets(g->cfg->gossip_topology, g->cfg->gossip_neighbours, ids, n, self,
                           g->round, g->cfg->seed, targets);
    double share = away ? 0 : g->w / (d + 1);
    int estimated;
    gossip_model_msg p = {.round = g->round, .epoch = (uint32_t)epoch, .batch = (uint32_t)batch,
                          .mass = share, .round_s = g->round_s};
    p.joules = gossip_joules_here(g, &estimated);
    p.estimated = (uint32_t)estimated;
    uint8_t head[GOSSIP_PUSH_HEAD];
    size_t hl = gossip_model_head(GOSSIP_MSG_PUSH, &p, head, sizeof head);
    int sent = 0;
    for (int i = 0; i < d; i++) {
        gossip_member *m = &g->members[who[targets[i]]];
        if (!gossip_send(g, m, GOSSIP_MSG_PUSH, head, hl, g->z, sizeof(float) * (size_t)g->nparams))
            m->pushes_out++, g->pushes_out++, sent++;
    }
    if (!away)   /* a push that could not go stays here */
        g->w = fmax(share * (d + 1 - sent), MIN_WEIGHT);
    return d;
}

static int exchange(gossip_peer *g, int epoch, long batch, char *err, size_t errlen)
{
    uint64_t ids[CONFIG_MAX_PEERS + 1];
    int who[CONFIG_MAX_PEERS + 1], self, expected[CONFIG_MAX_PEERS], nexp = 0, received = 0, d = 0;
    pthread_mutex_lock(&g->lock);
    g->round_s = clock_now_s() - g->last_round_at;
    if (trainer_get_params(g->t, g->z, err, errlen)) {
        pthread_mutex_unlock(&g->lock);
        return -1;
    }
    int n = round_view(g, g->round, ids, who, &self);
    double waited = 0;
    if (self >= 0) {
        g->rounds_taken_part++;
        d = push(g, ids, who, n, self, epoch, batch, 0);
        for (int j = 0; j < n; j++)
            if (j != self && gossip_sends_to(g->cfg->gossip_topology, g->cfg->gossip_neighbours, ids,
                                             n, j, self, g->round, g->cfg->seed))
                expected[nexp++] = who[j];
        g->ready_round = g->round, g->ready_at = clock_now_s();
        double until = g->ready_at + deadline_after(g, expected, nexp);
        while (!all_in(g, expected, nexp, g->round, &received) && clock_now_s() < until &&
               !stop_asked(g))
            timed_wait(g, until);
        waited = clock_now_s() - g->ready_at;
        g->wait_s += waited;
        mix(g);
    }
    g->round++;
    g->ready_round = g->round, g->ready_at = 0;
    pthread_mutex_unlock(&g->lock);
    gossip_log_round(g, epoch, batch, self >= 0, d, nexp, received, waited);
    g->last_round_at = clock_now_s();
    return self >= 0 ? trainer_set_params(g->t, g->z, err, errlen) : 0;
}

/* ---- participation ([placement] participation: this peer decides for itself) ---- */

/* This peer's speed and power over its last round (training thread). */
static void measure_round(gossip_peer *g, double samples)
{
    int estimated;
    double j = gossip_joules_here(g, &estimated);
    if (g->round_s > 0 && samples > 0)
        g->green_img_s = samples / g->round_s, g->green_w = (j - g->round_joules) / g->round_s;
    g->round_joules = j;
}

/* Whether this peer trains and exchanges in the coming round. */
static int takes_part(gossip_peer *g, int epoch, long b, long per_epoch)
{
    const job_config *cfg = g->cfg;
    if (!g->carbon || (cfg->participation == PARTICIPATION_ALWAYS && !carbon_follows_traces(g->carbon)))
        return 1;
    int estimated;
    double joules = gossip_joules_here(g, &estimated), now = carbon_trace_now(g->carbon);
    char why_text[600];
    carbon_update(g->carbon, clock_now_s(), joules, why_text, sizeof why_text);
    double deadline = cfg->deadline_at >= 0 ? cfg->deadline_at
                    : cfg->deadline_s > 0 ? g->carbon->replay.start + cfg->deadline_s : -1;
    participant me = {g->green_img_s, g->green_w, g->carbon->value, g->carbon->renewable_w,
                      g->carbon->trace.n ? &g->carbon->trace : NULL, now, deadline};
    double left = ((double)(cfg->epochs - epoch) * (double)per_epoch + (double)(per_epoch - b)) * cfg->batch;
    participation_input in = {(participation_policy)cfg->participation, cfg->green_g_per_kwh,
                              cfg->budget_g, cfg->random_share,
                              deadline < 0 ? -1 : fmax((deadline - now) / carbon_trace_speed(g->carbon), 1e-3),
                              left, carbon_grams(g->carbon, joules), g->round_s,
                              cfg->seed ^ g->id, g->round};
    int take;
    participation_why why;
    participation_choose(&in, &me, 1, 0, &take, &why);
    if (g->green) {
        int was = green_log_round(g->green, (unsigned long long)g->round, now, g->green_here,
                                  me.g_per_kwh, me.renewable_w, me.watts, take);
        if (was != take && (was >= 0 || !take))
            green_log_event(g->green, g->log, now, "this peer %s in round %llu: %s (%.0f g CO2e/kWh, "
                            "green at most %.0f; renewable %.0f W against %.1f W computing)",
                            take ? "takes part" : "sits out", (unsigned long long)g->round,
                            participation_why_name(why), me.g_per_kwh, cfg->green_g_per_kwh,
                            me.renewable_w, me.watts);
    }
    return take;
}

/* A round sat out: zero-weight pushes to the round's targets, so that none waits for this peer,
 * then idle for about a round (the others' pace), no local steps. */
static void sit_out(gossip_peer *g, int epoch, long batch)
{
    uint64_t ids[CONFIG_MAX_PEERS + 1];
    int who[CONFIG_MAX_PEERS + 1], self, d = 0;
    pthread_mutex_lock(&g->lock);
    int n = round_view(g, g->round, ids, who, &self);
    if (self >= 0 && trainer_get_params(g->t, g->z, NULL, 0) == 0)
        d = push(g, ids, who, n, self, epoch, batch, 1);
    double until = clock_now_s() + fmin(g->round_s > 0 ? g->round_s : MIN_WAIT_S, g->net.timeout_s);
    while (clock_now_s() < until && !stop_asked(g))
        timed_wait(g, until);
    g->round++;
    g->ready_round = g->round, g->ready_at = 0;
    pthread_mutex_unlock(&g->lock);
    gossip_log_round(g, epoch, batch, 0, d, 0, 0, 0);
    g->last_round_at = clock_now_s();
}

int gossip_train_epoch(gossip_peer *g, int epoch, long first_batch, pass_result *out, char *err,
                       size_t errlen)
{
    const round_share whole = {0, 1 << 30, 0, 0};
    long per_epoch = (g->train->n + g->cfg->batch - 1) / g->cfg->batch;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&g->lock);
    g->last_epoch = epoch;
    pthread_mutex_unlock(&g->lock);
    for (long b = first_batch; b < per_epoch;) {
        long n = g->cfg->gossip_every - g->steps_since;
        if (!g->steps_since && !takes_part(g, epoch, b, per_epoch)) {
            b += n < per_epoch - b ? n : per_epoch - b;
            sit_out(g, epoch, b);
            if (stop_asked(g)) {
                out->stopped = 1;
                return 0;
            }
            continue;
        }
        pass_result p;
        if (trainer_train_share(g->t, epoch, b, n < per_epoch - b ? n : per_epoch - b, &whole, &p,
                                err, errlen))
            return -1;
        out->loss += p.loss, out->correct += p.correct, out->samples += p.samples;
        out->batches += p.batches, out->seconds += p.seconds;
        g->samples += (double)p.samples;
        b += p.batches, g->steps_since += (int)p.batches;
        if (p.stopped) {
            out->stopped = 1;
            return 0;
        }
        if (g->steps_since >= g->cfg->gossip_every) {
            g->steps_since = 0;
            double t0 = clock_now_s();
            measure_round(g, (double)g->cfg->gossip_every * g->cfg->batch);
            if (exchange(g, epoch, b, err, errlen))
                return -1;
            out->seconds += clock_now_s() - t0;
        }
    }
    return 0;
}

/* ---- the end ---- */

static int still_training(const gossip_peer *g)
{
    for (int i = 0; i < g->nmembers; i++)
        if (g->members[i].state == MEMBER_UP)
            return 1;
    return 0;
}

/* Locked. The FINALs in (this peer's z among them), weighted by samples, in id order, into z. */
static void average_finals(gossip_peer *g)
{
    const float *models[CONFIG_MAX_PEERS + 1];
    double weights[CONFIG_MAX_PEERS + 1], total = 0;
    uint64_t ids[CONFIG_MAX_PEERS + 1];
    int n = 0;
    for (int i = -1; i < g->nmembers; i++) {
        const float *m = i < 0 ? g->z : g->members[i].final_model;
        if (!m)
            continue;
        uint64_t id = i < 0 ? g->id : g->members[i].id;
        int at = n++;
        while (at > 0 && ids[at - 1] > id)
            ids[at] = ids[at - 1], models[at] = models[at - 1], weights[at] = weights[at - 1], at--;
        ids[at] = id, models[at] = m;
        weights[at] = fmax(i < 0 ? g->samples : g->members[i].final_samples, 1);
        total += weights[at];
    }
    for (long p = 0; p < g->nparams; p++) {
        double s = 0;
        for (int j = 0; j < n; j++)
            s += weights[j] * models[j][p];
        g->acc[p] = s / total;
    }
    for (long p = 0; p < g->nparams; p++)
        g->z[p] = (float)g->acc[p], g->acc[p] = 0;
    g->final_models = n;
}

int gossip_finish(gossip_peer *g, char *err, size_t errlen)
{
    pthread_mutex_lock(&g->lock);
    if (trainer_get_params(g->t, g->z, err, errlen)) {
        pthread_mutex_unlock(&g->lock);
        return -1;
    }
    mix(g);   /* the pushes still in */
    int estimated;
    gossip_model_msg f = {.round = g->round, .samples = g->samples};
    f.joules = gossip_joules_here(g, &estimated);
    f.estimated = (uint32_t)estimated;
    uint8_t head[GOSSIP_FINAL_HEAD];
    size_t hl = gossip_model_head(GOSSIP_MSG_FINAL, &f, head, sizeof head);
    for (int i = 0; i < g->nmembers; i++)
        if (g->members[i].state == MEMBER_UP || g->members[i].state == MEMBER_FINISHED)
            gossip_send(g, &g->members[i], GOSSIP_MSG_FINAL, head, hl, g->z,
                        sizeof(float) * (size_t)g->nparams);
    g->finished_here = 1;
    /* the others' FINALs: each waited for while its link lives, at most as long again as this
       whole run took (a peer alive but never done cannot hold the rest) */
    double start = clock_now_s(), until = start + fmax(g->net.timeout_s, 2 * (start - g->started_at));
    if (still_training(g)) {
        fprintf(g->log, "gossip: finished; waiting for the peers still training\n");
        fflush(g->log);
    }
    while (still_training(g) && clock_now_s() < until && !stop_asked(g))
        timed_wait(g, until);
    for (int i = 0; i < g->nmembers; i++)
        if (g->members[i].state == MEMBER_UP)
            fprintf(g->log, "gossip: peer %016llx at %s did not finish within %.0f s: the average "
                    "is made without it\n", (unsigned long long)g->members[i].id,
                    g->members[i].addr, until - start);
    average_finals(g);
    fprintf(g->log, "gossip: the final model is the average of %d peers' models (weighted by "
            "their samples)\n", g->final_models);
    pthread_mutex_unlock(&g->lock);
    return trainer_set_params(g->t, g->z, err, errlen);
}
