/* The coordinator's session, shared by its files: coordinator.c (nodes joining and leaving,
 * the job and its files, routing each node's messages to the training mode) and
 * coordinator_report.c (its lines and summary). The training modes (mode.h: sync.c, averaging.c)
 * keep their state in c->mode_state and use the session through the functions below. Locking:
 * engine/cluster/README.md. */
#ifndef FRUGAL_COORDINATOR_INTERNAL_H
#define FRUGAL_COORDINATOR_INTERNAL_H

#include "energy/carbon.h"
#include "engine/report/green_log.h"
#include "engine/cluster/proto.h"
#include "engine/placement/cluster_share.h"
#include "engine/cluster/coordinator.h"
#include "engine/cluster/mode.h"
#include "engine/cluster/allow_list.h"
#include "engine/cluster/refusal_log.h"
#include "netio/hub.h"
#include "common/clock.h"

#include <pthread.h>
#include <stdatomic.h>

#define MAX_NODES 64
#define COST_WEIGHT 0.3          /* of a new measurement in a running cost */
#define PROBE_EVERY 16           /* batches between the probes that keep a node measured */
#define POWER_WINDOW_S 0.25      /* the shortest interval this machine's power is measured over */
#define MAX_SHARE_DECISIONS 16
#define MAX_ABANDONED 64
#define JOIN_RECORDS 128         /* identities whose recent joins are counted */
#define JOIN_BURST 16            /* joins of one identity within JOIN_WINDOW_S */
#define JOIN_WINDOW_S 60.0

/* An identity's last JOIN_BURST joins (its public key, or its address's hash without one). */
typedef struct join_record {
    uint8_t who[NETIO_ID_PUBLIC_BYTES];
    double at[JOIN_BURST];
    int n;
    double last;
} join_record;

/* A node's share of a round under periodic averaging, and what came of it. */
typedef struct node_round {
    int in, done;                /* it has a share of round seq; its MODEL came */
    uint64_t seq;
    int chunks;                  /* chunks of the round: per batch, times batches */
    double sent_at, due;         /* its MODEL is late after due (coordinator_deadline) */
    int late;                    /* it was, and the node dropped for it */
    int skipped;                 /* participation = backup: the round went on without it */
    msg_result figures;          /* its figures for the round (grads unused) */
    float *model;                /* its parameters after the round (overlap = on: their change) */
} node_round;

