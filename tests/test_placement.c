/* Energy-aware placement of CPU workers: the policies' choice against a brute-force search over
 * declared costs, the online tuner against simulated machines (including a drift), what it
 * learned kept between runs, and end to end through frugal measured by a fake RAPL counter that
 * the test moves at declared watts as the work runs. Also
 * the choice of machines in a cluster against every subset of them, the carbon file, and how a
 * device's power is calibrated (its sensor, the figure). */
#include "energy/carbon.h"
#include "engine/placement/cluster_share.h"
#include "engine/placement/device_energy.h"
#include "engine/placement/policy.h"
#include "engine/placement/worker_control.h"
#include "engine/placement/worker_tuner.h"
#include "fake_rapl.h"
#include "frugal_cli.h"
#include "ops/layers.h"
#include "common/clock.h"
#include "test.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static double uniform(ops_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * (ops_rng_next(r) / 4294967296.0);
}

/* Every option, every rule spelled out: within the budget (or the least power when nothing is),
 * then for the energy policies within the slowdown cap of the fastest of those, then the least
 * cost, the lowest index on a tie. */
static int brute_force(const policy_limits *l, const option_figures *o, int n)
{
    int within[64];
    double least_w = INFINITY;
    for (int i = 0; i < n; i++)
        least_w = fmin(least_w, o[i].watts);
    for (int i = 0; i < n; i++)
        within[i] = l->budget_w <= 0 || o[i].watts <= l->budget_w ||
                    (least_w > l->budget_w && o[i].watts == least_w);
    double fastest = INFINITY;
    for (int i = 0; i < n; i++)
        if (within[i])
            fastest = fmin(fastest, o[i].s_per_sample);
    int best = -1;
    double best_cost = INFINITY;
    for (int i = 0; i < n; i++) {
        if (!within[i])
            continue;
        if (l->policy != POLICY_TIME && l->max_slowdown >= 0 &&
            o[i].s_per_sample > fastest * (1 + l->max_slowdown))
            continue;
        double j = o[i].watts * o[i].s_per_sample;
        double cost = l->policy == POLICY_TIME     ? o[i].s_per_sample
                      : l->policy == POLICY_ENERGY ? j
                      : l->policy == POLICY_EDP    ? j * o[i].s_per_sample
                                                   : j * l->carbon_g_per_kwh / 3.6e6;
        if (cost < best_cost)
            best = i, best_cost = cost;
    }
    return best;
}

TEST(placement_policies_pick_what_a_brute_force_search_picks)
{
    ops_rng r;
    ops_rng_seed(&r, 7);
    const double budgets[] = {0, 30, 60, 1e9}, caps[] = {-1, 0, 0.1, 0.5};
    int cases = 0, budget_bound = 0, cap_bound = 0;
    for (int trial = 0; trial < 400; trial++) {
        int n = 1 + (int)(ops_rng_next(&r) % 16);
        option_figures o[16];
        for (int i = 0; i < n; i++)
            o[i] = (option_figures){uniform(&r, 1e-4, 1e-2), uniform(&r, 5, 120), 1000, 0};
        for (int p = POLICY_TIME; p <= POLICY_CARBON; p++)
            for (int b = 0; b < 4; b++)
                for (int c = 0; c < 4; c++) {
                    policy_limits l = {(placement_policy)p, budgets[b], caps[c], 300};
                    int want = brute_force(&l, o, n), got = policy_choose(&l, o, n);
                    CHECKF(got == want, "trial %d, policy %s, budget %g W, cap %g: chose %d, "
                           "brute force %d", trial, policy_name(l.policy), l.budget_w,
                           l.max_slowdown, got, want);
                    policy_limits free = {(placement_policy)p, 0, -1, 300};
                    int unbound = brute_force(&free, o, n);
                    budget_bound += b && want != unbound && caps[c] < 0;
                    cap_bound += !b && c && want != unbound;
                    cases++;
                }
    }
    /* the limits really decided something in some cases */
    CHECKF(budget_bound > 50 && cap_bound > 50, "%d cases: budget changed %d, cap changed %d",
           cases, budget_bound, cap_bound);
    option_figures none[3] = {{0}};
    CHECK(policy_choose(&(policy_limits){POLICY_ENERGY, 0, -1, 0}, none, 3) == -1);
}

