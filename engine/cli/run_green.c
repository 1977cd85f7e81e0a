#include "engine/cli/run_green.h"

#include "common/clock.h"
#include "engine/placement/participation.h"

#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* This machine's grams so far, and every machine's (the nodes' as they report them). */
static double here_grams(run_green *g)
{
    energy_figures f;
    energy_run_total(g->er, 0, &f);
    return f.gco2e;
}

static double grams_all(run_green *g)
{
    return here_grams(g) + (g->cluster ? coordinator_nodes_grams(g->cluster) : 0);
}

void run_green_begin(run_green *g, const job_config *cfg, energy_run *er, coordinator *cluster,
                     int gossip, long test_images, FILE *out)
{
    memset(g, 0, sizeof *g);
    g->test_batches = (test_images + cfg->batch - 1) / cfg->batch, g->test_grams = -1;
    green_log_init(&g->log, participation_name((participation_policy)cfg->participation));
    g->cfg = cfg, g->er = er, g->cluster = cluster, g->out = out;
    g->start = carbon_trace_now(&er->carbon), g->start_clock = clock_now_s();
    g->deadline = cfg->deadline_at >= 0 ? cfg->deadline_at
                : cfg->deadline_s > 0 ? g->start + cfg->deadline_s : -1;
    g->here = green_log_machine(&g->log, cluster ? "coordinator" : gossip ? "this peer" : "this machine");
    g->rounds_elsewhere = cluster || gossip;
    const carbon_source *cs = &er->carbon;
    g->log.cfg = cfg, g->log.deadline = g->deadline;
    g->log.trace_start = cs->replay.start, g->log.trace_speed = carbon_trace_speed(cs);
    if (cluster)
        coordinator_use_green_log(cluster, &g->log);
}

static void hours(char *buf, size_t n, double s)
{
    snprintf(buf, n, s >= 3600 ? "%.1f h" : "%.0f s", s >= 3600 ? s / 3600 : s);
}

/* Waits until trace time `until` (or a signal): 0, or -1 on a signal. */
static int wait_until(run_green *g, double until, const _Atomic int *stop)
{
    while (carbon_trace_now(&g->er->carbon) < until) {
        if (stop && atomic_load(stop))
            return -1;
        double left = (until - carbon_trace_now(&g->er->carbon)) / carbon_trace_speed(&g->er->carbon);
        usleep((useconds_t)(1e6 * fmin(fmax(left, 0.001), 0.05)));
    }
    return 0;
}

/* postpone = on: waits for green energy while the deadline allows. */
static int postpone(run_green *g, int e, const _Atomic int *stop)
{
    carbon_source *cs = &g->er->carbon;
    const job_config *cfg = g->cfg;
    double now = carbon_trace_now(cs), speed = carbon_trace_speed(cs);
    if (cfg->postpone != POSTPONE_WAIT || !cs->trace.n || g->deadline < 0 ||
        (g->cluster && coordinator_any_node_green(g->cluster, cfg->green_g_per_kwh)))
        return 0;
    double epochs_left = cfg->epochs - e + 1;   /* before any epoch is measured: half the time */
    double need = g->epoch_s > 0 ? 1.1 * epochs_left * g->epoch_s * speed : (g->deadline - now) / 2;
    double resume = participation_resume_at(&cs->trace, now, cfg->green_g_per_kwh, g->deadline, need);
    if (resume <= now)
        return 0;
    char wait[32], work[32], slack[32];
    hours(wait, sizeof wait, resume - now), hours(work, sizeof work, need);
    hours(slack, sizeof slack, g->deadline - now);
    green_log_round(&g->log, (unsigned long long)e, now, g->here, cs->value, cs->renewable_w, 0, 0);
    green_log_event(&g->log, g->out, now, "postponing epoch %d: %.0f g CO2e/kWh here, over %.0f, and "
                    "no node green; forecast %.0f g/kWh when it resumes; the deadline is %s away, "
                    "the work left about %s: waiting %s of trace time (%.1f s here)", e, cs->value,
                    cfg->green_g_per_kwh, grid_trace_ahead(&cs->trace, resume), slack, work, wait,
                    (resume - now) / speed);
    double t0 = clock_now_s();
    if (wait_until(g, resume, stop))
        return -1;
    green_log_postponed(&g->log, resume - now, clock_now_s() - t0);
    g->postponed += resume - now;
    energy_run_follow_carbon(g->er);
    green_log_event(&g->log, g->out, carbon_trace_now(cs), "resuming epoch %d at %.0f g CO2e/kWh",
                    e, cs->value);
    return 0;
}

/* Batches submitted ahead of those computed, and one more: the margin a budget keeps (and a
 * round's batches more under periodic averaging, whose nodes report their grams a round late);
 * at least a second's spending (saving, stopping, the last reports). */
