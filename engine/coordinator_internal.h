/* The coordinator's state, shared by its files: coordinator.c (nodes joining and leaving, and
 * synchronous training: chunks of each batch sent out as runtime tasks) and averaging.c
 * (periodic averaging: rounds of local steps, then the models averaged). Every field is
 * guarded by `lock`; messages arrive on the hub's thread. */
#ifndef FRUGAL_COORDINATOR_INTERNAL_H
#define FRUGAL_COORDINATOR_INTERNAL_H

#include "energy/carbon.h"
#include "engine/cluster_proto.h"
#include "engine/cluster_share.h"
#include "engine/coordinator.h"
#include "engine/remote.h"
#include "netio/hub.h"

#include <pthread.h>

#define MAX_NODES 64
#define COST_WEIGHT 0.3          /* of a new measurement in a running cost */
#define PROBE_EVERY 16           /* batches between the chunks a parked node gets to stay measured */
#define POWER_WINDOW_S 0.25      /* the shortest interval this machine's power is measured over */
#define MAX_SHARE_DECISIONS 16

typedef struct node {
    int peer, ready, gone;
    char addr[64], host[64], energy[PROTO_TEXT], left_why[200];
    int workers, running;         /* its workers, and those its own power budget leaves running */
    uint32_t isa;
    uint64_t params_seq;         /* whose parameters it holds; UINT64_MAX: none */
    uint64_t layers_seq;         /* whose LAYERs it is being sent, and how many went */
    int layers_sent;
    int inflight;
    int quota, taken;            /* chunks of this batch it should take, and has taken */
    uint64_t group_seq;          /* the batch of the chunks last sent to it, and their count */
    int group;
    double cost;                 /* its CPU seconds per chunk, 0 until measured */
    double lag;                  /* seconds a round trip adds to computing (the network, the
                                    coordinator's update), 0 until measured */
    long chunks, samples;
    double compute_s, wait_s, joules, joined_at, active_s;
    double watts, carbon;        /* while computing (running average), its grid's intensity */
    int estimated;
    int parked, probe;           /* the policy leaves it out; it may take one chunk to be measured */
    long probed_at;              /* the batch of its last probe */
    long fed_at;                 /* the batch of the last chunk it was sent */
    netio_peer_stats net;
    int track;                   /* 1 + its track in the trace; 0: not made yet; -1: no trace */
    /* periodic averaging (averaging.c) */
    int in_round, round_done;    /* it has a share of the round under way; its MODEL came */
    uint64_t round_seq;
    int round_chunks;            /* chunks of the round: per batch, times batches */
    double round_sent_at, img_s; /* its samples per second over a round, sending included */
    msg_result round;            /* its figures for the round (grads unused) */
    float *model;                /* its parameters after the round */
} node;

typedef struct share_decision {
    double t;
    int taking;
    char why[400];
} share_decision;

enum { SLOT_FREE, SLOT_STARTING, SLOT_QUEUED, SLOT_SENT };

/* A remote chunk: its tasks as they start, then where it was sent. A task is completed as its
 * part arrives (a layer's GRAD, then the RESULT), and forgotten then. */
typedef struct slot {
    int state;
    remote_args a;
    int started, expected;
    chunk_stats *stats_dst;
    rt_task *stats_task;
    float *grad_dst[CONFIG_MAX_LAYERS];
    rt_task *grad_task[CONFIG_MAX_LAYERS];
    const float *params;
    int node;                    /* SLOT_SENT: index in nodes; -1: the local fallback */
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
    double timeout_s, start;
    msg_job job;
    char *paths[PROTO_MAX_FILES];
    node nodes[MAX_NODES];
    int nnodes;
    slot *slots;
    int nslots;
    rt_runtime *rt;
    long nparams, layer_params[CONFIG_MAX_LAYERS], layer_offset[CONFIG_MAX_LAYERS], largest;
    int nlayers, param_layers;
    double local_cost, last_busy;
    long local_chunks, last_local;
    long lost_nodes, resent_chunks, fallback_chunks;
    /* the placement policy over machines (cluster_share.h) */
    policy_limits limits;
    carbon_source carbon;
    energy_meter *meter;
    energy_reading last_power;
    double last_power_at;        /* now_s() of last_power */
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
    long rounds, rounds_lost;    /* rounds trained; node shares lost with their node */
};

/* coordinator.c */
double now_s(void);                          /* monotonic seconds */
double running(double avg, double x);        /* a running average of positive figures (0: none) */
int ready_nodes(const coordinator *c);       /* locked */
void refuse(coordinator *c, node *n, const char *why);
/* A span on the node's track of the trace (its messages, its chunks and rounds); locked. */
void trace_node(coordinator *c, node *n, const char *what, double start, double end);
/* netio_hub_send, marked on the node's track. */
int send_to(coordinator *c, node *n, uint16_t type, const void *head, size_t headlen,
            const void *body, size_t bodylen);

/* averaging.c, on the hub's thread, locked */
void averaging_on_model(coordinator *c, node *n, const uint8_t *p, size_t len);
void averaging_node_lost(coordinator *c, node *n);

#endif
