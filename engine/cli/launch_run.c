/* Each rank's part of a launched run (launch_run.h). */
#include "engine/cli/launch_run.h"

#include "engine/cli/launch_spawn.h"
#include "engine/cli/signals.h"
#include "engine/cluster/node.h"
#include "energy/account.h"
#include "engine/job/config.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int launch_run_join(node_options *o)
{
    signals_install_leaving();
    o->stop = &signals_stop;
    int rc = node_run(o);
    int sig = atomic_load(&signals_stop);
    signals_restore();
    return sig ? 128 + sig : rc;
}

/* A rank other than 0 of a sync or average run: frugal join, with this command's --workers,
 * --devices and --identity. */
static int run_node(const launch_plan *p, const run_options *o, const launch_request *rq)
{
    node_options no = {.coordinator = p->coordinator, .key_path = p->key_path,
                       .identity_path = rq->identity,
                       .workers = (int)sysconf(_SC_NPROCESSORS_ONLN),
                       .devices = launch_override(o->overrides, "execution.devices"),
                       .timeout_s = o->timeout_s > 0 ? o->timeout_s : 10,
                       .linger_s = p->wait_s,   /* rank 0 may start listening later */
                       .slowdown = 1, .carbon_g_per_kwh = CARBON_G_PER_KWH, .out = o->out};
    const char *workers = launch_override(o->overrides, "execution.workers");
    if (workers && atoi(workers) > 0)
        no.workers = atoi(workers), no.workers_pinned = 1;
    if (no.devices && config_devices(no.devices) < 0) {
        fprintf(stderr, "frugal train: --devices %s: expected %s\n", no.devices, CONFIG_DEVICES);
        return 2;
    }
    return launch_run_join(&no);
}

/* Rank 0 (and, in a gossip run, every rank): run_train with the plan's addresses and key; in
 * an OAR job, the other hosts started first and waited for after. */
static int run_ranked(const launch_plan *p, run_options *o, const launch_request *rq)
{
    const char **sets = NULL;
    char output[700];
    if (p->role == LAUNCH_PEER) {   /* each peer its own output folder */
        int n = 0;
        while (o->overrides && o->overrides[n])
            n++;
        if (!(sets = calloc((size_t)n + 2, sizeof *sets))) {
            fprintf(stderr, "frugal train: out of memory\n");
            return 1;
        }
        if (n)
            memcpy(sets, o->overrides, (size_t)n * sizeof *sets);
        snprintf(output, sizeof output, "job.output=%s/peer-%d", p->output, p->env.rank);
        sets[n] = output;
        o->overrides = sets;
        o->advertise = p->advertise;
        if (p->env.rank)
            o->peers[o->npeers++] = p->coordinator;
    }
    o->listen = p->listen;
    o->key = p->key_path;
    o->wait_for = p->wait_for;
    signals_install();
    launch_children children = {0};
    char err[1024];
    int rc = 0;
    if (p->env.kind == LAUNCH_OAR && launch_spawn(&children, p, o, rq, o->out, err, sizeof err)) {
        fprintf(stderr, "frugal train: %s\n", err);
        rc = 1;
    }
    rc = rc ? rc : run_train(o);
    if (children.n && launch_spawn_wait(&children, p->mode == CLUSTER_GOSSIP, &signals_stop, o->out) &&
        !rc)
        rc = 1;
    signals_restore();
    free(sets);
    return rc;
}

int launch_run_train(run_options *o, const launch_request *rq)
{
    launch_plan p;
    char err[1200];
    if (launch_prepare(&p, rq, NULL, NULL, o->job, o->overrides, o->out, err, sizeof err)) {
        fprintf(stderr, "frugal train: %s\n", err);
        launch_finish(&p);
        return 1;
    }
    o->launch_json = p.json;
    int rc;
    if (p.role == LAUNCH_ALONE) {
        signals_install();
        rc = run_train(o);
        signals_restore();
    } else {
        rc = p.role == LAUNCH_NODE ? run_node(&p, o, rq) : run_ranked(&p, o, rq);
    }
    launch_finish(&p);
    return rc;
}
