/* Computing chunks of training batches for a coordinator: a model, a runtime and a trainer
 * that run only the chunks they are given, with the parameters they are given, and hand back
 * each chunk's loss figures and partial gradient (or, under periodic averaging, a round's
 * figures and the model after it). A node (`frugal join`) runs one; so does a
 * coordinator when every node is gone with chunks unfinished. */
#ifndef FRUGAL_CHUNK_ENGINE_H
#define FRUGAL_CHUNK_ENGINE_H

#include "engine/cluster/proto.h"
#include "engine/job/config.h"
#include "engine/job/dataset.h"
#include "engine/cluster/late_model.h"
#include "engine/model/model.h"
#include "engine/train/trainer.h"

typedef struct chunk_engine {
    const job_config *cfg;
    model m;
    int have_model;
    rt_runtime *rt;
    trainer *t;
    uint64_t seq;                /* the batch whose parameters are loaded; UINT64_MAX: none */
    uint64_t loading;            /* the batch whose layers arrive one by one (LAYER) */
    int layers_in, param_layers;
    unsigned char layer_in[CONFIG_MAX_LAYERS];
    long layer_params[CONFIG_MAX_LAYERS], largest;   /* per layer (0: none), the largest */
    int nlayers;
    float *grads;                /* one chunk's partial gradient, or a round's model, packed */
    int streams;                 /* gradients leave through a sink as they are made */
    double busy_per_chunk;       /* CPU seconds per chunk, the last group's */
    float *round_start;          /* compress = on: the round's parameters as they came */
    uint64_t start_seq;          /* their round */
    uint8_t *delta;              /* the model after a round, from round_start (model_delta.h) */
    size_t delta_len;
    late_model *late;            /* overlap = on: the model one average behind (late_model.h) */
    float *mean;                 /* and a round's mean change, as it came */
} chunk_engine;

/* rc: the runtime's workers and devices (NULL: cfg's workers, on the CPU). */
int chunk_engine_open(chunk_engine *e, const job_config *cfg, const dataset *train,
                      const rt_config *rc, char *err, size_t errlen);
void chunk_engine_close(chunk_engine *e);
long chunk_engine_nparams(const chunk_engine *e);
/* The parameters of batch seq (packed, possibly unaligned); or one layer's, the batch's being
 * loaded once each layer with parameters has come. */
int chunk_engine_params(chunk_engine *e, uint64_t seq, const void *packed, char *err,
                        size_t errlen);
int chunk_engine_layer(chunk_engine *e, uint64_t seq, int layer, const void *values, char *err,
                       size_t errlen);
/* compress = on: the parameters of round seq as a delta from those of round base, which it
 * must hold. */
int chunk_engine_delta(chunk_engine *e, uint64_t seq, uint64_t base, const uint8_t *delta,
                       char *err, size_t errlen);
/* Computes chunks (of the loaded batch, at most MAX_GROUP) on every worker; claims (NULL:
 * none), per chunk, let another machine take it before it starts (trainer_node_chunks). 0, or
 * -1 with err. */
#define MAX_GROUP 256
int chunk_engine_run(chunk_engine *e, const msg_work *w, _Atomic int *const *claims, int n,
                     char *err, size_t errlen);
/* Each chunk's gradients handed to the sink layer by layer during chunk_engine_run (a node's). */
void chunk_engine_stream(chunk_engine *e, const trainer_gradient_sink *s);
/* Chunk w's result after chunk_engine_run; r->grads points into the engine until the next call
 * (none when the gradients were streamed). */
void chunk_engine_result(chunk_engine *e, const msg_work *w, msg_result *r);
/* Periodic averaging: trains on the round's chunks from the loaded parameters, with local steps,
 * and fills r with its figures and the parameters after it (r->body, into the engine: floats,
 * or with compress = on their delta from the round's start, r->nparams then 0; overlap = on:
 * their change over the round, as floats or a delta from zeros). */
int chunk_engine_round(chunk_engine *e, const msg_round *w, msg_result *r, char *err,
                       size_t errlen);
/* overlap = on: round seq's mean change (body: floats, maybe unaligned, or a delta) applied. */
int chunk_engine_average(chunk_engine *e, uint64_t seq, const uint8_t *body, char *err,
                         size_t errlen);

#endif
