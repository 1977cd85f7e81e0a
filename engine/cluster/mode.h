/* A training mode of the coordinator: how the machines share each epoch's work. The session
 * (coordinator.c: joins, files, routing, keepalives, the node table) calls its mode through
 * this table alone, the way StarPU's schedulers are a struct of functions, so that a mode is
 * added without touching the session: it keeps its state in c->mode_state and its per-node
 * figures in peer_node. The modes:
 *
 *   sync_mode       [cluster] sync_every = 0: every batch's chunks dealt between the machines,
 *                   the weights those of one machine (sync.c, sync_deal.c, sync_slots.c)
 *   averaging_mode  sync_every = K: each machine trains K batches on its share, then the
 *                   models are averaged (averaging.c)
 *
 * "Locked": called with c->lock held, on the thread named. */
#ifndef FRUGAL_CLUSTER_MODE_H
#define FRUGAL_CLUSTER_MODE_H

#include "engine/cluster/coordinator.h"
#include "netio/hub.h"

#include <stdio.h>

typedef struct peer_node peer_node;

typedef struct coordinator_mode {
    const char *name;              /* summary.json's cluster.mode */
    /* At the start, before the runtime is made: its state, and the device ctx of the peer
     * worker (engine/train/remote.h) through which it runs chunks elsewhere (NULL: none). */
    int (*open)(coordinator *c, void **peer_ctx, char *err, size_t errlen);
    /* The trainer made and the hub listening: its threads and the trainer's hooks. */
    int (*attach)(coordinator *c, char *err, size_t errlen);
    /* Locked, on the hub's thread: a ready node's message. 0, or -1 when the mode takes no such
     * message (the session refuses it as out of turn). */
    int (*on_message)(coordinator *c, peer_node *n, const netio_event *e);
    /* Locked: a node became ready, and takes work from now on. */
    void (*node_ready)(coordinator *c, peer_node *n);
    /* Locked, a node lost: first what it held goes back (returns the chunks to compute
     * elsewhere), then, once the session marked it gone, the mode goes on without it. */
    int (*reclaim)(coordinator *c, peer_node *n);
    void (*node_lost)(coordinator *c, peer_node *n);
    /* Unlocked, on the run's thread: an epoch's training. */
    int (*train_epoch)(coordinator *c, int epoch, long first_batch, pass_result *out,
                       char *err, size_t errlen);
    /* Locked: its line for this machine after each epoch (may be NULL), and its words on a
     * node's line. */
    void (*print_here)(coordinator *c, FILE *f);
    void (*describe_node)(const coordinator *c, const peer_node *n, char *out, size_t len);
    /* Locked: the work this machine did outside the trainer's runtime since the last call (as
     * run statistics); 0: none. */
    int (*extra_work)(coordinator *c, rt_stats *out);
    /* Unlocked: wakes and joins its threads (stopping is set), then frees its state. */
    void (*stop)(coordinator *c);
    void (*close)(coordinator *c);
} coordinator_mode;

extern const coordinator_mode sync_mode, averaging_mode;

/* The mode the job asks for ([cluster] sync_every), mode.c. */
const coordinator_mode *mode_for_job(const job_config *cfg);

#endif
