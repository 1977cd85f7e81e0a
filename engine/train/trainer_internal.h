/* The trainer's state, shared by its files: trainer.c (its lifetime: buffers and handles),
 * trainer_graph.c (a batch's task graph and the passes), trainer_tasks.c (the task bodies that
 * are not a layer's), trainer_remote.c (what other machines of a cluster need of a batch, through
 * the hooks of remote.h). */
#ifndef FRUGAL_TRAINER_INTERNAL_H
#define FRUGAL_TRAINER_INTERNAL_H

#include "engine/train/trainer.h"

#include <stdatomic.h>

/* Per-sample data of a batch in flight, cut into a part per chunk, and per filter group when a
 * convolution split by filters writes it: part (k, g) holds filters [f0, f1) of every sample of
 * chunk k. A flatten's output is a view of its input (`view`: not owned). */
typedef struct chunked {
    void *data;
    size_t per_sample;              /* bytes */
    int groups;
    int view;
    rt_handle *whole;
    rt_handle **part;               /* [chunk * groups + g], NULL where the chunk is empty */
} chunked;

/* One batch in flight; two alternate, so batch b+1 loads during batch b's backward pass. */
typedef struct batch_set {
    chunked act[CONFIG_MAX_LAYERS + 1];    /* act[l]: the input of layer l */
    chunked grad[CONFIG_MAX_LAYERS + 1];   /* and its gradient */
    chunked aux[CONFIG_MAX_LAYERS];        /* a max-pool's argmax; the loss's predictions */
    chunked samples;                       /* bytes input: each sample's pixels in the data set */
    chunked labels, stats;
    _Atomic int *claims;                   /* a coordinator's: per chunk, who computes it */
} batch_set;

/* A pass's running totals, summed chunk by chunk in a fixed order by the tally tasks. */
typedef struct pass_totals {
    double loss;
    long correct, samples;
} pass_totals;

/* A training pass's totals at the end of each batch, for points every few batches: written by
 * the tally tasks (in their fixed order, guarded by the totals' handle) and read from any
 * thread below `closed`, where they no longer change. */
typedef struct pass_marks {
    pass_totals *at;                       /* [batch of the epoch] */
    long nbatches;
    int on;                                /* in a training pass (not a node's chunks) */
    long first;                            /* the pass's first batch (set before it starts) */
    long next;                             /* the first batch not closed; tallies only */
    _Atomic long closed;                   /* batches [the pass's first, closed) are final */
} pass_marks;

/* A data set as the runtime sees it. */
typedef struct data_handles {
    const dataset *d;
    rt_handle *pixels, *labels;
} data_handles;

/* A node's group of chunks (trainer_node_chunks), submitted from the last chunk down: where a
 * chunk stands in it. */
typedef struct ship_role {
    int batch_last;                 /* the batch's last chunk */
    unsigned char first, last;      /* the group's first and last submitted */
    unsigned char alone;            /* its gradients go summed with no other chunk's */
} ship_role;

/* Per layer, the batch's last chunks summed so far by a group's ship tasks. */
typedef struct ship_run {
    int next;                       /* the chunk that would extend it (-1: none can) */
    int count;                      /* chunks in it */
} ship_run;

struct trainer {
    const job_config *cfg;
    model *m;
    rt_runtime *rt;
    exec_plan plan;
    data_handles data[2];                  /* SPLIT_TRAIN, SPLIT_TEST */
    long *order;                           /* the training set's shuffled order */
    rt_handle *horder;
    batch_set set[2];
    rt_handle *hparams[CONFIG_MAX_LAYERS], *hgrad[CONFIG_MAX_LAYERS];
    rt_handle *hvelocity[CONFIG_MAX_LAYERS];
    float *partial[CONFIG_MAX_LAYERS];     /* per chunk and group: its share of the gradient */
    rt_handle *hpartial[CONFIG_MAX_LAYERS];
    rt_handle **hpartial_part[CONFIG_MAX_LAYERS];   /* [chunk * groups + g] */
    float *pack[2];                        /* every layer's parameters, for other machines, by
                                              the parity of their batch (remote.h) */
    long pack_offset[CONFIG_MAX_LAYERS];   /* where layer l's start in it (floats) */
    rt_handle *hpack[2];
    uint64_t seq;                          /* training batches submitted */
    uint64_t packed_seq;                   /* the batch whose parameters are packed (or being) */
    trainer_remote remote;                 /* who computes chunks elsewhere, if anyone */
    trainer_gradient_sink gradients;       /* a node's: where each chunk's gradients go */
    ship_run ship_runs[CONFIG_MAX_LAYERS]; /* and the sums of its batch's last chunks */
    int shuffled_epoch;                    /* the epoch whose order is shuffled */
    pass_totals totals;
    rt_handle *htotals;
    pass_marks marks;                      /* the training pass's, batch by batch */
    int32_t *predictions;                  /* evaluation: argmax per sample, or NULL */
    rt_handle *hpredictions;
    _Atomic long samples_done;             /* loss computed, this pass */
    progress_fn progress;
    void *progress_ctx;
    const _Atomic int *stop;
};

/* Closes the marks of batches before `before` with the totals t (they are final). */
void trainer_close_marks(pass_marks *m, long before, const pass_totals *t);

/* A data set's pixels and labels as handles (trainer.c). */
int trainer_data_register(trainer *t, data_handles *h, const dataset *d);
void trainer_data_unregister(trainer *t, data_handles *h);

