/* The coordinator's state, shared by its files: coordinator.c (nodes joining and leaving, and
 * synchronous training: chunks of each batch sent out as runtime tasks), coordinator_deal.c
 * (how many chunks go to which node; steals and recalls), coordinator_slots.c (what comes back
 * of each chunk meeting its tasks), coordinator_report.c (its lines and summary) and
 * averaging.c (periodic averaging: rounds of local steps, then the models averaged). Every
 * field is guarded by `lock`; messages arrive on the hub's thread. */
#ifndef FRUGAL_COORDINATOR_INTERNAL_H
#define FRUGAL_COORDINATOR_INTERNAL_H

#include "energy/carbon.h"
#include "engine/cluster/proto.h"
#include "engine/placement/cluster_share.h"
#include "engine/cluster/coordinator.h"
#include "engine/cluster/late_model.h"
#include "engine/train/remote.h"
#include "netio/hub.h"
#include "runtime/clock.h"

#include <pthread.h>

#define MAX_NODES 64
#define COST_WEIGHT 0.3          /* of a new measurement in a running cost */
#define PROBE_EVERY 16           /* batches between the probes that keep a node measured */
#define POWER_WINDOW_S 0.25      /* the shortest interval this machine's power is measured over */
#define MAX_SHARE_DECISIONS 16

/* A node's share of a round under periodic averaging, and what came of it. */
typedef struct node_round {
    int in, done;                /* it has a share of round seq; its MODEL came */
    uint64_t seq;
    int chunks;                  /* chunks of the round: per batch, times batches */
    double sent_at;
    msg_result figures;          /* its figures for the round (grads unused) */
    float *model;                /* its parameters after the round (overlap = on: their change) */
} node_round;

typedef struct peer_node {
    int peer, ready, gone;
    char addr[64], host[64], energy[PROTO_TEXT], devices[PROTO_TEXT], left_why[200];
    int workers, running;         /* its workers, and those its own power budget leaves running */
    uint32_t isa;
    uint64_t params_seq;         /* whose parameters it holds; UINT64_MAX: none */
    uint64_t layers_seq;         /* whose LAYERs it is being sent, and how many went */
    int layers_sent;
    int inflight;
    int quota, taken;            /* chunks of this batch it should take, and has taken */
    long stolen;                 /* chunks dealt elsewhere that it took */
    int recalls;                 /* RECALLs under way for it to take the chunks */
    long given_back;             /* chunks it gave back (RECALLED) for another node to take */
    long batches_dealt, batches_present;   /* batches it was dealt chunks of, of those it saw */
    uint64_t group_seq;          /* the batch of the chunks last sent to it, and their count */
    int group;
    double cost;                 /* its CPU seconds per chunk, 0 until measured */
    double lag;                  /* seconds a round trip adds to computing (the network, the
                                    coordinator's update), 0 until measured */
    long chunks, samples;
    long summed;                 /* chunks whose gradients it summed into another's (GRAD) */
    double compute_s, wait_s, joules, joined_at, active_s;
    double watts, carbon;        /* while computing (running average), its grid's intensity */
    int estimated;
    int parked, probe;           /* the policy leaves it out; it is due a probe */
    long probed_at;              /* the batch of its last probe */
    long probes;                 /* probes it was sent: chunks computed here too, which measure
                                    it and nothing else (not counted in chunks) */
    long fed_at;                 /* the batch of the last chunk it was sent */
    netio_peer_stats net;
    int track;                   /* 1 + its track in the trace; 0: not made yet; -1: no trace */
    /* periodic averaging (averaging.c) */
    node_round rounds[2];        /* by the round's parity: with overlap = on a node is sent the
                                    next round before its MODEL of this one comes */
    double round_cost, round_lag;   /* over its rounds: seconds computing per sample on its
                                       workers, and what a round adds (the models' travel) */
    double model_at;             /* when its last MODEL came */
    int following;               /* overlap = on: it holds parameters and gets every average */
    uint64_t synced;             /* the last round whose average (or PARAMS) it was sent */
} peer_node;

typedef struct share_decision {
    double t;
    int taking;
    char why[400];
} share_decision;

/* SLOT_ARRIVED: every part of a stolen chunk came, some of its tasks have yet to start;
 * SLOT_BACK: a node gave it back for this machine, whose fallback engine computes it */
enum { SLOT_FREE, SLOT_STARTING, SLOT_QUEUED, SLOT_SENT, SLOT_ARRIVED, SLOT_BACK };
#define THIEF_HERE (-2)          /* a RECALL for this machine (slot.thief) */

