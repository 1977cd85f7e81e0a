/* A scenario for `frugal simulate`: a job on machines you may not have. INI sections, read as
 * strictly as a job file (every error names the file, the line and the key):
 *
 *   [scenario]  job (a job file, relative to the scenario), mode (sync | average | gossip;
 *               default the job's), every (average: batches a round; gossip: steps between
 *               exchanges), topology, neighbours, participation (gossip), epochs, samples
 *               (default: the job's training set), start (UTC "YYYY-MM-DD HH:MM": where the
 *               carbon traces are read from), latency_ms, bandwidth_mbit, loss (every link no
 *               [link] names), carbon (g/kWh where no site says), policy (time | energy | edp |
 *               carbon: which nodes take work, as the coordinator decides), deadline_s
 *               (--search), green_policy (always | random | green | budget | backup: who takes
 *               part in each round, engine/placement/participation.h; default the job's
 *               [placement] participation), green_g_per_kwh, budget_g, random_share,
 *               green_deadline_s (the job's deadline; default its [job] deadline), output
 *   [site]      name, carbon (g/kWh) or carbon_trace (a CSV time series, energy/grid_trace.h),
 *               renewable_trace (watts each of its machines has of its own)
 *   [link]      between (two machine names, or one: the link within that group), latency_ms,
 *               bandwidth_mbit, loss (a fraction of packets: TCP's throughput falls as
 *               1/sqrt(loss), Mathis et al. 1997)
 *   [machine]   name, count (machines alike: NAME-1 ... NAME-count), profile (a file from
 *               --calibrate, relative to the scenario) or run (a run folder, calibrated on
 *               the spot) or img_per_s with power (IDLE, ONE, ALL watts) and cpus; workers,
 *               slowdown, site, host (machines of one host share its cores), join_at,
 *               leave_at, fail_at (seconds into the run)
 *
 * The first machine is the coordinator in sync and average modes. */
#ifndef FRUGAL_SIM_SCENARIO_H
#define FRUGAL_SIM_SCENARIO_H

#include "engine/job/config.h"
#include "engine/sim/profile.h"
#include "energy/grid_trace.h"

#include <stddef.h>

#define SCENARIO_MAX_GROUPS 64
#define SCENARIO_MAX_SITES 16
#define SCENARIO_MAX_LINKS 256
#define SCENARIO_MAX_MACHINES 100000

typedef struct sim_site {
    char name[64];
    double carbon;               /* g/kWh when no trace */
    grid_trace trace;            /* n = 0: none */
    grid_trace renewable;        /* watts each machine of the site has of its own; n = 0: none */
} sim_site;

typedef struct sim_link {
    double latency_s, bits_per_s, loss;
} sim_link;

/* A [machine] section: `count` machines alike. */
typedef struct sim_group {
    char name[64];
    int count, line;
    sim_profile profile;
    int workers;                 /* 0: the profile's largest measured */
    double slowdown;
    int site;                    /* index in sites; -1: the scenario's carbon */
    char host[64];               /* "": a host of its own */
    double join_at, leave_at, fail_at;
} sim_group;

typedef struct sim_scenario {
    char path[CONFIG_PATH], job_path[CONFIG_PATH], output[CONFIG_PATH];
    job_config job;
    int mode;                    /* cluster_mode */
    int every, topology, neighbours;
    double participation;
    int epochs;
    long samples;
    int channels, height, width, classes;
    double start;                /* seconds since the epoch (UTC); 0: traces from their start */
    double carbon;
    int policy;                  /* policy_kind; -1: every node takes work */
    double deadline_s;           /* 0: none */
    int green_policy;            /* participation_policy (default the job's) */
    double green_g_per_kwh, budget_g, random_share;
    double green_deadline_s;     /* the job's deadline, seconds from the start; 0: none */
    sim_link default_link;
    sim_link links[SCENARIO_MAX_GROUPS][SCENARIO_MAX_GROUPS];
    unsigned char linked[SCENARIO_MAX_GROUPS][SCENARIO_MAX_GROUPS];
    sim_site sites[SCENARIO_MAX_SITES];
    int nsites;
    sim_group groups[SCENARIO_MAX_GROUPS];
    int ngroups;
    long machines;
} sim_scenario;

/* Reads the scenario, its job (and the job's training set, unless `samples` is given), its
 * profiles and traces, with --set overrides ("section.key=value", for [scenario] only).
 * 0, or -1 with err. */
int scenario_load(sim_scenario *s, const char *path, const char *const *overrides, char *err,
                  size_t errlen);
void scenario_free(sim_scenario *s);
/* The link between two groups. */
const sim_link *scenario_link(const sim_scenario *s, int a, int b);

#endif
