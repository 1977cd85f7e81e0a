/* The messages of a training cluster (carried by netio/ hubs), and their decoders. Every
 * decoder checks every field against what the receiver can accept and names what is wrong; the
 * fuzz target `cluster_proto` feeds them arbitrary bytes.
 *
 *   node -> coordinator  JOIN     its workers, kernel path, energy source, host name
 *   coordinator -> node  JOB      the job file and --set overrides, the training files (name,
 *                                 size, BLAKE2b hash), the kernel path every node must use (or
 *                                 any)
 *   node -> coordinator  FETCH    a part of a file it lacks (by hash, from an offset)
 *   coordinator -> node  FILE     that part
 *   node -> coordinator  READY    the parameter count of the model it built, and what it
 *                                 computes on (its CPU, OpenCL devices)
 *   coordinator -> node  LAYER    one layer's parameters of batch `seq`, sent as soon as the
 *                                 batch before has updated that layer (the last layer first,
 *                                 while the nodes still compute the layers before it)
 *   coordinator -> node  PARAMS   the parameters of batch `seq` (every layer, in order), to a
 *                                 node that missed some of its LAYERs
 *   coordinator -> node  WORK     chunk k of batch `seq` (epoch, batch in the epoch, its size;
 *                                 whether its gradients go alone, summed with no other chunk's:
 *                                 a probe, which the coordinator computes too, or a chunk sent
 *                                 again with some of its gradients already there)
 *   node -> coordinator  GRAD     one layer's partial gradient of chunks [k, k + n) of the batch,
 *                                 sent as soon as their backward pass has computed it (the
 *                                 layers nearer the input are still computing meanwhile). n > 1
 *                                 only for a batch's last chunks, summed on the node in the
 *                                 fixed order (from the last chunk down), none to go alone
 *   node -> coordinator  RESULT   after the chunk's GRADs: its loss and correct answers, the
 *                                 node's compute time, energy so far, power while computing and
 *                                 grid carbon intensity (the placement policy weighs them)
 *   coordinator -> node  RECALL   chunk k of batch `seq` back, if it has not started: another
 *                                 node, idle, would finish it sooner
 *   node -> coordinator  RECALLED its answer: given back (it will not run: nothing more comes
 *                                 of it), or not (it started: its GRADs and RESULT come)
 *   node -> coordinator  FIGURES  a RESULT's figures with no samples, sent while it computes
 *                                 nothing and its grid changes (a node the participation policy
 *                                 left out says so when its grid turns green)
 *   coordinator -> node  DONE     training is over (why)
 *   coordinator -> node  PAUSED   training stopped before its end (a signal: the coordinator
 *                                 saved, and may be resumed): the node tries to rejoin
 *   coordinator -> node  REFUSED  its JOIN is refused (why: an identity the allow file does not
 *                                 admit, joins too often), before the connection closes: it
 *                                 stops instead of trying again
 *
 * Periodic averaging ([cluster] sync_every = K) replaces WORK and RESULT by a round:
 *   coordinator -> node  ROUND    after PARAMS: K batches of an epoch, chunks [chunk0, chunk1)
 *                                 of each (chunk0 only from batch chunk0_after on, and chunk1
 *                                 too before batch chunk1_until), to train on with local steps
 *   node -> coordinator  MODEL    the round's figures as in RESULT, then the node's parameters
 *                                 after it (its chunk: the round's chunk0)
 * With [cluster] compress = on, a MODEL carries the parameters' change since the round's
 * PARAMS as a delta (engine/cluster/model_delta.h), and a node that holds the round before's parameters
 * gets the next ones as one:
 *   coordinator -> node  DELTA    the parameters of round `seq` as a delta from those of round
 *                                 `base`, instead of PARAMS
 * With [cluster] overlap = on (engine/cluster/late_model.h), PARAMS go only to a node that holds none
 * (their `seq`: the last round averaged in them); a MODEL carries the node's change over the
 * round (floats, or a delta from zeros with compress = on), and every node holding parameters
 * gets each round's mean change, which it applies after the round it trains meanwhile:
 *   coordinator -> node  AVERAGE  round `seq`, then its mean change (floats, or a delta) */
#ifndef FRUGAL_CLUSTER_PROTO_H
#define FRUGAL_CLUSTER_PROTO_H

#include "netio/frame.h"
#include "netio/hub.h"

#include <stddef.h>
#include <stdint.h>

enum {
    MSG_JOIN = 1, MSG_JOB, MSG_FETCH, MSG_FILE, MSG_READY, MSG_PARAMS, MSG_WORK, MSG_RESULT,
    MSG_DONE, MSG_ROUND, MSG_MODEL, MSG_GRAD, MSG_LAYER, MSG_RECALL, MSG_RECALLED, MSG_DELTA,
    MSG_AVERAGE, MSG_REFUSED, MSG_PAUSED, MSG_FIGURES,
    MSG_TYPES
};