#define BUDGET_MARGIN_BATCHES 3
#define BUDGET_MARGIN_S 1.0

int run_green_budget_spent(run_green *g, long batches)
{
    if (g->cfg->participation != PARTICIPATION_BUDGET || g->spent)
        return g->spent;
    double spent = grams_all(g), own = here_grams(g), now = clock_now_s();
    long enough = BUDGET_MARGIN_BATCHES + (g->cluster ? g->cfg->sync_every : 0), n = 0;
    double per_batch, per_s;
    if (g->ref_batches < 0) {
        /* before the pace is measured (past the start, whose costs are not the pace): from the
           start, which errs towards stopping early. Under averaging this is called a round
           apart, and two rounds spent a small budget on a slow host (a CI run overspent by 1%
           waiting for the pace). */
        per_batch = batches > 0 ? spent / (double)batches : 0;
        per_s = now - g->start_clock > 0.2 ? spent / (now - g->start_clock) : 0;
        if (batches >= BUDGET_MARGIN_BATCHES) {
            g->ref_batches = batches, g->ref_grams = spent, g->ref_own = own;
            g->pace_grams = spent, g->pace_clock = now;
        }
    } else {
        /* the pace over enough batches (and time) that a node's report, a round's grams at
           once, is not taken for it; before they are enough, the last epoch's, or in the first
           the pace so far (which such a report errs towards stopping early) */
        n = batches - g->ref_batches;
        per_batch = n > 0 ? (spent - g->ref_grams) / (double)n : 0;
        per_s = now - g->pace_clock > 0.2 ? (spent - g->pace_grams) / (now - g->pace_clock) : 0;
        if (n >= enough)
            g->per_batch = per_batch;
        else if (g->per_batch > 0)
            per_batch = g->per_batch;
    }
    if (per_batch <= 0 && per_s <= 0 && spent < g->cfg->budget_g)
        return 0;
    /* the epoch's test pass (on this machine alone) must fit too: as the last one took, or
       (before any) as many batches of this machine's training would */
    double test = g->test_grams >= 0 ? g->test_grams
                : n > 0 ? (own - g->ref_own) / (double)n * (double)g->test_batches : 0;
    double margin = fmax((double)enough * per_batch, BUDGET_MARGIN_S * per_s);
    if (spent + margin + test < g->cfg->budget_g)
        return 0;
    g->spent = 1;
    snprintf(g->log.stopped, sizeof g->log.stopped, "budget: %.4g g CO2e spent of %.4g (about "
             "%.3g a batch)", spent, g->cfg->budget_g, per_batch);
    green_log_event(&g->log, g->out, carbon_trace_now(&g->er->carbon), "stopping: %s", g->log.stopped);
    return 1;
}

int run_green_before_epoch(run_green *g, int e, const _Atomic int *stop)
{
    int rc = postpone(g, e, stop);
    carbon_source *cs = &g->er->carbon;
    g->epoch_at = carbon_trace_now(cs);
    g->grams_before = grams_all(g);
    /* a budget's pace: from the epoch's start, or in this process's first epoch from its third
       batch on (what starting cost is not the pace) */
    g->ref_batches = g->epochs_begun++ ? 0 : -1;
    g->ref_grams = g->grams_before, g->ref_own = here_grams(g);
    if (!rc && !g->rounds_elsewhere && (carbon_follows_traces(cs) || g->cfg->postpone))
        green_log_round(&g->log, (unsigned long long)e, g->epoch_at, g->here, cs->value,
                        cs->renewable_w, 0, 1);
    return rc;
}

void run_green_after_epoch(run_green *g, double seconds, double joules, double test_grams)
{
    carbon_source *cs = &g->er->carbon;
    double now = carbon_trace_now(cs);
    g->epoch_s = seconds, g->test_grams = test_grams;
    if (!cs->trace.n)
        return;
    /* the epoch's joules at the intensity of its stretch of trace time, and of the same stretch
       less every wait before it (running at once); the idle joules of a wait are not counted */
    double as_run = joules / 3.6e6 * grid_trace_mean(&cs->trace, g->epoch_at, now);
    double at_once = joules / 3.6e6 * grid_trace_mean(&cs->trace, g->epoch_at - g->postponed,
                                                      now - g->postponed);
    g->log.grams = (g->log.grams < 0 ? 0 : g->log.grams) + as_run;
    g->log.grams_at_once = (g->log.grams_at_once < 0 ? 0 : g->log.grams_at_once) + at_once;
}

void run_green_end(run_green *g)
{
    if (g->cluster)
        coordinator_use_green_log(g->cluster, NULL);
    green_log_free(&g->log);
}
