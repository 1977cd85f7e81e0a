/* frugal simulate: scenarios read strictly, carbon traces, and the simulator checked against real
 * loopback clusters: calibrated from runs on one machine, it must predict a periodic-averaging
 * cluster's messages and bytes exactly, its time per epoch within 15% and each machine's share of
 * the samples within 10 points (the errors are printed). */
#include "common/json_parse.h"
#include "energy/carbon_trace.h"
#include "engine/sim/scenario.h"
#include "engine/sim/sim.h"
#include "frugal_cli.h"
#include "test.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char out[1 << 16];

static const char *tmp(const char *name)
{
    static char buf[16][700];
    static int next;
    char *p = buf[next++ % 16];
    snprintf(p, 700, "%s/%s", test_tmpdir(), name);
    return p;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECKF(f != NULL, "%s", path);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static const char *job_text(void)
{
    return "[job]\nepochs = 3\nbatch = 32\nseed = 7\n[data]\nformat = idx\n"
           "train_images = /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz\n"
           "train_labels = /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz\n"
           "limit = 3072\n[conv]\nfilters = 8\nsize = 3\n[relu]\n[maxpool]\nsize = 2\n[flatten]\n"
           "[dense]\noutputs = 10\n[softmax_xent]\n[optimizer]\ntype = sgd\nlr = 0.01\nmomentum = 0.9\n"
           "[execution]\nworkers = 1\ngrain = 4\ndevices = cpu\n[energy]\nbaseline_seconds = 0\n";
}

TEST(simulate_carbon_traces_read_dated_lines_and_refuse_bad_ones)
{
    char err[600];
    carbon_trace tr;
    const char *path = tmp("ci.csv");
    write_file(path, "Time,Carbon Intensity\n2020-01-01 00:00:00,100\n2020-01-01 00:30:00,50.5\n");
    CHECKF(carbon_trace_load(&tr, path, err, sizeof err) == 0, "%s", err);
    double t0 = carbon_trace_time("2020-01-01 00:00");
    CHECK(fabs(t0 - 1577836800.0) < 1e-6);
    CHECK(carbon_trace_at(&tr, t0 - 10) == 100 && carbon_trace_at(&tr, t0 + 1799) == 100);
    CHECK(carbon_trace_at(&tr, t0 + 1800) == 50.5 && carbon_trace_at(&tr, t0 + 1e6) == 50.5);
    carbon_trace_free(&tr);
    write_file(path, "Time,CI\n2020-01-01 00:30,10\n2020-01-01 00:00,20\n");
    CHECK(carbon_trace_load(&tr, path, err, sizeof err) == -1 && strstr(err, ":3:") && strstr(err, "not after"));
    write_file(path, "0,10\n60,-4\n");
    CHECK(carbon_trace_load(&tr, path, err, sizeof err) == -1 && strstr(err, ":2:"));
}

TEST(simulate_scenario_errors_name_the_file_line_and_key)
{
    char err[1500];
    sim_scenario *s = malloc(sizeof *s);
    const char *job = tmp("sim_job.cfg"), *scn = tmp("bad.scn");
    write_file(job, job_text());
    const char *bad[][2] = {
        {"[scenario]\njob = sim_job.cfg\nspeed = 3\n", ":3: [scenario] has no key 'speed'"},
        {"[scenario]\njob = sim_job.cfg\n[machine]\nname = a\n", "needs profile, run, or img_per_s"},
        {"[scenario]\njob = sim_job.cfg\n[machine]\nname = a\nimg_per_s = 100\npower = 10, 20, 30\n"
         "[link]\nbetween = a b\n", ":7: [link] between: no [machine] named 'b'"},
        {"[scenario]\njob = sim_job.cfg\n[machine]\nname = a\nprofile = nowhere.profile\n", ":5: profile:"},
        {"[scenario]\njob = sim_job.cfg\n[machine]\nname = a\nimg_per_s = 100\npower = 30, 20, 10\n", ":6: power:"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file(scn, bad[i][0]);
        CHECKF(scenario_load(s, scn, NULL, err, sizeof err) == -1 && strstr(err, bad[i][1]) && strstr(err, "bad.scn"),
               "case %zu: %s", i, err);
    }
    free(s);
}

/* A figure of summary.json at a dotted path. */
static double figure(const json_value *s, const char *path) { return json_num(json_get(s, path), NAN); }

static json_value *summary_of(const char *dir)
{
    char path[760], err[300];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    size_t len;
    char *text = test_read_text(path, out, sizeof out) ? strdup(out) : NULL;
    len = text ? strlen(text) : 0;
    json_value *v = text ? json_parse(text, len, err, sizeof err) : NULL;
    free(text);
    CHECKF(v != NULL, "%s", path);
    return v;
}

static const json_value *traffic_of(const json_value *s, const char *type)
{
    const json_value *t = json_get(s, "cluster.traffic");
    for (int i = 0; t && i < t->n; i++)
        if (!strcmp(json_str(json_get(&t->items[i], "type"), ""), type))
            return &t->items[i];
    return NULL;
}

/* The median epoch's seconds (a real run's epochs vary with what else the host does). */
static double median_epoch_s(const json_value *s)
{
    const json_value *e = json_get(s, "epochs");
    double v[16];
    int n = 0;
    for (int i = 0; e && i < e->n && n < 16; i++) {
        double x = figure(&e->items[i], "seconds"), *at = v + n++;
        for (; at > v && at[-1] > x; at--)
            *at = at[-1];
        *at = x;
    }
    return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : NAN;
}

static const char *slowdown(int factor)
{
    static char buf[4][64];
    static int next;
    const char *v = getenv("FRUGAL_TEST_VARIANT");
    int base = !v || !strcmp(v, "release") ? 50 : !strcmp(v, "tsan") ? 3 : 6;
    char *p = buf[next++ % 4];
    snprintf(p, 64, "%d", base * factor);
    return p;
}

/* A real coordinator with one node (its slowdown `node_factor` times the coordinator's), under
 * periodic averaging every 8 batches or synchronous, into dir. */
static void real_cluster(const char *job, const char *dir, int node_factor, int averaging)
{
    char sets[2][80], addr[64];
    snprintf(sets[0], sizeof sets[0], "execution.slowdown=%s", slowdown(1));
    snprintf(sets[1], sizeof sets[1], "job.output=%s", dir);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", 12000 + (int)(getpid() % 500) * 32 + 30 + node_factor);
    const char *keyfile = tmp("sim.key");
    if (access(keyfile, F_OK))
        CHECKF(FRUGAL(out, "keygen", keyfile) == 0, "%s", out);
    pid_t node = frugal_spawn(&(frugal_call){(uid_t)-1, NULL, 0}, tmp("sim_node.log"),
                              (const char *const[]){"join", addr, "--key", keyfile, "--workers", "1",
                                                    "--slowdown", slowdown(node_factor), "--timeout", "20", NULL});
    CHECKF(FRUGAL(out, "train", job, "--set", sets[0], "--set", sets[1], "--set",
                  averaging ? "cluster.sync_every=8" : "placement.all_nodes=on",
                  "--overwrite", "--listen", addr, "--key", keyfile, "--wait-for", "1") == 0, "%s", out);
    int status;
    waitpid(node, &status, 0);
}

/* here.profile: this host's speed with two workers busy on it (two runs on one machine at once),
 * as the coordinator and its node will keep it, whatever else runs here meanwhile. */
static void calibrate(const char *job)
{
    char set_slow[64], set_out[2][760];
    snprintf(set_slow, sizeof set_slow, "execution.slowdown=%s", slowdown(1));
    for (int i = 0; i < 2; i++)
        snprintf(set_out[i], sizeof set_out[i], "job.output=%s", tmp(i ? "sim_one_b" : "sim_one_a"));
    pid_t other = frugal_spawn(&(frugal_call){(uid_t)-1, NULL, 0}, tmp("sim_one_b.log"),
                               (const char *const[]){"train", job, "--set", set_slow, "--set", set_out[1],
                                                     "--overwrite", NULL});
    CHECKF(FRUGAL(out, "train", job, "--set", set_slow, "--set", set_out[0], "--overwrite") == 0, "%s", out);
    int status;
    CHECK(waitpid(other, &status, 0) == other && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECKF(FRUGAL(out, "simulate", "--calibrate", tmp("sim_one_a"), tmp("sim_one_b"), "-o", tmp("here.profile")) == 0,
           "%s", out);
    CHECK(strstr(out, "speed = 1 ") != NULL);
}

/* The scenario of that cluster: two machines of this host, calibrated from the run on one. */
static void simulate_cluster(const char *dir, int node_factor, int averaging)
{
    char scn[2000];
    snprintf(scn, sizeof scn, "[scenario]\njob = sim_job.cfg\nmode = %s\nevery = 8\n"
             "[machine]\nname = coordinator\nprofile = here.profile\nhost = this\n"
             "[machine]\nname = node\nprofile = here.profile\nworkers = 1\nslowdown = %d\nhost = this\n",
             averaging ? "average" : "sync", node_factor);
    write_file(tmp("cluster.scn"), scn);
    CHECKF(FRUGAL(out, "simulate", tmp("cluster.scn"), "-o", dir) == 0, "%s", out);
    CHECK(strstr(out, "predicts cost") != NULL);
}

static void compare(const char *real_dir, const char *sim_dir, const char *what)
{
    json_value *real = summary_of(real_dir), *sim = summary_of(sim_dir);
    if (!real || !sim)
        return;
    const char *types[] = {"PARAMS", "ROUND", "MODEL"};
    for (int i = 0; i < 3; i++) {
        const json_value *a = traffic_of(real, types[i]), *b = traffic_of(sim, types[i]);
        CHECKF(a && b, "%s: no %s in the traffic", what, types[i]);
        if (!a || !b)
            continue;
        double ab = figure(a, "sent_bytes") + figure(a, "received_bytes");
        double bb = figure(b, "sent_bytes") + figure(b, "received_bytes");
        printf("  %s %s: real %.0f bytes, simulated %.0f\n", what, types[i], ab, bb);
        CHECKF(ab == bb, "%s: %s bytes: real %.0f, simulated %.0f", what, types[i], ab, bb);
    }
    double rt = median_epoch_s(real), st = median_epoch_s(sim);
    const json_value *rn = json_get(real, "cluster.nodes"), *sn = json_get(sim, "cluster.nodes");
    double rshare = rn && rn->n ? figure(&rn->items[0], "share") : NAN;
    double sshare = sn && sn->n > 1 ? figure(&sn->items[1], "share") : NAN;
    printf("  %s: epoch real %.3f s, simulated %.3f s (%+.1f%%); node's share real %.1f%%, simulated "
           "%.1f%%\n", what, rt, st, 100 * (st / rt - 1), 100 * rshare, 100 * sshare);
    fflush(stdout);
    const char *variant = getenv("FRUGAL_TEST_VARIANT");
    if (!variant || !strcmp(variant, "release"))   /* sanitizers add costs no profile of this job has */
        CHECKF(fabs(st / rt - 1) <= 0.15, "%s: time per epoch %.3f s simulated, %.3f s real", what, st, rt);
    CHECKF(fabs(sshare - rshare) <= 0.10, "%s: node's share %.3f simulated, %.3f real", what, sshare, rshare);
    json_free(real);
    json_free(sim);
}

/* Calibrated from one machine's run, the simulator predicts a real averaging cluster: the same
 * node, and a node twice as slow (its share falls). */
TEST(simulate_predicts_a_loopback_averaging_cluster_calibrated_from_one_machine)
{
    char job[700];   /* tmp()'s buffers are reused */
    snprintf(job, sizeof job, "%s", tmp("sim_job.cfg"));
    write_file(job, job_text());
    calibrate(job);
    for (int factor = 1; factor <= 2; factor++) {
        char real[64], sim[64], what[32];
        snprintf(real, sizeof real, "sim_real%d", factor);
        snprintf(sim, sizeof sim, "sim_pred%d", factor);
        snprintf(what, sizeof what, "node %dx slower", factor);
        real_cluster(job, tmp(real), factor, 1);
        simulate_cluster(tmp(sim), factor, 1);
        compare(tmp(real), tmp(sim), what);
    }
}

/* Gossip over many machines: the pushes are what the topology says (n peers, 2 ring neighbours,
 * one round an epoch here), and a site's trace sets its grams. */
TEST(simulate_gossip_counts_every_push_and_prices_joules_by_the_site_trace)
{
    write_file(tmp("sim_job.cfg"), job_text());
    write_file(tmp("flat.csv"), "Time,CI\n2020-06-01 00:00,200\n2020-06-01 12:00,100\n");
    write_file(tmp("gossip.scn"), "[scenario]\njob = sim_job.cfg\nmode = gossip\ntopology = ring\nneighbours = 2\n"
               "every = 1000\nepochs = 1\nstart = 2020-06-01 11:00\n[site]\nname = x\ncarbon_trace = flat.csv\n"
               "[machine]\nname = p\ncount = 500\nimg_per_s = 1000\npower = 10, 20, 30\ncpus = 2\nsite = x\n");
    char err[1500];
    sim_scenario *s = malloc(sizeof *s);
    CHECKF(scenario_load(s, tmp("gossip.scn"), NULL, err, sizeof err) == 0, "%s", err);
    sim_result r;
    CHECKF(sim_run(s, &r, err, sizeof err) == 0, "%s", err);
    CHECK(r.n == 500 && r.rounds == 1);
    CHECKF(r.ntraffic == 1 && r.traffic[0].sent == 1000, "%ld pushes", r.ntraffic ? r.traffic[0].sent : 0);
    CHECKF(fabs(r.grams - r.joules * 200 / 3.6e6) < 1e-9 * r.grams, "%g g for %g J", r.grams, r.joules);
    double samples = 0;
    for (int i = 0; i < r.n; i++)
        samples += (double)r.m[i].samples;
    CHECK(samples >= 3072 && samples < 3072 + 500);
    sim_result_free(&r);
    scenario_free(s);
    free(s);
}

/* Synchronous: the parameters' bytes (a LAYER per layer and batch) within one batch's; the time and
 * the node's share are printed, not checked (docs/simulate.md: a real node computes a chunk slower
 * than the runs on one machine it is calibrated from, so the real deal gives it less). */
TEST(simulate_synchronous_cluster_bytes_and_shares_against_a_real_one)
{
    char job[700];   /* tmp()'s buffers are reused */
    snprintf(job, sizeof job, "%s", tmp("sim_job.cfg"));
    write_file(job, job_text());
    calibrate(job);
    real_cluster(job, tmp("sim_real_sync"), 1, 0);
    simulate_cluster(tmp("sim_pred_sync"), 1, 0);
    json_value *real = summary_of(tmp("sim_real_sync")), *sim = summary_of(tmp("sim_pred_sync"));
    if (!real || !sim)
        return;
    const json_value *a = traffic_of(real, "LAYER"), *b = traffic_of(sim, "LAYER");
    CHECK(a && b);
    double layer_bytes = 0;   /* one batch's LAYERs */
    const json_value *nodes = json_get(real, "cluster.nodes");
    if (a && b) {
        layer_bytes = figure(b, "sent_bytes") / figure(b, "sent");
        printf("  LAYER: real %.0f messages, %.0f bytes; simulated %.0f, %.0f\n", figure(a, "sent"),
               figure(a, "sent_bytes"), figure(b, "sent"), figure(b, "sent_bytes"));
        CHECKF(fabs(figure(a, "sent_bytes") - figure(b, "sent_bytes")) <= 2 * layer_bytes + 1,
               "LAYER bytes: real %.0f, simulated %.0f", figure(a, "sent_bytes"), figure(b, "sent_bytes"));
    }
    const json_value *sn = json_get(sim, "cluster.nodes");
    double rshare = nodes && nodes->n ? figure(&nodes->items[0], "share") : NAN;
    double sshare = sn && sn->n > 1 ? figure(&sn->items[1], "share") : NAN;
    double rt = median_epoch_s(real), st = median_epoch_s(sim);
    printf("  synchronous: epoch real %.3f s, simulated %.3f s (%+.1f%%); node's share real %.1f%%, "
           "simulated %.1f%%\n", rt, st, 100 * (st / rt - 1), 100 * rshare, 100 * sshare);
    fflush(stdout);
    json_free(real);
    json_free(sim);
}

/* --search: every option simulated and printed, the choice under the policy within the deadline. */
TEST(simulate_search_names_the_best_option_for_the_policy)
{
    write_file(tmp("sim_job.cfg"), job_text());
    write_file(tmp("search.scn"), "[scenario]\njob = sim_job.cfg\nepochs = 1\npolicy = energy\n"
               "[machine]\nname = frugal\nimg_per_s = 1000\npower = 5, 10, 15\ncpus = 2\n"
               "[machine]\nname = hungry\nimg_per_s = 1000\npower = 100, 200, 300\ncpus = 2\n");
    CHECKF(FRUGAL(out, "simulate", tmp("search.scn"), "--search") == 0, "%s", out);
    CHECKF(strstr(out, "frugal+hungry") && strstr(out, "gossip exponential every 10"), "%s", out);
    const char *best = strstr(out, "best by energy");
    CHECKF(best && strstr(best, "\nfrugal ") && !strstr(best, "hungry"), "%s", out);
    /* a deadline only both machines meet */
    char set[64];
    snprintf(set, sizeof set, "scenario.deadline_s=%g", 3072 / 1000.0 * 0.75);
    CHECKF(FRUGAL(out, "simulate", tmp("search.scn"), "--search", "--set", set) == 0, "%s", out);
    best = strstr(out, "within the deadline");
    CHECKF(best && strstr(best, "frugal+hungry"), "%s", out);
}
