/* Decentralized training ([cluster] mode = gossip): every machine runs `frugal train JOB
 * --listen ADDR:PORT --key K --peer HOST:PORT`; there is no coordinator. Each peer trains on its
 * own data (its [data], or a shard of a shared set) and, every [gossip] every local steps, sends
 * its model to a few neighbours chosen by the topology (gossip_topology.h) with a share of its
 * push-sum weight, and mixes in what its neighbours sent it (Nedic and Ozdaglar 2009; SGP,
 * Assran et al. 2019): the weighted mean of the models is kept whichever peers take part, so a
 * partial or lopsided exchange still converges to the average.
 *
 *   start    the hub listens and dials the --peer addresses; HELLOs carry the job's hash (other
 *            jobs are refused) and MEMBERS spread the membership, the lower id dialing, so the
 *            peers form one mesh; [gossip] peers = N waits for N at the start (and gives shard =
 *            auto its place)
 *   attach   a peer that finds the others past their first round asks a neighbour for its model
 *            and epoch (STATE) and starts from there
 *   rounds   K local steps, then PUSH to the round's targets, wait for the round's expected
 *            pushes (the in-neighbours the same graph gives) until a deadline drawn from how late
 *            each neighbour's pushes have come (no timeout to guess), mix, go on; a peer that
 *            sits the round out ([gossip] participation) neither sends nor is waited for
 *   finish   FINAL to every peer up; the FINALs of the peers present (each waited for while its
 *            link lives) averaged, weighted by samples, in id order: every peer writes the same
 *            model.bin
 *
 * A peer lost (killed, a link gone, LEAVE) is named and no longer waited for; a peer sending a
 * message that does not decode (a non-finite parameter) is dropped and named. */
#ifndef FRUGAL_GOSSIP_H
#define FRUGAL_GOSSIP_H

#include "energy/meter.h"
#include "engine/job/config.h"
#include "engine/job/dataset.h"
#include "engine/report/gossip_summary.h"
#include "engine/train/trainer.h"

#include <stdatomic.h>
#include <stdio.h>

#define GOSSIP_MAX_BOOTSTRAP 16
#define GOSSIP_START_S 60              /* the longest wait for [gossip] peers at the start */

typedef struct gossip_peer gossip_peer;

typedef struct gossip_options {
    const char *listen;                /* ADDR:PORT */
    const char *advertise;             /* the address others reach it at; NULL: listen's */
    const char *key_path;
    const char *peers[GOSSIP_MAX_BOOTSTRAP + 1];   /* --peer HOST:PORT, NULL-ended */
    double timeout_s;                  /* a silent peer is lost after this long */
    long nparams;                      /* the model's */
    const _Atomic int *stop;
} gossip_options;

/* Listens, dials, waits for [gossip] peers (up to GOSSIP_START_S), and applies shard = auto to
 * train. NULL with err. */
gossip_peer *gossip_start(const gossip_options *o, job_config *cfg, dataset *train, FILE *log,
                          char *err, size_t errlen);
/* After trainer_create: the parameters to exchange; a late peer takes a neighbour's model and
 * *start_epoch (1: the start) is the epoch it goes on from. 0, or -1 with err. */
int gossip_attach(gossip_peer *g, trainer *t, const char *csv_path, int *start_epoch, char *err,
                  size_t errlen);
void gossip_use_meter(gossip_peer *g, energy_meter *meter);
/* [placement] participation: this peer decides each round from its own grid (carbon, the run's
 * source, replayed traces) whether it trains and exchanges, and logs it (green). */
struct carbon_source;
struct green_log;
void gossip_use_green(gossip_peer *g, struct carbon_source *carbon, struct green_log *green);
/* An epoch's training in rounds, from first_batch. 0, or -1 with err. */
int gossip_train_epoch(gossip_peer *g, int epoch, long first_batch, pass_result *out, char *err,
                       size_t errlen);
/* The end: FINAL out, the peers' FINALs in, their average into the trainer. 0, or -1 with err. */
int gossip_finish(gossip_peer *g, char *err, size_t errlen);
/* Its line after each epoch. */
void gossip_print(gossip_peer *g, FILE *f);
void gossip_summarize(gossip_peer *g, gossip_summary *out);
/* The averaged model's test figures (after gossip_finish), for the summary. */
void gossip_note_final_test(gossip_peer *g, double acc, double loss);
/* LEAVE to the peers (why; NULL: finished), every connection closed, everything freed. */
void gossip_stop(gossip_peer *g, const char *why);

#endif