#define PROTO_VERSION 15
#define PROTO_MAX_FILES 8
#define PROTO_MAX_OVERRIDES 48               /* --set overrides a job carries */
#define PROTO_OVERRIDES_BYTES (64 * 1024)
#define PROTO_FILE_PIECE (1u << 20)     /* bytes of a file per FILE message */
#define PROTO_MAX_PARAMS (64L << 20)    /* floats a model may have to train on a cluster */
#define PROTO_TEXT 160
#define PROTO_MAX_LOSS 1e9               /* a chunk's or round's summed loss */
#define PROTO_MAX_SECONDS 1e6            /* a chunk's or round's computing */
#define PROTO_MAX_JOULES 1e12            /* a node's total (278 MWh) */
#define PROTO_MAX_CHUNKS (1u << 20)    /* chunks a batch may have (its samples, at most) */

typedef struct msg_join {
    uint32_t version, workers, isa;
    char host[64], energy[PROTO_TEXT];
    uint32_t has_identity;              /* the node's identity (netio/key.h) signed this session */
    uint8_t identity[NETIO_ID_PUBLIC_BYTES], signature[NETIO_ID_SIG_BYTES];
} msg_join;

typedef struct msg_ready {
    long nparams;
    char devices[PROTO_TEXT];           /* devices_describe (engine/job/devices.h) */
} msg_ready;

typedef struct proto_file {
    char name[512];                     /* the path in the job file */
    uint64_t size;
    uint8_t hash[32];
} proto_file;

typedef struct msg_job {
    uint32_t isa;                       /* the kernel path to use, or PROTO_ANY_ISA */
    char *text;                         /* the job file as it is (owned) */
    size_t text_len;
    char *overrides;                    /* the --set overrides, one a line (owned) */
    size_t overrides_len;
    uint32_t nfiles;
    proto_file files[PROTO_MAX_FILES];
} msg_job;
#define PROTO_ANY_ISA 0xffffffffu

typedef struct msg_fetch {
    uint8_t hash[32];
    uint64_t offset;
} msg_fetch;

typedef struct msg_file {
    uint8_t hash[32];
    uint64_t offset, total;
    const uint8_t *bytes;               /* into the payload */
    size_t len;
} msg_file;

typedef struct msg_work {
    uint64_t seq;
    uint32_t epoch, batch, chunk, size;
    uint32_t alone;                     /* 1: its gradients go summed with no other chunk's */
} msg_work;

/* RECALL (given 0) and RECALLED */
typedef struct msg_recall {
    uint64_t seq;
    uint32_t chunk, given;
} msg_recall;

typedef struct msg_round {
    uint64_t seq;                       /* the PARAMS it starts from */
    uint32_t epoch, first_batch, batches, chunk0, chunk1;
    uint32_t chunk0_after, chunk1_until;   /* a chunk shared with the machine before or after
                                              (round_share in trainer.h), < batches */
} msg_round;

typedef struct msg_result {
    uint64_t seq;
    uint32_t chunk, correct, samples, estimated;
    uint32_t workers;                   /* the node's active workers (a power budget parks some) */
    double loss, compute_s, joules;     /* joules: the node's total so far */
    double watts;                       /* the node's power while computing this batch's chunks */
    double carbon_g_per_kwh;            /* its grid's intensity now */
    double renewable_w;                 /* the renewable power it has now (a replayed trace) */
    double grams;                       /* its CO2e so far */
    const uint8_t *body;                /* into the payload: a MODEL's parameters, as floats
                                           or a delta (compress); none in a RESULT */
    const float *grads;                 /* the body as nparams floats, maybe unaligned */
    size_t nparams;
} msg_result;

typedef struct msg_delta {
    uint64_t seq, base;                 /* the parameters of round seq, from those of base */
    const uint8_t *body;                /* into the payload: model_delta.h */
} msg_delta;
#define PROTO_DELTA_HEAD 16

/* One layer's floats: the partial gradient of chunks [chunk, chunk + chunks) summed (GRAD), or
 * a batch's parameters (LAYER: chunk 0, chunks 1). */
typedef struct msg_layer {
    uint64_t seq;
    uint32_t chunk, layer, chunks;
    const float *values;                /* into the payload, maybe unaligned */
    size_t n;                           /* the layer's parameter count */
} msg_layer;
#define PROTO_LAYER_HEAD 20

/* What a receiver accepts, per message type (nparams: the model's, 0 before it is known;
 * largest: its largest layer's count, the bound of a GRAD or a LAYER). */
