/* The simulation's state, shared by sim.c (machines, links, energy) and the modes
 * (sim_sync.c, sim_average.c, sim_gossip.c). One thread; times in seconds from the start. */
#ifndef FRUGAL_SIM_INTERNAL_H
#define FRUGAL_SIM_INTERNAL_H

#include "engine/model/model.h"
#include "engine/sim/sim.h"
#include "engine/train/plan.h"

typedef struct sim_node {
    int group;
    int workers;
    double chunk_s;              /* a chunk on one worker (slowdown and a shared host counted) */
    double seal_s_per_byte;      /* what its worker spends sealing a byte it sends (0: none) */
    double join_at, leave_at, fail_at;
    double up_free, down_free;   /* when its link's two directions are free */
    double clock;                /* gossip: when it finished its last round */
    double round_active_s;       /* averaging: the seconds of the rounds it took part in */
} sim_node;

typedef struct sim_state {
    const sim_scenario *s;
    sim_result *r;
    sim_node *node;
    int n;
    model m;                     /* shapes only: parameters per layer, FLOPs */
    exec_plan plan;
    int param_layers;
    long layer_n[CONFIG_MAX_LAYERS];
    long batches;                /* per epoch (sync, average) */
    double joules_before, grams_before, samples_before;   /* the totals at the last epoch's end */
    double last_round_s;         /* averaging: the last round's seconds */
} sim_state;

/* sim.c */
/* Whether machine i takes part at time t (joined, not left or failed). */
int sim_present(const sim_state *st, int i, double t);
/* A message of `payload` bytes (type for the traffic table, counted as the coordinator or the
 * sender sees it: dir 0 sent, 1 received) from machine a to b, leaving at t: when it has
 * arrived. Each machine's link sends and receives one message at a time in each direction. */
double sim_send(sim_state *st, int a, int b, size_t payload, unsigned type, int dir, double t);
/* Machine i computes from t for dur seconds on `workers` workers (on average: a wave that
 * fills some only): its energy above idle. */
void sim_compute(sim_state *st, int i, double t, double dur, double workers);
/* The grid's intensity for machine i at time t; its watts with `busy` workers. */
double sim_carbon_at(const sim_state *st, int i, double t);
double sim_watts(const sim_state *st, int i, double busy);
/* Machine i's site, or NULL. */
const sim_site *sim_site_of(const sim_state *st, int i);
/* The renewable power machine i has of its own at time t (its site's trace; 0: none). */
double sim_renewable_at(const sim_state *st, int i, double t);
/* Seconds machine i takes for `chunks` chunks on its workers. */
double sim_chunks_s(const sim_state *st, int i, int chunks);
/* Epoch e ran from t0 to t1: every machine's idle power over it counted, and the epoch's
 * figures (its samples, joules and grams: the machines' totals since the epoch before). */
void sim_epoch_end(sim_state *st, int e, double t0, double t1);

/* The modes: every epoch from t = 0; each returns the end time, or -1 (out of memory). */
double sim_sync_run(sim_state *st, char *err, size_t errlen);
double sim_average_run(sim_state *st, char *err, size_t errlen);
double sim_gossip_run(sim_state *st, char *err, size_t errlen);

#endif