/* A machine whose k workers take a/k + b seconds per sample at idle + c*k watts (the costs of
 * every policy are then unimodal in k), measured with a little noise. */
typedef struct machine { double a, b, idle, c; } machine;

static void measure(const machine *m, int k, ops_rng *r, double *s, double *j, long *samples)
{
    double sps = (m->a / k + m->b) * uniform(r, 0.99, 1.01);
    *samples = 1000;
    *s = sps * (double)*samples;
    *j = (m->idle + m->c * k) * uniform(r, 0.99, 1.01) * *s;
}

static int best_count(const machine *m, const policy_limits *l, int n)
{
    option_figures o[TUNER_MAX_WORKERS];
    for (int k = 1; k <= n; k++)
        o[k - 1] = (option_figures){m->a / k + m->b, m->idle + m->c * k, 1, 0};
    return brute_force(l, o, n) + 1;
}

/* Feeds windows until the tuner has stopped exploring; returns how many it took. */
static int run_tuner(worker_tuner *t, const machine *m, ops_rng *r, int max_windows)
{
    char why[200];
    for (int w = 0; w < max_windows; w++) {
        double s, j;
        long samples;
        measure(m, t->current, r, &s, &j, &samples);
        worker_tuner_observe(t, s, j, samples, why, sizeof why);
        if (!t->exploring)
            return w + 1;
    }
    return -1;
}

TEST(placement_tuner_finds_the_best_worker_count_and_follows_a_drift)
{
    ops_rng r;
    ops_rng_seed(&r, 11);
    for (int trial = 0; trial < 200; trial++) {
        int n = 1 + (int)(ops_rng_next(&r) % 24);
        machine m = {uniform(&r, 1e-4, 1e-2), uniform(&r, 0, 2e-3), uniform(&r, 2, 40),
                     uniform(&r, 1, 30)};
        policy_limits l = {(placement_policy)(trial % 4), trial % 3 ? 0 : uniform(&r, 10, 200),
                           trial % 5 ? -1 : 0.2, 400};
        worker_tuner t;
        worker_tuner_init(&t, &l, n);
        int windows = run_tuner(&t, &m, &r, 64);
        CHECKF(windows > 0 && windows <= 2 * 5 + 2 * n, "trial %d: %d windows to explore %d counts",
               trial, windows, n);
        int want = best_count(&m, &l, n);
        /* within the noise: the cost of the count chosen is within 3% of the best one's */
        option_figures chosen = {m.a / t.current + m.b, m.idle + m.c * t.current, 1, 0};
        option_figures best = {m.a / want + m.b, m.idle + m.c * want, 1, 0};
        CHECKF(t.current == worker_tuner_best(&t) &&
               policy_cost(&l, &chosen) <= 1.03 * policy_cost(&l, &best),
               "trial %d (%s, %d workers at most): chose %d, brute force %d", trial,
               policy_name(l.policy), n, t.current, want);
    }
    /* A machine that gets another load: the count in use slows down by half; exploring starts
     * again and ends with what the new machine prefers. */
    machine m = {8e-3, 0, 10, 5};
    policy_limits l = {POLICY_TIME, 0, -1, 0};
    worker_tuner t;
    worker_tuner_init(&t, &l, 8);
    CHECK(run_tuner(&t, &m, &r, 64) > 0 && t.current == 8);
    machine loaded = {8e-3, 4e-3, 10, 5};   /* a fixed cost per sample: fewer workers lose less */
    int explorations = t.explorations;
    char why[200];
    for (int w = 0; w < TUNER_DRIFT_WINDOWS && t.explorations == explorations; w++) {
        double s, j;
        long samples;
        measure(&loaded, t.current, &r, &s, &j, &samples);
        worker_tuner_observe(&t, s, j, samples, why, sizeof why);
    }
    CHECKF(t.explorations == explorations + 1 && strstr(why, "exploring again"), "%s", why);
    CHECK(run_tuner(&t, &loaded, &r, 64) > 0 && t.current == best_count(&loaded, &l, 8));
}