/* A chunk computed on another machine. Its parts (0: the loss figures, 1 + l: layer l's
 * gradient) each meet their task (remote.h), whichever comes first, and the task completes
 * then. A chunk dealt elsewhere is sent once all its tasks started; one stolen from this
 * machine is sent first, and parts that come before their task starts are held. */
#define SLOT_PARTS (CONFIG_MAX_LAYERS + 1)
typedef struct slot {
    int state;
    remote_args a;
    int started, expected;       /* tasks started (a chunk dealt elsewhere), and parts */
    int met;                     /* parts that met their task */
    void *dst[SLOT_PARTS];
    rt_task *task[SLOT_PARTS];   /* started and waiting for its part */
    unsigned char came[SLOT_PARTS];
    float *held;                 /* a stolen chunk's gradients (packed), until their tasks start */
    chunk_stats stats;           /* and its figures */
    const float *params;
    int node;                    /* SLOT_SENT: index in nodes; -1: the local fallback */
    int ahead;                   /* chunks in flight at that node when it was sent */
    int recalled;                /* RECALL: 0 not sent, 1 under way (for `thief`), 2 refused (the
                                    chunk had started) */
    int thief;                   /* a node's index, THIEF_HERE, or -1: that node left */
    int probe;                   /* a chunk dealt here, sent to a node too: what comes back
                                    measures the node, and meets no task */
    int summed;                  /* its gradients came summed into another chunk's */
    int alone;                   /* SLOT_SENT: its gradients must come alone (a probe, or a
                                    chunk sent again with some of them here already) */
    double sent_at;
} slot;

struct coordinator {
    remote_sink sink;            /* first: the peer worker's device ctx */
    pthread_mutex_t lock;
    pthread_mutex_t params_lock; /* keeps a node's PARAMS and WORK together, no LAYER between;
                                    taken inside lock or alone, never the other way round */
    pthread_cond_t fallback_wake, joined;
    netio_hub *hub;
    const job_config *cfg;
    const dataset *train;
    FILE *log;
    netio_config net;            /* the key, limits and callback of the hub */
    char listen_at[256], listen[80];
    char weights_why[400];       /* why the weights will not be one machine's; "": they will */
    double timeout_s, start;
    msg_job job;
    char *paths[PROTO_MAX_FILES];
    peer_node nodes[MAX_NODES];
    int nnodes;
    slot *slots;
    slot **summed;               /* a GRAD's chunks' slots and the tasks they complete (the hub */
    rt_task **summed_done;       /* thread's, one GRAD at a time): as many as a batch's chunks */
    int nslots;
    rt_runtime *rt;
    long nparams, layer_params[CONFIG_MAX_LAYERS], layer_offset[CONFIG_MAX_LAYERS], largest;
    int nlayers, param_layers;
    double local_cost, last_busy;
    long local_chunks, last_local;
    /* the training batch under way: its chunks dealt here that nodes may steal (claims: NULL
       when none may) */
    remote_batch batch;
    int here_chunks;
    _Atomic int *claims;
    /* a probe: a node that has taken no chunk for a while (or that the policy parked) is sent a
       copy of a chunk dealt here, so that it stays measured while no batch waits for it. One at
       a time: the slots hold two batches' chunks and one probe. */
    int probe_node;              /* whose probe waits for the parameters of batch probe_seq */
    uint64_t probe_seq;          /* UINT64_MAX: none waits */
    uint64_t packed_seq;         /* the batch whose layers packed_layers were packed */
    int packed_layers;
    long stolen_chunks;
    long lost_nodes, resent_chunks, fallback_chunks;
    /* chunks taken back from nodes for the fallback engine while workers here idle: RECALLs
       under way, chunks computed; the engine's CPU seconds per chunk */
    int here_recalls;
    long taken_back;
    double fallback_cpu;
    rt_stats fallback_work;      /* its runtime's work since coordinator_fallback_stats */
    /* the placement policy over machines (cluster_share.h) */
    policy_limits limits;
    carbon_source carbon;
    energy_meter *meter;
    energy_reading last_power;
    double last_power_at;        /* clock_now_s() of last_power */
    double local_w, local_img_s;
    long batches;
    share_decision decisions[MAX_SHARE_DECISIONS];
    int ndecisions, decisions_total;
    pthread_t fallback;
    int fallback_started, stopping;
    /* periodic averaging (averaging.c) */
    pthread_cond_t round_over;   /* a node's MODEL came, or a node was lost */
    trainer *t;
    float *params;               /* this machine's parameters, then their average */
    double round_img_s;          /* this machine's samples per second over a round */
    long rounds, rounds_lost;    /* rounds trained; node shares lost with their peer_node */
    long rounds_shared;          /* rounds whose last node shared a chunk with this machine */
    /* with compress = on (model_delta.h) */
    float *round_start;          /* the parameters the round started from, as every node got them */
    uint64_t start_seq;          /* that round (0: none yet) */
    uint8_t *delta;              /* the next round's parameters from round_start's (overlap:
                                    the mean change of a round) */
    size_t delta_len;
    int delta_ready;             /* nodes holding start_seq's parameters get a DELTA */
    /* with overlap = on (late_model.h): this machine's model, its change in round own_seq (its
       samples, 0: none posted), the mean change of round mean_seq and the nodes' figures of it */
    late_model late;
    float *own_change, *mean;
    uint64_t own_seq, mean_seq;
    double own_samples;
    pass_result mean_figures;
};