typedef struct peer_node {
    int peer, ready, gone;
    char addr[64], host[64], energy[PROTO_TEXT], devices[PROTO_TEXT], left_why[200];
    char name[160];              /* in the log: its address, or its identity's name, key and address */
    int has_identity;            /* it proved an identity (coordinator_admission.c) */
    uint8_t identity[NETIO_ID_PUBLIC_BYTES];
    char identity_name[ALLOW_NAME];
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
    double renewable_w, grams;   /* its renewable power now, its CO2e so far (as it reports) */
    double grams_at;             /* when it reported them (clock_now_s; 0: not ready) */
    int green_index;             /* its machine in the green log; -1: not yet */
    int estimated;
    int parked, probe;           /* the policy leaves it out; it is due a probe */
    int sitting_out;             /* the participation policy leaves it out: not even probed */
    long probed_at;              /* the batch of its last probe */
    long probes;                 /* probes it was sent: chunks computed here too, which measure
                                    it and nothing else (not counted in chunks) */
    long fed_at;                 /* the batch of the last chunk it was sent */
    long late;                   /* chunks taken from it past their deadline (sync_deadline.c) */
    int late_in_row;             /* since its last chunk back in time */
    struct {
        uint64_t seq;
        int chunk;
    } abandoned[MAX_ABANDONED];  /* the last chunks taken from it: what it sends of them later */
    int nabandoned;              /* is not its own any more, and is ignored */
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

/* Locked, coordinator_green.c: which ready nodes take part in this round under [placement]
 * participation (take[i] for c->nodes[i]; this machine always does), each machine's decision
 * logged and a change said with its figures. round: the mode's (a batch, a round); here_img_s, here_w: this machine's speed and
 * power while computing; samples_left and round_s: the job's. Returns 1 when a node is left
 * out. */
int coordinator_participation(coordinator *c, unsigned long long round, double here_img_s,
                              double here_w, const double *node_img_s, double samples_left,
                              double round_s, int *take);

typedef struct share_decision {
    double t;
    int taking;
    char why[400];
} share_decision;

/* The session: what every mode shares. */
struct coordinator {
    pthread_mutex_t lock;
    pthread_cond_t joined;       /* a node became ready */
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
    int stopping;
    const _Atomic int *stop;     /* a signal asks the run to stop (coordinator_options) */
    double stop_seen;            /* when a mode saw it (clock_now_s), 0: not yet */
    refusal_log refusals;        /* connections refused before authentication, and joins refused
                                    for coming too often (coordinator_admission.c) */
    allow_list allow;            /* --allow: the identities admitted (coordinator_admission.c) */
    int allowing;
    join_record joins[JOIN_RECORDS];   /* recent joins per identity (coordinator_admission.c) */
    rt_runtime *rt;
    trainer *t;
    long nparams, layer_params[CONFIG_MAX_LAYERS], layer_offset[CONFIG_MAX_LAYERS], largest;
    int nlayers, param_layers;
    /* the training mode, and its state (mode.h) */
    const coordinator_mode *mode;
    void *mode_state;
    /* what the run did, for its report: the modes count */
    long local_chunks;           /* chunks of the batches computed here */
    long stolen_chunks, lost_nodes, resent_chunks, fallback_chunks, taken_back;
    long late_chunks;            /* taken from nodes past their deadline (sync_deadline.c) */
    long rounds, rounds_lost;    /* rounds trained; node shares lost with their node */
    long rounds_shared;          /* rounds whose last node shared a chunk with this machine */
    long models_clipped;         /* centered_clip: models clipped (aggregate.h), over the rounds */
    long models_skipped;         /* participation = backup: models the rounds did not wait for */
    /* the placement policy over machines (cluster_share.h) */
    policy_limits limits;
    carbon_source carbon;
    energy_meter *meter;
    energy_reading last_power;
    double last_power_at;        /* clock_now_s() of last_power */
    double local_w, local_img_s;
    long batches;
    /* where and when to train ([placement] participation, coordinator_green.c) */
    green_log *green;
    int green_here;              /* this machine's index in it */
    double deadline;             /* trace time; < 0: none */
    share_decision decisions[MAX_SHARE_DECISIONS];
    int ndecisions, decisions_total;
    /* the messages sent [0] and received [1] by type, and their bytes on the wire (any thread) */
    _Atomic long traffic_msgs[2][MSG_TYPES];
    _Atomic unsigned long long traffic_bytes[2][MSG_TYPES];
};

/* coordinator_admission.c, locked. Whether node n, joining with j, is admitted: its identity's signature,
 * the allow file, its identity's rate of joins. 0, or -1 when it was refused (named, logged). */
int coordinator_admit(coordinator *c, peer_node *n, const msg_join *j);
/* Reads the allow file again when it changed (at most once a second), and drops the nodes it
 * no longer admits. */
void coordinator_check_revoked(coordinator *c);

/* coordinator.c */
/* Counts a message of `payload` bytes sent (dir 0) or received (dir 1): summary.json's traffic. */
void coordinator_count_message(coordinator *c, int dir, unsigned type, size_t payload);
/* How long a node may take over work expected to take expected_s (0: not measured yet): a
 * margin over it, with a floor and a cap from the timeout (coordinator.c says why). */
double coordinator_deadline(const coordinator *c, double expected_s);
/* Locked. Whether a signal asks the run to stop (from then on, stop_seen is set). */
int coordinator_stopping(coordinator *c);
/* A deadline `due`, shortened once the run is asked to stop to half the timeout from then, so
 * that the batch or round under way ends, and the run saves and exits, within the timeout. */
double coordinator_due(const coordinator *c, double due);
double coordinator_running_mean(double avg, double x);
double coordinator_node_grams(const coordinator *c, const peer_node *n, double now);   /* locked */        /* a running average of positive figures (0: none) */
int coordinator_ready_nodes(const coordinator *c);       /* locked */
void coordinator_refuse(coordinator *c, peer_node *n, const char *why);
/* Says once per reason why the weights will not be bit-identical to a run on one machine, and
 * what would make them so; the first reason goes to summary.json. */
void coordinator_weights_differ(coordinator *c, const char *why, const char *remedy);
/* A span on the node's track of the trace (its messages, its chunks and rounds); locked. */
void coordinator_trace_node(coordinator *c, peer_node *n, const char *what, double start, double end);
/* A message to or from a node (dir: "sent", "received") as an instant on its track. */
void coordinator_trace_message(coordinator *c, peer_node *n, const char *dir, unsigned type);
/* netio_hub_send, marked on the node's track. */
int coordinator_send_to(coordinator *c, peer_node *n, uint16_t type, const void *head, size_t headlen,
            const void *body, size_t bodylen);

#endif