TEST(placement_tuner_starts_from_what_it_saved)
{
    ops_rng r;
    ops_rng_seed(&r, 3);
    machine m = {4e-3, 1e-4, 20, 15};
    policy_limits l = {POLICY_ENERGY, 0, -1, 0};
    worker_tuner t;
    worker_tuner_init(&t, &l, 6);
    CHECK(run_tuner(&t, &m, &r, 64) > 0);
    char path[600];
    snprintf(path, sizeof path, "%s/workers.txt", test_tmpdir());
    FILE *old = fopen(path, "w");
    fputs("other-workload 3 0.001 50 1000\n", old);   /* kept as it is */
    fclose(old);
    old = fopen(path, "r");
    char tmp[620];
    snprintf(tmp, sizeof tmp, "%s.new", path);
    FILE *out = fopen(tmp, "w");
    CHECK(worker_tuner_save(&t, "this-workload", old, out) == 0);
    fclose(old);
    fclose(out);
    CHECK(rename(tmp, path) == 0);
    worker_tuner again;
    worker_tuner_init(&again, &l, 6);
    FILE *in = fopen(path, "r");
    int used = worker_tuner_load(&again, "this-workload", in);
    fclose(in);
    int measured = 0;
    for (int k = 0; k < 6; k++)
        measured += t.opt[k].samples > 0;
    CHECKF(used == measured && !again.exploring && again.current == t.current,
           "loaded %d of %d, exploring %d, %d workers against %d", used, measured,
           again.exploring, again.current, t.current);
    in = fopen(path, "r");
    char line[256];
    int others = 0;
    while (fgets(line, sizeof line, in))
        others += !strncmp(line, "other-workload 3 ", 17);
    fclose(in);
    CHECK(others == 1);
}

/* TSan slows submitting tasks far more than running them, so one worker (the owner, which
 * submits too) is much slower than half of two, and its timings swing from window to window:
 * there the runs are checked for races and reports, and the choices in the other variants. */
static int under_variant(const char *name)
{
    const char *variant = getenv("FRUGAL_TEST_VARIANT");
    return variant && !strcmp(variant, name);
}

static int under_tsan(void)
{
    return under_variant("tsan");
}

/* frugal train on DAHL's CNN (part of Fashion-MNIST, each task slowed down 20 times so that the
 * measurements are long enough; 4 epochs), its energy measured by a fake RAPL counter that
 * drive_rapl moves at declared watts, with the settings that follow name (up to 4, then NULL;
 * a later one wins); returns the worker count of the policy's last choice in summary.json, or
 * -1. */
static int workers_chosen(const char *name, ...)
{
    char output[700], models[700], sysfs[720], root[600], path[760], log[760];
    snprintf(output, sizeof output, "job.output=%s/%s", test_tmpdir(), name);
    snprintf(models, sizeof models, "FRUGAL_PERFMODEL_DIR=%s/models-%s", test_tmpdir(), name);
    snprintf(root, sizeof root, "%s/sys-%s", test_tmpdir(), name);
    snprintf(sysfs, sizeof sysfs, "FRUGAL_SYSFS_ROOT=%s", root);
    fake_rapl_tree(root);
    /* sanitizers slow the tasks down already */
    char slowdown[64], limit[64];
    snprintf(slowdown, sizeof slowdown, "execution.slowdown=%d", test_scale(20));
    /* long enough for the policy to decide on a fast host too: 4096 images trained in 0.46 s
     * there (4 epochs at batch 128) and no choice was made before the end */
    snprintf(limit, sizeof limit, "data.limit=%d", under_tsan() ? 768 : 8192);
    const char *env[] = {models, sysfs, NULL};
    const char *args[32] = {"train", "examples/dahl-fashion-mnist.cfg", "--set", output, "--set",
                            "energy.baseline_seconds=0", "--set",
                            "placement.window_seconds=0.1", "--set", slowdown,
                            "--set", "execution.workers=0", "--set", limit, "--set",
                            "data.test_limit=256", "--set", "job.epochs=4"};
    int n = 18;
    va_list sets;
    va_start(sets, name);
    for (const char *set; n < 26 && (set = va_arg(sets, const char *));)
        args[n++] = "--set", args[n++] = set;
    va_end(sets);
    snprintf(log, sizeof log, "%s/%s.log", test_tmpdir(), name);
    int rc = fake_rapl_drive(root, frugal_spawn(&(frugal_call){(uid_t)-1, env, 0}, log, args));
    static char out[1 << 16], json[1 << 16];
    test_read_text(log, out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "placement: policy") &&
           strstr(out, "energy: measured: rapl package-0"), "%s", out);
    snprintf(path, sizeof path, "%s/%s/summary.json", test_tmpdir(), name);
    test_read_text(path, json, sizeof json);
    /* the policy's last choice (a drift near the end may have it exploring again) */
    const char *at = NULL;
    for (const char *p = json; (p = strstr(p, "\"why\": \"policy ")); p++)
        at = p;
    int workers = -1;
    CHECKF(at && sscanf(strchr(at + 16, ':'), ": %d workers", &workers) == 1, "%s\n%s", out, json);
    return workers;
}

