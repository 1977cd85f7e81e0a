/* Chunks of a batch computed on other machines, as the runtime sees them: tasks that run on
 * the peer worker (a device in host memory, engine/cluster/sync.c) and complete when the chunk's
 * result arrives over the network. Per remote chunk, one task per layer with parameters writes
 * that layer's partial gradient, and one writes the chunk's loss figures; they all read the
 * batch's parameters packed into one buffer, so none starts before the last update.
 *
 * Each layer is packed as soon as the batch before has updated it, the last layer first, and
 * handed to the sink then (params()), so that its parameters travel while the earlier layers
 * are still computing their gradients. Two packed buffers, by the batch's parity, let a batch's
 * packing start while the remote chunks of the batch before still read theirs.
 *
 * A node with a worker free may also take (steal) a chunk dealt to this machine that has not
 * started yet: each such chunk's tasks carry a claim (runtime.h) and skip once it is taken
 * elsewhere. Per chunk dealt here, tasks like a remote chunk's come after its own (one per
 * layer with parameters, one for the loss figures): they pass the chunk's parts on from the
 * node that took it, or do nothing when the chunk ran here. */
#ifndef FRUGAL_REMOTE_H
#define FRUGAL_REMOTE_H

#include "runtime/runtime.h"

#include <stdint.h>

typedef struct remote_args {
    uint64_t seq;                /* the batch, counted over the run */
    int epoch, chunk, size;      /* size: samples in the batch */
    int layer;                   /* whose partial gradient; -1: the chunk's loss figures */
    int params_at;               /* the access of the packed parameters (after the parts); -1:
                                    none (a chunk dealt here) */
    long batch;                  /* in the epoch */
    _Atomic int *claim;          /* a chunk dealt here: its claim (NULL: a chunk dealt elsewhere) */
} remote_args;

/* A training batch as the coordinator is asked about it (trainer_remote.chunks). */
typedef struct remote_batch {
    uint64_t seq;
    int epoch, size, nchunks;
    long batch;
    _Atomic int *claims;         /* per chunk, the claim on it, reset by the callee */
    const float *packed;         /* the batch's parameters, packed, once the nodes were sent them */
    int params_wanted;           /* set by the callee: pack them though no chunk goes elsewhere
                                    (a node is sent a probe, a chunk computed here too) */
} remote_batch;

/* What the peer worker's device ctx is. started() is called on the peer worker when a remote
 * task starts: dst is where its result goes, params the packed parameters of its batch; the
 * sink completes the task (rt_task_complete) when the result is in dst. */
typedef struct remote_sink {
    /* for a chunk dealt here (a->claim set), only when it was taken elsewhere */
    void (*started)(struct remote_sink *s, const remote_args *a, void *dst, const float *params,
                    rt_runtime *rt, rt_task *task);
    /* layer's n parameters of batch seq are final (on the peer worker; values are read during
     * the call only) */
    void (*params)(struct remote_sink *s, uint64_t seq, int layer, const float *values, long n);
    /* a chunk dealt here ran here: its gradient of layer a->layer (the layer's parameter count,
     * in the order of its groups), a measure of what nodes' gradients may be (on the peer
     * worker, read during the call only; NULL: not wanted) */
    void (*ran_here)(struct remote_sink *s, const remote_args *a, const float *grad);
} remote_sink;

/* Accesses: the destination parts, then the packed parameters (R); a chunk dealt here has its
 * parts RW (after its own tasks) and no packed parameters. */
extern rt_kind trainer_remote_grad_kind, trainer_remote_stats_kind;
/* Accesses: a layer's parameters (R), the packed parameters (RW); runs on the peer worker. */
typedef struct pack_args {
    uint64_t seq;                /* the batch whose parameters they are */
    int layer;
    long offset, n;              /* floats */
} pack_args;
extern rt_kind trainer_pack_kind;

#endif