void proto_limits(frame_limits *l, int coordinator, long nparams, long largest);
/* FRUGAL_NET_CIPHER: unset or "auto" (AES-256-GCM where both ends have it, netio/secure.h), or
 * "xchacha20poly1305" (nc->no_aes). 0, or -1 with err for another value. */
int proto_cipher_from_env(netio_config *nc, char *err, size_t errlen);
/* "PARAMS", "RESULT", ...: for logs and traces ("?" for an unknown type). */
const char *proto_msg_name(unsigned type);

/* Encoders write into a buffer of cap bytes and return the length, 0 when it is too small (a
 * message of nothing, which the receiver refuses). */
size_t proto_join_encode(const msg_join *m, uint8_t *out, size_t cap);
size_t proto_ready_encode(const msg_ready *m, uint8_t *out, size_t cap);
size_t proto_job_encode(const msg_job *m, uint8_t *out, size_t cap);
size_t proto_fetch_encode(const msg_fetch *m, uint8_t *out, size_t cap);
size_t proto_file_head(const msg_file *m, uint8_t *out, size_t cap);       /* bytes follow */
size_t proto_work_encode(const msg_work *m, uint8_t *out, size_t cap);
size_t proto_recall_encode(const msg_recall *m, uint8_t *out, size_t cap);
size_t proto_round_encode(const msg_round *m, uint8_t *out, size_t cap);
size_t proto_result_head(const msg_result *m, uint8_t *out, size_t cap);   /* grads follow */
size_t proto_layer_head(const msg_layer *m, uint8_t *out, size_t cap);       /* values follow */
size_t proto_delta_head(const msg_delta *m, uint8_t *out, size_t cap);       /* body follows */
#define PROTO_PARAMS_HEAD 8                                                /* seq, then floats */

/* Decoders: 0, or -1 with why. */
int proto_join_decode(msg_join *m, const uint8_t *p, size_t len, char *why, size_t whylen);
/* The job a node received, parsed as the coordinator parsed it (config_parse): its text, its
 * overrides (one a line; the job's text is cut nowhere), then the node's own (`mine`, NULL-ended,
 * at most 3). 0, or -1 with err. Fuzzed. */
struct job_config;
int proto_job_config(const msg_job *job, const char *const *mine, struct job_config *cfg,
                     char *err, size_t errlen);
int proto_job_decode(msg_job *m, const uint8_t *p, size_t len, char *why, size_t whylen);
void proto_job_free(msg_job *m);
int proto_fetch_decode(msg_fetch *m, const uint8_t *p, size_t len, char *why, size_t whylen);
int proto_file_decode(msg_file *m, const uint8_t *p, size_t len, char *why, size_t whylen);
int proto_work_decode(msg_work *m, const uint8_t *p, size_t len, char *why, size_t whylen);
int proto_recall_decode(unsigned type, msg_recall *m, const uint8_t *p, size_t len, char *why,
                        size_t whylen);
int proto_params_decode(uint64_t *seq, const float **values, const uint8_t *p, size_t len,
                        long nparams, char *why, size_t whylen);
/* A RESULT or a MODEL: figures within range (PROTO_MAX_*), at most max_samples samples (a
 * RESULT: its batch's; a MODEL: the training set's). */
int proto_result_decode(msg_result *m, const uint8_t *p, size_t len, uint32_t max_samples,
                        char *why, size_t whylen);
/* FIGURES: a RESULT's head counting no samples. */
int proto_figures_decode(msg_result *m, const uint8_t *p, size_t len, char *why, size_t whylen);
/* A GRAD or a LAYER (type): layer_params holds the model's count per layer (0: none). */
int proto_layer_decode(unsigned type, msg_layer *m, const uint8_t *p, size_t len,
                       const long *layer_params, int nlayers, char *why, size_t whylen);
int proto_round_decode(msg_round *m, const uint8_t *p, size_t len, char *why, size_t whylen);
/* A MODEL whose parameters take `body` bytes (floats, or a delta). */
int proto_model_decode(msg_result *m, const uint8_t *p, size_t len, size_t body,
                       uint32_t max_samples, char *why, size_t whylen);
int proto_delta_decode(msg_delta *m, const uint8_t *p, size_t len, size_t body, char *why,
                       size_t whylen);
/* An AVERAGE whose mean change takes `body` bytes (floats, or a delta). */
int proto_average_decode(uint64_t *seq, const uint8_t **values, const uint8_t *p, size_t len,
                         size_t body, char *why, size_t whylen);
int proto_ready_decode(msg_ready *m, const uint8_t *p, size_t len, char *why, size_t whylen);
/* A printable message (DONE), at most PROTO_TEXT bytes. */
int proto_text_decode(char *out, size_t outlen, const uint8_t *p, size_t len, char *why,
                      size_t whylen);

#endif