/* The figures NAME's last policy decision was made on (its "seen", at most 16 counts): how
 * many. The final by_workers may differ: the figures keep changing after a choice. */
static int seen_by_choice(const char *name, int *workers, double *rate, double *cost)
{
    static char json[1 << 16];
    char path[760];
    snprintf(path, sizeof path, "%s/%s/summary.json", test_tmpdir(), name);
    test_read_text(path, json, sizeof json);
    const char *at = NULL;
    for (const char *p = json; (p = strstr(p, "\"why\": \"policy ")); p++)
        at = p;
    at = at ? strstr(at, "\"seen\": [") : NULL;
    const char *end = at ? strchr(at, ']') : NULL;
    int n = 0;
    for (; n < 16 && at && (at = strstr(at, "{\"workers\": ")) && at < end; at++, n++)
        if (sscanf(at, "{\"workers\": %d, \"samples\": %*d, \"img_per_s\": %lf", &workers[n],
                   &rate[n]) != 2 || !(at = strstr(at, "\"cost\": ")) ||
            sscanf(at, "\"cost\": %lf", &cost[n]) != 1)
            break;
    return n;
}

/* The worker count NAME's last choice saw best: the fastest, or the cheapest in its policy's
 * cost; -1 if none. */
static int best_seen(const char *name, int cheapest)
{
    int workers[16], best = -1;
    double rate[16], cost[16], best_score = 0;
    for (int i = 0, n = seen_by_choice(name, workers, rate, cost); i < n; i++) {
        double score = cheapest ? -cost[i] : rate[i];
        if (best < 0 || score > best_score)
            best = workers[i], best_score = score;
    }
    return best;
}

/* NAME's last choice's figures, as text (for a failure's message). */
static const char *seen_text(const char *name)
{
    static char text[1024];
    int workers[16], at = 0;
    double rate[16], cost[16];
    int n = seen_by_choice(name, workers, rate, cost);
    text[0] = 0;
    for (int i = 0; i < n && at < (int)sizeof text - 80; i++)
        at += snprintf(text + at, sizeof text - (size_t)at, " %d workers: %.0f img/s, cost %.4g;",
                       workers[i], rate[i], cost[i]);
    return text;
}

/* Whether NAME's last choice saw one worker within `slowdown` of its fastest count. */
static int one_seen_within(const char *name, double slowdown)
{
    int workers[16];
    double rate[16], cost[16], one = 0, fastest = 0;
    for (int i = 0, n = seen_by_choice(name, workers, rate, cost); i < n; i++) {
        one = workers[i] == 1 ? rate[i] : one;
        fastest = rate[i] > fastest ? rate[i] : fastest;
    }
    return one > 0 && one * (1 + slowdown) >= fastest;
}