/* The filters (or a dense layer's outputs) of group g of layer l: [*u0, *u1). */
void trainer_group_units(const layer *l, int groups, int g, int *u0, int *u1);

/* trainer_tasks.c */
/* Accesses: the data set's pixels and labels (R), the chunk's input and labels (W), and the
 * shuffled order (R) when `shuffled`. */
typedef struct load_args {
    long first;                     /* index of the chunk's first sample in the pass */
    long per;                       /* bytes per sample */
    int n;
    signed char shuffled, bytes;    /* through the order; pointers to the pixels, not floats */
} load_args;

/* Accesses: the chunk's stats (R), the pass's totals (RW), and when evaluating the chunk's
 * predictions (R) and the pass's (RW). */
typedef struct tally_args {
    long first;                     /* index of the chunk's first sample in the pass */
    int n;
    int evaluating;
    _Atomic long *done;             /* progress: samples tallied */
    pass_marks *marks;              /* training: the totals batch by batch (else NULL) */
    long batch;                     /* the chunk's batch in the epoch */
} tally_args;

/* Accesses: the layer's gradient (W for the batch's first chunk, else RW), then the chunk's
 * partial gradient per group (R). */
typedef struct gradsum_args {
    const layer *l;
    int groups;
    int first;                      /* the batch's first chunk: copy rather than add */
} gradsum_args;

/* Accesses: parameters (RW), gradient (R), velocity (RW). */
typedef struct sgd_args {
    long n;
    float lr, momentum, weight_decay;
} sgd_args;

/* Accesses: parameters (RW), velocity (RW) with momentum, then the chunks' partial gradients
 * (R, from first_part on, the last chunk first): their sum and the step in one pass. */
typedef struct update_args {
    sgd_args sgd;
    int parts, first_part;
} update_args;

extern rt_kind trainer_load_kind, trainer_load_pointers_kind, trainer_tally_kind,
    trainer_gradsum_kind, trainer_sgd_kind, trainer_update_kind;
/* dst = src (copy), or dst += src. */
void trainer_copy_or_add(float *dst, const float *src, long n, int copy);

/* ---- a batch's task graph (trainer_graph.c) ---- */

/* The backward chain first: a layer's gradient sum and update wait behind the backward tasks
 * still to come (only the first layer's update is on the way to the next batch). */
enum { PRIO_TALLY = 0, PRIO_LOAD = 1, PRIO_FORWARD = 2, PRIO_UPDATE = 2, PRIO_BACKWARD = 3 };

/* A task's accesses, added in the order its arguments name them. */
typedef struct access_list {
    rt_access a[RT_MAX_ACCESS];
    int n;
} access_list;

static inline signed char add(access_list *al, rt_handle *h, rt_mode mode)
{
    al->a[al->n] = (rt_access){h, mode};
    return (signed char)al->n++;
}

/* Every part of chunk k of a buffer (one per filter group of its writer); returns the first. */
static inline signed char add_chunk(access_list *al, const chunked *c, int k, rt_mode mode)
{
    signed char first = (signed char)al->n;
    for (int g = 0; g < c->groups; g++)
        add(al, c->part[k * c->groups + g], mode);
    return first;
}

/* Other machines' part in a batch (trainer_remote.c); all NULL on one machine. */
typedef struct batch_remote {
    _Atomic int *claims;            /* a coordinator's batch: per chunk, nodes may take it */
    _Atomic int *recall;            /* a node's chunk: its coordinator may take it back */
    const ship_role *ship;          /* a node's chunk: its gradients go to the sink */
} batch_remote;

/* What one batch is: where its samples start, how many, which buffers, which data set. */
typedef struct batch_ref {
    int split;
    long first;
    int size;
    batch_set *b;
    int mean_over;                  /* samples the gradient is the mean over: 0, the batch's */
    int epoch;
    long index;                     /* in the epoch */
    batch_remote remote;
} batch_ref;

void trainer_submit(trainer *t, rt_kind *kind, const void *args, size_t size, int prio,
                    const access_list *al, int chunk);
/* Samples in chunk k of the batch, and where they start; chunks in the batch (a short batch has
 * fewer). */
int trainer_chunk_size(const trainer *t, const batch_ref *r, int k, int *s0);
int trainer_batch_chunks(const trainer *t, const batch_ref *r);
/* Chunks [k0, k1) of a batch computed here: load, forward, loss and, training, backward. */
void trainer_submit_chunks(trainer *t, const batch_ref *r, int k0, int k1);
/* Chunk k's loss figures into the pass's (claim: NULL, or the chunk's). */
void trainer_submit_tally(trainer *t, const batch_ref *r, int k, int evaluating, _Atomic int *claim);
/* The epoch's order, unless it is the one shuffled last. */
int trainer_shuffle_once(trainer *t, int epoch, char *err, size_t errlen);

/* ---- the hooks of a batch for other machines (trainer_remote.c) ---- */

/* Asks the coordinator, if any, how many of the batch's last chunks other machines compute,
 * and submits what those need (the parameters packed, the chunks' arrivals): their count. The
 * chunks left here then carry claims, for nodes to take the ones not yet started. */
int trainer_remote_share(trainer *t, batch_ref *r, int chunks);
/* After chunk k's layer l (-1: its loss) here: a node's gradient shipped to its sink, or a
 * coordinator's chunk taken by a node passed on from it. Nothing on one machine. */
void trainer_remote_pass_on(trainer *t, const batch_ref *r, int k, int l);
/* The parameters of batch t->seq packed for other machines, layer by layer as updated. */
void trainer_remote_pack(trainer *t);

#endif
