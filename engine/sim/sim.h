/* `frugal simulate`: a job on the machines of a scenario (scenario.h), simulated event by event
 * (chunks, messages, averaging rounds, gossip rounds, joins, leaves and failures) with the real
 * code's decisions: the synchronous deal and the averaging split (placement/cluster_share.h),
 * the policy's choice of nodes, the gossip topology and participation draw
 * (cluster/gossip_topology.h), and the messages' sizes from the real encoders.
 *
 * What it predicts: time per epoch, joules and grams of CO2e per machine and in total, bytes per
 * machine and message type, idle time. It predicts cost, not accuracy. */
#ifndef FRUGAL_SIM_H
#define FRUGAL_SIM_H

#include "engine/report/cluster_summary.h"
#include "engine/sim/scenario.h"

#include <stddef.h>

typedef struct sim_machine_result {
    char name[80];
    int group;
    long chunks, samples;            /* what it trained on: chunks (sync, average) and samples */
    double compute_s;                /* seconds with work on its workers */
    double worker_s;                 /* worker-seconds busy */
    double present_s;                /* seconds taking part (from join to leave, fail or end) */
    double joules, grams;
    unsigned long long bytes_sent, bytes_received;
    double img_per_s, chunk_s;       /* its speed for this job, a chunk on one worker */
    int failed, left;
    long rounds_out;                 /* rounds the participation policy left it out of */
} sim_machine_result;

typedef struct sim_epoch {
    double seconds, samples, joules, grams;
} sim_epoch;

typedef struct sim_result {
    int n;
    sim_machine_result *m;
    int nepochs;
    sim_epoch *epochs;
    double seconds, joules, grams, samples;
    int busiest;                     /* the machine with the most bytes both ways */
    long rounds;                     /* averaging and gossip rounds */
    int ntraffic;
    cluster_traffic traffic[CLUSTER_TRAFFIC_TYPES];
    double flops_per_sample;
    long nparams;
    int nchunks;
} sim_result;

/* Simulates the scenario: 0, or -1 with err (out of memory). */
int sim_run(const sim_scenario *s, sim_result *out, char *err, size_t errlen);
void sim_result_free(sim_result *r);
/* The mode's name as summary.json writes it: "synchronous", "averaging every K", "gossip RING". */
void sim_mode_name(const sim_scenario *s, char *out, size_t cap);

#endif