TEST(placement_energy_keeps_one_worker_where_the_second_core_costs_more)
{
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
        return;   /* one core: nothing to decide */
    if (under_tsan()) {
        CHECK(workers_chosen("energy", "placement.policy=energy", NULL) >= 1);
        CHECK(workers_chosen("budget", "placement.policy=time", "placement.power_budget_watts=60",
                             NULL) >= 1);
        return;
    }
    /* Under ASan the main thread's own work (building each batch's graph) can have one
     * worker's process draw nearly two cores' power from the fake counter: there the policy
     * must keep what its own figures measured cheapest. */
    const char *energy = "energy";
    int energy_kept = workers_chosen(energy, "placement.policy=energy", NULL);
    /* A neighbour busy only while one worker was measured makes that count look dear (its
     * threads' waits count as demand, and it trains slower): seen once in 8 runs of the whole
     * suite on a 2-vCPU host. Then the choice is measured again, from new figures (a run of
     * another name), and fails if it is off twice. */
    if (energy_kept != 1 && !under_variant("asan")) {
        printf("  energy kept %d workers (seen:%s): measured again\n", energy_kept,
               seen_text(energy));
        energy = "energy-again";
        energy_kept = workers_chosen(energy, "placement.policy=energy", NULL);
    }
    CHECKF(energy_kept == 1 || (under_variant("asan") && best_seen(energy, 1) == energy_kept),
           "energy kept %d workers where 1 was measured cheaper (seen:%s)", energy_kept,
           seen_text(energy));
    /* With batches of 128 (more chunks each) one worker is about twice as slow, so time keeps
     * two (unless this machine's second core was busy elsewhere: then one measured fastest) and
     * a 30% cap on the slowdown keeps more. At 32, each batch's 2 chunks and its serial
     * gradient sum and step had two workers only 1.05-1.5 times as fast as one on a 2-core VM:
     * within a window's noise, around any cap's edge. */
    int time_kept = workers_chosen("time", "placement.policy=time", "job.batch=128", NULL);
    CHECKF(time_kept >= 2 || best_seen("time", 0) == 1,
           "time kept %d workers where more were measured faster", time_kept);
    /* (unless this machine's windows measured one worker within the cap: under ASan, seen) */
    int capped = workers_chosen("capped", "placement.policy=energy", "placement.max_slowdown=0.3",
                                "job.batch=128", NULL);
    CHECKF(capped >= 2 || one_seen_within("capped", 0.3),
           "the 30%% cap kept %d workers where one was measured more than 30%% slower", capped);
    /* two cores draw 100 W: a 60 W budget keeps one, whatever the policy */
    CHECK(workers_chosen("budget", "placement.policy=time", "placement.power_budget_watts=60",
                         NULL) == 1);
}

/* A budget below even one busy core's power (15 W; idle is 10 W) keeps one worker and, as its
 * last resort, parks the OpenCL device (PoCL here): the tasks the CPU can run stay there. With
 * the device working, one worker can draw what two do, so the policy may first keep two: the
 * counts are measured again once it is parked, and one is kept. */
TEST(placement_budget_below_one_core_parks_the_device_too)
{
    /* (8 epochs under TSan too: in 4, CI saw it end still exploring, with no choice made) */
    int workers = workers_chosen("park", "placement.power_budget_watts=15",
                                 "execution.devices=cpu+opencl", "job.epochs=8", NULL);
    if (under_tsan())
        return;   /* the runs are checked for races; TSan's timings may not get this far */
    static char json[1 << 16];
    char path[700];
    snprintf(path, sizeof path, "%s/park/summary.json", test_tmpdir());
    test_read_text(path, json, sizeof json);
    /* the park is followed at once by exploring (not by a drift found windows later), then a
     * choice */
    const char *parked = strstr(json, "the devices are parked");
    const char *next = parked ? strstr(parked, "\"why\": \"") : NULL;
    const char *exploring = "\"why\": \"exploring: ";
    const char *chosen_after = parked ? strstr(parked, "\"why\": \"policy ") : NULL;
    CHECKF(workers == 1 && strstr(json, "\"devices_parked\": true") && next &&
           !strncmp(next, exploring, strlen(exploring)) && chosen_after, "%s", json);
    /* parked early: in the last epoch, nothing ran on the device */
    const char *last = strstr(json, "\"runtime_last_epoch\"");
    const char *whole = strstr(json, "\"runtime_this_process\"");
    const char *opencl = last ? strstr(last, "\"opencl\": ") : NULL;
    CHECKF(last && whole && (!opencl || opencl > whole), "%s", json);
    /* the counts measured after the park are saved as the workers' alone, not under the key of
     * runs with the device working */
    static char log[1 << 16], saved[1 << 12];
    snprintf(path, sizeof path, "%s/park.log", test_tmpdir());
    test_read_text(path, log, sizeof log);
    const char *kept = strstr(log, "kept in ");
    CHECKF(kept && sscanf(kept, "kept in %699[^\n]", path) == 1, "%s", log);
    test_read_text(path, saved, sizeof saved);
    CHECKF(saved[0] && !strstr(saved, "+devices-"), "%s", saved);
}

