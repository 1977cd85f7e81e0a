/* The synchronous mode's state, shared by its files: sync.c (chunks sent out as runtime tasks
 * and returned, the messages that bring them, the fallback engine that computes them here when
 * no node is left or one gives a chunk back), sync_deal.c (how many chunks go to which node;
 * steals and recalls), sync_deadline.c (chunks a node is late with), sync_grad_check.c (the
 * size of nodes' gradients) and sync_slots.c (what comes back of each chunk meeting its tasks). Every
 * field is guarded by the session's lock (engine/cluster/README.md). */
#ifndef FRUGAL_CLUSTER_SYNC_INTERNAL_H
#define FRUGAL_CLUSTER_SYNC_INTERNAL_H

#include "engine/cluster/coordinator_internal.h"
#include "engine/train/remote.h"

#include <pthread.h>

/* SLOT_ARRIVED: every part of a stolen chunk came, some of its tasks have yet to start;
 * SLOT_BACK: a node gave it back for this machine, whose fallback engine computes it */
enum { SLOT_FREE, SLOT_STARTING, SLOT_QUEUED, SLOT_SENT, SLOT_ARRIVED, SLOT_BACK };
#define THIEF_HERE (-2)          /* a RECALL for this machine (slot.thief) */

/* A chunk computed on another machine. Its parts (0: the loss figures, 1 + l: layer l's
 * gradient) each meet their task (remote.h), whichever comes first, and the task completes
 * then. A chunk dealt elsewhere is sent once all its tasks started; one stolen from this
 * machine is sent first, and parts that come before their task starts are held. */
#define SLOT_PARTS (CONFIG_MAX_LAYERS + 1)
#define GRAD_WINDOW 32

/* The norms per sample of a layer's last GRAD_WINDOW chunks computed here (sync_grad_check.c). */
typedef struct grad_window {
    double norm[GRAD_WINDOW];
    int n;
} grad_window;
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
    double due;                  /* SLOT_SENT to a node: when it is late (sync_deadline.c) */
} slot;

typedef struct sync_state {
    remote_sink sink;            /* first: the peer worker's device ctx */
    coordinator *c;
    pthread_mutex_t params_lock; /* keeps a node's PARAMS and WORK together, no LAYER between;
                                    taken inside lock or alone, never the other way round */
    pthread_cond_t fallback_wake;
    slot *slots;
    slot **summed;               /* a GRAD's chunks' slots and the tasks they complete (the hub */
    rt_task **summed_done;       /* thread's, one GRAD at a time): as many as a batch's chunks */
    int nslots;
    double local_cost, last_busy;
    long last_local;
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
    /* chunks taken back from nodes for the fallback engine while workers here idle: RECALLs
       under way; the engine's CPU seconds per chunk */
    int here_recalls;
    double fallback_cpu;
    rt_stats fallback_work;      /* its runtime's work since the last extra_work */
    pthread_t fallback;
    int fallback_started;
    grad_window grad_here[CONFIG_MAX_LAYERS];
} sync_state;

static inline sync_state *sync_of(const coordinator *c) { return c->mode_state; }

/* sync.c, locked. takes_work: a node the policy keeps, sent each batch's parameters, that may
 * be dealt chunks. */
int sync_takes_work(const peer_node *n);
slot *sync_first_in(coordinator *c, int state);        /* in that state, first in the fixed order */
int sync_send_chunk(coordinator *c, peer_node *n, slot *s);  /* nonzero: the hub closes that node */
void sync_send_probe(coordinator *c);                   /* the probe waiting, if its batch is packed */
/* Chunk s waits on a node behind at least one per worker there, and was not asked back yet: a
 * RECALL may take it elsewhere. */
int sync_waits_behind(const coordinator *c, const slot *s);
/* The fallback engine's seconds per chunk on that many workers: its CPU seconds per chunk (a
 * worker's here until measured) spread over them. */
double sync_fallback_cost(const coordinator *c, int workers);

/* sync_deal.c, locked but sync_remote_chunks (the trainer's question for each batch). */
void sync_steal_for(coordinator *c, peer_node *n);   /* node n may take chunks dealt elsewhere */
void sync_on_tick(coordinator *c);              /* the fallback's tick: RECALLs worth sending */
/* A RECALL of chunk s answered, or moot: outcome 0 (given back, or its node lost), 2 (refused). */
void sync_recall_over(coordinator *c, slot *s, int outcome);
int sync_remote_chunks(void *ctx, remote_batch *b);

/* sync_deadline.c, locked. When chunk s, sent to node n now, is late. */
double sync_deadline(const coordinator *c, const peer_node *n, const slot *s);
/* Chunks at nodes past their deadline (or, once a signal asks the run to stop, past half the
 * timeout since) go to the fallback engine here; a node late LATE_LIMIT times in a row is
 * dropped. Returns the seconds until the next deadline, INFINITY when no chunk is at a node. */
double sync_check_deadlines(coordinator *c);
/* Whether node n's chunk of batch seq was taken from it: what it sends of it is ignored. */
int sync_was_abandoned(const peer_node *n, uint64_t seq, uint32_t chunk);

/* sync_grad_check.c. The sink's ran_here (remote.h): a chunk's gradient computed here, measured
 * (takes the lock). Locked: why node gradient g, of a batch of `size`, is too large, or NULL. */
void sync_grad_ran_here(remote_sink *sink, const remote_args *a, const float *grad);
const char *sync_grad_check(coordinator *c, const msg_layer *g, int size, char *why, size_t whylen);

/* sync_slots.c, locked. Each returns the tasks it put in done (at most SLOT_PARTS), for
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

#endif
