/* Which machines of a star take part in a round ([placement] participation,
 * engine/placement/participation.h): this machine's grid figures (its replayed traces) and the
 * nodes' (as their last RESULT or MODEL said), the job's progress against its deadline and the
 * grams spent against its budget. Each machine's decision goes to the green log; a change is
 * said with the figures behind it. */
#include "engine/cluster/coordinator_internal.h"

#include "energy/meter.h"
#include "engine/placement/participation.h"

#include <math.h>
#include <string.h>

/* Locked. This machine's carbon source brought up to now (the trace's figure, the grams). */
static double grams_here(coordinator *c)
{
    energy_reading r = {0};
    if (c->meter)
        energy_meter_read(c->meter, &r);
    char why[600];
    carbon_update(&c->carbon, r.t, r.total_j, why, sizeof why);
    return carbon_grams(&c->carbon, r.total_j);
}

static void say_change(coordinator *c, double now, const char *name, const participant *p,
                       int on, participation_why why)
{
    green_log_event(c->green, c->log, now, "%s %s: %s (%.0f g CO2e/kWh, green at most %.0f; "
                    "renewable %.0f W against %.1f W computing)", name,
                    on ? "takes part" : "sits out", participation_why_name(why), p->g_per_kwh,
                    c->cfg->green_g_per_kwh, p->renewable_w, p->watts);
}

/* Locked. The machines taking part in the round's view: this one (member 0) and the ready
 * nodes (index: their place in c->nodes); how many; the grams every machine has spent. */
static int gather(coordinator *c, double here_img_s, double here_w, const double *node_img_s,
                  double now, participant *m, int *index, double *spent)
{
    int n = 1;
    *spent = grams_here(c);
    m[0] = (participant){here_img_s, here_w, c->carbon.value, c->carbon.renewable_w,
                         c->carbon.trace.n ? &c->carbon.trace : NULL, now, c->deadline};
    for (int i = 0; i < c->nnodes; i++) {
        const peer_node *x = &c->nodes[i];
        if (!x->ready || x->gone)
            continue;
        index[n] = i;   /* a node's forecast stays on the node */
        m[n++] = (participant){node_img_s[i], x->watts, x->carbon, x->renewable_w, NULL, 0, 0};
        *spent += coordinator_node_grams(c, x, clock_now_s());
    }
    return n;
}

/* Locked. Each machine's decision into the green log, a change said. */
static void log_decisions(coordinator *c, unsigned long long round, double now, const participant *m,
                          const int *index, const int *in, const participation_why *why, int n)
{
    for (int k = 0; k < n; k++) {
        peer_node *x = k ? &c->nodes[index[k]] : NULL;
        if (x && x->green_index < 0)
            x->green_index = green_log_machine(c->green, x->name);
        int was = green_log_round(c->green, round, now, x ? x->green_index : c->green_here,
                                  m[k].g_per_kwh, m[k].renewable_w, m[k].watts, in[k]);
        if (was != in[k] && (was >= 0 || !in[k]))
            say_change(c, now, x ? x->name : "this machine", &m[k], in[k], why[k]);
    }
}

int coordinator_participation(coordinator *c, unsigned long long round, double here_img_s,
                              double here_w, const double *node_img_s, double samples_left,
                              double round_s, int *take)
{
    const job_config *cfg = c->cfg;
    for (int i = 0; i < c->nnodes; i++)
        take[i] = c->nodes[i].ready && !c->nodes[i].gone;
    if (cfg->participation == PARTICIPATION_ALWAYS && !carbon_follows_traces(&c->carbon))
        return 0;   /* nothing to decide, nothing to follow */
    participant m[MAX_NODES + 1];
    int index[MAX_NODES + 1], in[MAX_NODES + 1];
    participation_why why[MAX_NODES + 1];
    double spent, now = carbon_trace_now(&c->carbon);
    int n = gather(c, here_img_s, here_w, node_img_s, now, m, index, &spent);
    /* past the deadline: every second counts */
    double left = c->deadline < 0 ? -1 : fmax((c->deadline - now) / carbon_trace_speed(&c->carbon), 1e-3);
    participation_input pin = {(participation_policy)cfg->participation, cfg->green_g_per_kwh,
                               cfg->budget_g, cfg->random_share, left, samples_left, spent,
                               round_s, cfg->seed, round};
    participation_choose(&pin, m, n, 1, in, why);
    int left_out = 0;
    for (int k = 1; k < n; k++)
        take[index[k]] = in[k], left_out += !in[k];
    if (c->green)
        log_decisions(c, round, now, m, index, in, why, n);
    return left_out > 0;
}