/* Runs with devices beside the workers keep their figures apart from the workers' alone, and
 * apart from other devices'; the key stays one word of its line. */
TEST(placement_worker_figures_are_kept_per_set_of_devices)
{
    static job_config cfg;   /* the key reads its layers, batch and slowdown */
    cfg.batch = 32, cfg.slowdown = 1;
    char alone[128], pocl[128], other[128];
    worker_control_key(alone, sizeof alone, &cfg, 1, 28, 28, "avx2", NULL);
    worker_control_key(pocl, sizeof pocl, &cfg, 1, 28, 28, "avx2", "pthread-skylake CPU;");
    worker_control_key(other, sizeof other, &cfg, 1, 28, 28, "avx2", "NVIDIA H100;");
    CHECKF(!strstr(alone, "+devices-") && !strncmp(pocl, alone, strlen(alone)) &&
           strstr(pocl, "+devices-") && strcmp(pocl, other) && !strchr(pocl, ' '),
           "%s / %s / %s", alone, pocl, other);
}

/* A subset of members (bit i: member i takes work; member 0 always does) as one option. */
static option_figures subset_figures(const policy_limits *l, const member_figures *m, int n,
                                     unsigned set)
{
    double speed = 0, watts = 0, carbon_w = 0;
    for (int i = 0; i < n; i++)
        if (set >> i & 1) {
            double c = m[i].carbon_g_per_kwh > 0 ? m[i].carbon_g_per_kwh : l->carbon_g_per_kwh;
            speed += m[i].img_per_s, watts += m[i].watts, carbon_w += c * m[i].watts;
        }
    option_figures o = {1 / speed, watts, 1, carbon_w / watts};
    return o;
}

static double subset_cost(const policy_limits *l, const member_figures *m, int n, unsigned set)
{
    option_figures o = subset_figures(l, m, n, set);
    return policy_cost(l, &o);
}

static double member_j(const member_figures *m)
{
    return m->watts / m->img_per_s;
}

/* Without limits, energy and carbon keep the cheapest subset of all 2^(n-1) and time keeps every
 * member; with a budget or a cap, what is kept fits (when the coordinator alone does) and every
 * parked member spends more per image than every member kept. */