/* coordinator.c */
double coordinator_running_mean(double avg, double x);        /* a running average of positive figures (0: none) */
int coordinator_ready_nodes(const coordinator *c);       /* locked */
void coordinator_refuse(coordinator *c, peer_node *n, const char *why);
/* A span on the node's track of the trace (its messages, its chunks and rounds); locked. */
void coordinator_trace_node(coordinator *c, peer_node *n, const char *what, double start, double end);
/* netio_hub_send, marked on the node's track. */
int coordinator_send_to(coordinator *c, peer_node *n, uint16_t type, const void *head, size_t headlen,
            const void *body, size_t bodylen);

/* The synchronous mode's sending of chunks, locked. takes_work: a node the policy keeps, sent
 * each batch's parameters, that may be dealt chunks. */
int sync_takes_work(const peer_node *n);
slot *sync_first_in(coordinator *c, int state);        /* in that state, first in the fixed order */
int sync_send_chunk(coordinator *c, peer_node *n, slot *s);  /* nonzero: the hub closes that peer_node */
void sync_send_probe(coordinator *c);                   /* the probe waiting, if its batch is packed */
/* Chunk s waits on a node behind at least one per worker there, and was not asked back yet: a
 * RECALL may take it elsewhere. */
int sync_waits_behind(const coordinator *c, const slot *s);
/* The fallback engine's seconds per chunk on that many workers: its CPU seconds per chunk (a
 * worker's here until measured) spread over them. */
double sync_fallback_cost(const coordinator *c, int workers);

/* coordinator_deal.c, locked but sync_remote_chunks (the trainer's question for each batch). */
void sync_steal_for(coordinator *c, peer_node *n);   /* node n may take chunks dealt elsewhere */
void sync_on_tick(coordinator *c);              /* the fallback's tick: RECALLs worth sending */
/* A RECALL of chunk s answered, or moot: outcome 0 (given back, or its node lost), 2 (refused). */
void sync_recall_over(coordinator *c, slot *s, int outcome);
int sync_remote_chunks(void *ctx, remote_batch *b);

/* coordinator_slots.c, locked. Each returns the tasks it put in done (at most SLOT_PARTS), for
 * the caller to complete unlocked; a slot whose parts all met their tasks is free. */
slot *sync_slot_of(coordinator *c, uint64_t seq, int chunk);     /* NULL: none */
slot *sync_slot_new(coordinator *c, const remote_args *a, const float *params, int state);
int sync_slot_task(coordinator *c, slot *s, int part, void *dst, rt_task *task, rt_task **done);
/* Whether some layer's gradient of the chunk is here already (from a node since lost). */
int sync_slot_has_gradients(const coordinator *c, const slot *s);
/* data NULL: a gradient the node summed into another chunk's (GRAD over several chunks) */
int sync_slot_arrived(coordinator *c, slot *s, int part, const void *data, rt_task **done);
/* A RESULT: the figures, and the gradients unless grads is NULL (they came as GRADs). */
int sync_slot_result(coordinator *c, slot *s, const msg_result *r, const float *grads, rt_task **done);
int sync_slot_fail(slot *s, rt_task **done);   /* the tasks waiting, to complete as failed */
void sync_slot_free(slot *s);

/* averaging.c, on the hub's thread, locked */
void averaging_on_model(coordinator *c, peer_node *n, const uint8_t *p, size_t len);
void averaging_node_lost(coordinator *c, peer_node *n);

#endif
