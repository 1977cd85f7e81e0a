/* Training a model on the runtime: each batch becomes a task graph of per-chunk tasks (a chunk is
 * a run of samples) for every layer, forward and backward, with no barrier between layers, and
 * per-chunk partial gradients reduced in a fixed order, so the same seed gives the same weights
 * whatever the number of workers. Every buffer a task touches is a registered region of its own
 * (engine/train/trainer.c), every task body finds its data through its accesses, and the graph of a
 * batch is built in engine/train/trainer_graph.c. */
#ifndef FRUGAL_TRAINER_H
#define FRUGAL_TRAINER_H

#include "engine/job/config.h"
#include "engine/job/dataset.h"
#include "engine/model/model.h"
#include "engine/train/plan.h"
#include "engine/train/remote.h"
#include "runtime/runtime.h"

#include <signal.h>

enum { SPLIT_TRAIN, SPLIT_TEST };

/* What a pass over a data set (or part of one) comes to. */
typedef struct pass_result {
    double loss;          /* summed over samples */
    long correct, samples;
    long batches;         /* done in this call */
    double seconds;
    int stopped;          /* a stop was asked for: the pass ended at a batch boundary */
} pass_result;

typedef struct trainer trainer;

/* Called on the submitting thread between batches: samples whose loss is computed so far. */
typedef void (*progress_fn)(void *ctx, long done, long total, double seconds);

trainer *trainer_create(const job_config *cfg, model *m, rt_runtime *rt, const dataset *train,
                        const dataset *test, char *err, size_t errlen);
void trainer_destroy(trainer *t);
const exec_plan *trainer_plan(const trainer *t);
void trainer_on_progress(trainer *t, progress_fn fn, void *ctx);
/* Samples whose loss is computed so far in the current pass; from any thread. */
long trainer_samples_done(const trainer *t);
/* The current (or last) training pass's batches [*first, returned) are tallied whole (from any
 * thread); trainer_totals_through(b), for b among them, is the pass's loss, correct and samples
 * from its first batch to the end of b. For points every few batches. */
long trainer_batches_closed(const trainer *t, long *first);
pass_result trainer_totals_through(const trainer *t, long batch);
/* Training stops at the next batch boundary once *flag is non-zero (a signal handler sets it). */
void trainer_stop_when(trainer *t, const _Atomic int *flag);

/* The training set in the order shuffled from (seed, epoch), from batch `first_batch` on. The
 * model is updated; returns 0, or -1 with err set (a task failed, e.g. a loss not finite). */
int trainer_train(trainer *t, int epoch, long first_batch, pass_result *out, char *err,
                  size_t errlen);
/* A replica's share of a round of periodic averaging: in the round's batch i (from 0), chunks
 * [k0 + (i < k0_after), k1 + (i < k1_until)). So two replicas may share a chunk: the one before
 * has it in the round's first batches, the one after in the rest. */
typedef struct round_share {
    int k0, k1;
    long k0_after, k1_until;
} round_share;
/* Periodic averaging (a replica of a cluster): `batches` training batches of `epoch` from
 * `first_batch` on, only its share of each (the other replicas have the rest); the model takes
 * a step per batch with the mean gradient of its chunks (none in a batch where it has none). out
 * counts those chunks alone. 0, or -1 with err. */
int trainer_train_share(trainer *t, int epoch, long first_batch, long batches,
                        const round_share *s, pass_result *out, char *err, size_t errlen);
/* A forward pass over d (the test set if NULL; images shaped as in training): loss, accuracy
 * and, if predictions is not NULL, each sample's predicted class (d->n entries). */
int trainer_evaluate(trainer *t, const dataset *d, int32_t *predictions, pass_result *out,
                     char *err, size_t errlen);
/* ---- a cluster (engine/cluster/sync.c, engine/cluster/node.c) ---- */

/* On the coordinator: asked for every training batch how many of its last chunks other machines
 * compute (remote.h); when some do, the rest may be taken by them too, through the claims. The
 * runtime must have a peer worker whose device ctx is a remote_sink. */
typedef struct trainer_remote {
    void *ctx;
    int (*chunks)(void *ctx, remote_batch *b);
} trainer_remote;
int trainer_share_work(trainer *t, const trainer_remote *r, char *err, size_t errlen);
/* The parameter count of the model; its layers' counts (the packed order: layers in order). */
long trainer_nparams(const trainer *t);
int trainer_layer_params(const trainer *t, long *per_layer);
/* Every layer's parameters from a packed copy (maybe unaligned), or into one; or one layer's
 * (waits for the tasks in flight). */
int trainer_set_params(trainer *t, const void *packed, char *err, size_t errlen);
int trainer_set_layer_params(trainer *t, int layer, const void *values, char *err, size_t errlen);
int trainer_get_params(trainer *t, float *packed, char *err, size_t errlen);
/* One chunk a node computes: chunk `chunk` of training batch `batch` of `epoch` (size samples).
 * claim (NULL: none) lets the coordinator take the chunk back before it starts (runtime.h):
 * then none of its tasks runs, and nothing of it is streamed. alone: its gradients go summed
 * with no other chunk's (the coordinator has some of them, or computes the chunk too). */
typedef struct node_chunk {
    int epoch;
    long batch;
    int chunk, size;
    _Atomic int *claim;
    int alone;
} node_chunk;
/* On a node: submits n chunks of one training batch, forward and backward; after rt_wait_all
 * their figures and partial gradients are read with trainer_node_result. 0, or -1 with err for
 * a chunk that does not exist. */
int trainer_node_chunks(trainer *t, const node_chunk *c, int n, char *err, size_t errlen);
/* On a node: each layer's partial gradient handed over, on a worker, as soon as it is complete,
 * while the backward pass goes on through the layers before it (so it can travel meanwhile):
 * that of chunks [chunk, chunk + chunks) summed. Chunks go summed when they are the batch's
 * last chunks (none to go alone), summed as a batch is, from the last chunk down; any other goes
 * alone. grad holds n floats, valid during the call. */
typedef struct trainer_gradient_sink {
    void *ctx;
    void (*ready)(void *ctx, int chunk, int chunks, int layer, const float *grad, long n);
} trainer_gradient_sink;
void trainer_stream_gradients(trainer *t, const trainer_gradient_sink *s);
/* The chunk's loss figures, and its partial gradient packed in layer order into grads (unless
 * grads is NULL), each layer in wire order (trainer_grad_to_wire). */
void trainer_node_result(trainer *t, int chunk, double *loss, int *correct, int *samples,
                         float *grads);

/* A layer's partial gradient travels in the layer's own order, every weight then every bias,
 * whatever filter groups the machines computing it use (a device-pinned run does not fuse a
 * convolution with its max-pool, and so may split it where a CPU run does not). Here it is
 * computed per group, each group's weights then its biases: these convert between the two. */
void trainer_grad_to_wire(const trainer *t, int layer, const float *groups, float *wire);
void trainer_grad_from_wire(const trainer *t, int layer, const float *wire, float *groups);

/* The model's parameters back in host memory (before a checkpoint). */
int trainer_sync(trainer *t, char *err, size_t errlen);

#endif