TEST(placement_cluster_keeps_the_machines_a_search_over_every_subset_keeps)
{
    ops_rng r;
    ops_rng_seed(&r, 11);
    int checked = 0, parked_any = 0;
    for (int round = 0; round < 300 * test_scale(1); round++) {
        int n = 2 + (int)(ops_rng_next(&r) % 7), in[8];
        member_figures m[8];
        for (int i = 0; i < n; i++)
            m[i] = (member_figures){uniform(&r, 100, 5000), uniform(&r, 10, 200),
                                    round % 2 ? uniform(&r, 20, 900) : 0};
        for (int p = 0; p < 4; p++) {
            policy_limits l = {(placement_policy)p, 0, -1, 400};
            int taking = cluster_choose(&l, m, n, in);
            CHECKF(in[0] == 1 && taking >= 1, "the coordinator was parked (round %d)", round);
            unsigned chosen = 0;
            for (int i = 0; i < n; i++)
                chosen |= (unsigned)in[i] << i;
            parked_any |= chosen != (1u << n) - 1;
            double got = subset_cost(&l, m, n, chosen);
            double best = INFINITY;
            for (unsigned set = 1; set < 1u << n; set += 2)
                best = fmin(best, subset_cost(&l, m, n, set));
            if (p == POLICY_TIME)
                CHECKF(chosen == (1u << n) - 1, "time parked a machine (round %d)", round);
            else if (p != POLICY_EDP)
                CHECKF(got <= best * (1 + 1e-12), "%s: cost %g, the best subset's %g (round %d)",
                       policy_name(l.policy), got, best, round);
            checked++;
            /* limits: a budget between the coordinator's power and everyone's, a cap */
            l.budget_w = uniform(&r, m[0].watts, m[0].watts * n * 2);
            l.max_slowdown = round % 3 ? -1 : 0.2;
            cluster_choose(&l, m, n, in);
            double watts = 0, most_kept = 0, least_parked = INFINITY;
            for (int i = 0; i < n; i++) {
                watts += in[i] ? m[i].watts : 0;
                if (i && in[i])
                    most_kept = fmax(most_kept, l.policy == POLICY_CARBON ? cluster_share_member_cost(&l, &m[i])
                                                                          : member_j(&m[i]));
                if (!in[i])
                    least_parked = fmin(least_parked, l.policy == POLICY_CARBON
                                                          ? cluster_share_member_cost(&l, &m[i])
                                                          : member_j(&m[i]));
            }
            CHECKF(watts <= l.budget_w * (1 + 1e-12), "%s: %g W kept against a budget of %g W",
                   policy_name(l.policy), watts, l.budget_w);
            CHECKF(most_kept <= least_parked, "%s: parked a member cheaper than one kept",
                   policy_name(l.policy));
        }
    }
    CHECKF(checked > 1000 && parked_any, "%d checks, parked any: %d", checked, parked_any);
}

/* The carbon file: read at the start, re-read after CARBON_REREAD_S, a bad figure named with its
 * line and the last good figure kept, comments skipped; each kWh counts at the figure in force
 * when it was spent. */
#define KWH 3.6e6   /* joules */

TEST(placement_carbon_file_is_reread_and_a_bad_one_keeps_the_last_figure)
{
    char path[700], why[600] = "";
    snprintf(path, sizeof path, "%s/grid.txt", test_tmpdir());
    FILE *f = fopen(path, "w");
    fputs("# g CO2e/kWh, written by the grid's feed\n120\n", f);
    fclose(f);
    carbon_source cs;
    carbon_init(&cs, 475, path);
    CHECK(carbon_update(&cs, 0, 0, why, sizeof why) == 0 && cs.value == 120);
    f = fopen(path, "w");
    fputs("560\n", f);
    fclose(f);
    CHECK(carbon_update(&cs, 1, 1 * KWH, why, sizeof why) == 0 && cs.value == 120);   /* not yet */
    CHECK(carbon_update(&cs, 1 + CARBON_REREAD_S, 2 * KWH, why, sizeof why) == 0 && cs.value == 560);
    CHECKF(fabs(carbon_grams(&cs, 2.5 * KWH) - (2 * 120 + 0.5 * 560)) < 1e-9, "%g g",
           carbon_grams(&cs, 2.5 * KWH));
    f = fopen(path, "w");
    fputs("\n# the feed broke\nsunny\n", f);
    fclose(f);
    CHECK(carbon_update(&cs, 20, 3 * KWH, why, sizeof why) == 1 && cs.value == 560);
    CHECKF(strstr(why, "grid.txt:3") && strstr(why, "sunny"), "%s", why);
    CHECK(carbon_update(&cs, 30, 3 * KWH, why, sizeof why) == 0 && cs.value == 560);   /* said once */
    unlink(path);
    CHECK(carbon_update(&cs, 40, 4 * KWH, why, sizeof why) == 0 && cs.value == 560);
    CHECK(fabs(carbon_grams(&cs, 4 * KWH) - (2 * 120 + 2 * 560)) < 1e-9);
    char comment[1000];   /* a comment of any length is a comment: its tail is no figure */
    memset(comment, 'x', sizeof comment);
    comment[0] = '#', comment[sizeof comment - 1] = 0;
    f = fopen(path, "w");
    fprintf(f, "%s4999\n  280\r\n", comment);
    fclose(f);
    CHECKF(carbon_update(&cs, 50, 4 * KWH, why, sizeof why) == 0 && cs.value == 280, "%g %s",
           cs.value, why);
    unlink(path);
    char dir[720];   /* not a regular file (a FIFO or a device would block or never end) */
    snprintf(dir, sizeof dir, "%s/grid.d", test_tmpdir());
    mkdir(dir, 0755);
    carbon_init(&cs, 300, dir);
    CHECKF(carbon_update(&cs, 0, 0, why, sizeof why) == 1 && cs.value == 300 &&
           strstr(why, "not a regular file"), "%s", why);
    carbon_init(&cs, 300, "/dev/zero");
    CHECKF(carbon_update(&cs, 0, 0, why, sizeof why) == 1 && strstr(why, "/dev/zero: not a regular"),
           "%s", why);
    carbon_init(&cs, 300, NULL);
    CHECK(carbon_update(&cs, 0, 0, why, sizeof why) == 0 && cs.value == 300);
    carbon_init(&cs, 300, path);
    CHECKF(carbon_update(&cs, 0, 0, why, sizeof why) == 1 && strstr(why, "No such file"), "%s", why);
}

