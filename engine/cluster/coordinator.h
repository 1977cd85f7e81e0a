/* The coordinator of a training cluster: `frugal train JOB --listen ADDR:PORT --key KEY`.
 *
 * It trains as on one machine, and nodes (`frugal join`) compute some chunks of each batch:
 * as many as their measured speed is worth against the coordinator's (CPU seconds per chunk,
 * measured on each side, and workers), handed out as nodes ask for them, so a faster node takes
 * more. A node gets the job, the training files it lacks (by hash), the batch's parameters, and
 * chunk numbers; it returns each chunk's partial gradient, which goes into the same place a
 * local chunk's would, so the gradients are summed in the same fixed order and the weights are
 * the same as on one machine (a node computing a batch's last chunks sums them first, as that
 * order does, and the chunks summed into the first of them get -0.0, which adds nothing).
 * Under a placement policy other than plain time, or a power budget, only the machines worth
 * their joules take work: the others are parked (they stay connected and get a chunk now and
 * then to stay measured). Nodes may join at any time (they start with the next chunk they
 * are sent, with the current parameters) and leave at any time: the chunks a lost node had are
 * sent to another, or computed here when none is left. Under periodic averaging
 * ([cluster] sync_every) nodes train on their share with local steps instead, and their models
 * are averaged (engine/cluster/averaging.c). */
#ifndef FRUGAL_COORDINATOR_H
#define FRUGAL_COORDINATOR_H

#include "energy/meter.h"
#include "engine/job/config.h"
#include "engine/job/dataset.h"
#include "engine/report/cluster_summary.h"
#include "engine/train/trainer.h"
#include "runtime/runtime.h"

#include <stdio.h>

typedef struct coordinator coordinator;

typedef struct coordinator_options {
    const char *listen;          /* ADDR:PORT */
    const char *key_path;
    double timeout_s;            /* a silent node is lost after this long */
    const char *job_path;
    const char *const *overrides;
    const _Atomic int *stop;     /* set (a signal): the batch under way ends within timeout_s */
    const char *allow_path;      /* the identities admitted (allow_list.h); NULL: any key holder */
} coordinator_options;

/* Loads the key, hashes the training files, listens, and adds the peer worker to rc (before
 * rt_create). Says on log where it listens. NULL with err. */
coordinator *coordinator_start(const coordinator_options *o, const job_config *cfg,
                               const dataset *train, rt_config *rc, FILE *log, char *err,
                               size_t errlen);
/* After trainer_create: starts listening, and the trainer asks it how many chunks of each batch
 * go to nodes. 0, or -1 with err (e.g. the address is taken). */
int coordinator_attach(coordinator *c, trainer *t, rt_runtime *rt, char *err, size_t errlen);
/* The epoch's training pass from first_batch, as the training mode has it (engine/cluster/
 * mode.h): synchronous, the trainer's pass with chunks dealt to the nodes; periodic averaging,
 * rounds of local steps on this machine and the nodes, the models averaged after each. out
 * counts every machine's samples. 0, or -1 with err. */
int coordinator_train_epoch(coordinator *c, int epoch, long first_batch, pass_result *out,
                            char *err, size_t errlen);
/* This machine's energy meter: with it, the placement policy ([placement] policy, budget,
 * slowdown) decides which nodes take work (cluster_share.h); without, every node does. */
void coordinator_use_meter(coordinator *c, energy_meter *meter);
/* The nodes' grams of CO2e so far (as they report them, and since then at their power); whether
 * a ready node that has reported is green now (at most threshold g/kWh, or its renewable power
 * covers its draw). */
double coordinator_nodes_grams(coordinator *c);
int coordinator_any_node_green(coordinator *c, double threshold);
/* Where the participation decisions go (the run's, engine/report/green_log.h); NULL: nowhere. */
struct green_log;
void coordinator_use_green_log(coordinator *c, struct green_log *g);
/* Waits until `nodes` nodes are ready or `seconds` pass; returns how many are. */
int coordinator_wait_for(coordinator *c, int nodes, double seconds);
/* One line for this machine and one per node for the progress display, then every machine's
 * energy added up: here_joules is this machine's in the run so far (estimated or measured). */
void coordinator_print_nodes(coordinator *c, FILE *f, double here_joules, int here_estimated);
/* The cluster for summary.json (engine/report/): every node that took part, and the energy of
 * every machine added up; here_joules is this machine's so far. */
void coordinator_summarize(coordinator *c, double here_joules, int here_estimated,
                           cluster_summary *out);
/* The work this machine did outside the trainer's runtime since the last call (synchronous: the
 * engine that computes chunks taken back from nodes, or lost nodes'), as run statistics over
 * the same span as this machine's runtime: 1, or 0 when it computed nothing. */
int coordinator_extra_work(coordinator *c, rt_stats *out);
/* Tells the nodes training is over (paused: stopped before its end, it may be resumed: they
 * try to rejoin), closes every connection. why NULL: says nothing (a failed start). */
void coordinator_stop(coordinator *c, const char *why, int paused);

#endif