/* The sensor that calibrates a GPU's power for placement: by the name NVML shares with OpenCL,
 * else the only sensor of the device's vendor; none when two could be it, or none is readable.
 * The figure: joules above idle over busy seconds, from epochs added up while each is too
 * short to tell. */
TEST(placement_device_sensor_is_found_and_short_epochs_add_up_to_a_figure)
{
    sensor s[4] = {{.name = "package-0", .source = "rapl", .scope = SCOPE_CPU},
                   {.name = "NVIDIA A2", .source = "nvml", .scope = SCOPE_GPU},
                   {.name = "amdgpu power1", .source = "hwmon", .scope = SCOPE_GPU},
                   {.name = "NVIDIA T4", .source = "nvml", .scope = SCOPE_GPU}};
    CHECK(device_energy_sensor_for(s, 4, "NVIDIA T4", "NVIDIA Corporation") == 3);
    CHECK(device_energy_sensor_for(s, 4, "Tesla", "NVIDIA Corporation") == -1);   /* two */
    CHECK(device_energy_sensor_for(s, 3, "Tesla", "NVIDIA Corporation") == 1);
    CHECK(device_energy_sensor_for(s, 4, "gfx1030", "Advanced Micro Devices, Inc.") == 2);
    CHECK(device_energy_sensor_for(s, 4, "Arc A770", "Intel(R) Corporation") == -1);
    s[2].status = SENSOR_UNREADABLE;
    CHECK(device_energy_sensor_for(s, 4, "gfx1030", "Advanced Micro Devices, Inc.") == -1);
    /* 500 J in 10 s over a 20 W idle: 300 J of work in 2 busy seconds */
    CHECK(fabs(device_energy_calibrate(500, 10, 20, 2) - 150) < 1e-9);
    CHECK(device_energy_calibrate(500, 10, 20, 0.1) < 0);    /* too little evidence */
    CHECK(device_energy_calibrate(150, 10, 20, 2) < 0);      /* below idle: a sensor misread */
    /* epochs of 0.09 busy seconds (1 s, 150 W of work over a 20 W idle) add up to a figure */
    energy_evidence ev = {0, 0, 0};
    double busy = 0.09;
    CHECK(device_energy_gather(&ev, 20 + 150 * 0.09, 1, 20, &busy) < 0);
    busy = 0.09;
    CHECK(device_energy_gather(&ev, 20 + 150 * 0.09, 1, 20, &busy) < 0);
    busy = 0.09;
    CHECK(fabs(device_energy_gather(&ev, 20 + 150 * 0.09, 1, 20, &busy) - 150) < 1e-9);
    CHECK(fabs(busy - 0.27) < 1e-12 && ev.busy_s == 0 && ev.joules == 0);   /* afresh */
    busy = 0.25;   /* enough alone: from this epoch only */
    CHECK(fabs(device_energy_gather(&ev, 20 + 90 * 0.25, 1, 20, &busy) - 90) < 1e-9);
}
