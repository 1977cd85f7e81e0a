/* The messages between gossip peers ([cluster] mode = gossip, engine/cluster/gossip.h), and their
 * decoders: every field range-checked, every float finite (fuzz target `gossip_message`).
 *
 *   HELLO      first on every connection, both ways: the protocol's version, the job's hash
 *              (peers never mix jobs), the peer's id and address, where it is (epoch, round),
 *              whether it has finished
 *   MEMBERS    the peers the sender knows to be up (id, address): membership spreads by gossip
 *   PUSH       a round's push-sum share: the round, the sender's place (epoch, batch), the
 *              weight sent, its seconds per round and joules so far, then its parameters;
 *              weight 0: the sender sits the round out ([placement] participation), not to
 *              be waited for
 *   STATE_ASK  a newcomer asks for a neighbour's model and place
 *   STATE      the answer: the round, epoch and batch, then the parameters
 *   FINAL      the sender finished: its samples, joules, rounds, then its last model (every
 *              peer averages the FINALs it has once more at its end)
 *   LEAVE      the sender stops before its end (a signal), why */
#ifndef FRUGAL_GOSSIP_PROTO_H
#define FRUGAL_GOSSIP_PROTO_H

#include "engine/job/config.h"
#include "netio/frame.h"

#include <stddef.h>
#include <stdint.h>

enum {
    GOSSIP_MSG_HELLO = 40, GOSSIP_MSG_MEMBERS, GOSSIP_MSG_PUSH, GOSSIP_MSG_STATE_ASK,
    GOSSIP_MSG_STATE, GOSSIP_MSG_FINAL, GOSSIP_MSG_LEAVE, GOSSIP_MSG_END
};

#define GOSSIP_VERSION 1
#define GOSSIP_ADDR 64
#define GOSSIP_JOB_HASH 32
#define GOSSIP_TEXT 160
#define GOSSIP_PUSH_HEAD 44
#define GOSSIP_STATE_HEAD 16
#define GOSSIP_FINAL_HEAD 28
#define GOSSIP_MAX_MASS 1e6           /* a push-sum weight: n peers' worth at most, with room */
#define GOSSIP_MAX_FIGURE 1e12        /* seconds, joules, samples */

typedef struct gossip_hello {
    uint32_t version;
    uint8_t job[GOSSIP_JOB_HASH];
    uint64_t id;                      /* never 0 */
    char addr[GOSSIP_ADDR];           /* where it listens, HOST:PORT */
    uint32_t epoch, finished;
    uint64_t round;
} gossip_hello;

typedef struct gossip_members {
    uint32_t n;
    uint64_t id[CONFIG_MAX_PEERS];
    char addr[CONFIG_MAX_PEERS][GOSSIP_ADDR];
} gossip_members;

/* PUSH, STATE and FINAL: figures, then nparams floats at `values` (into the payload, maybe
 * unaligned). */
typedef struct gossip_model_msg {
    uint64_t round;
    uint32_t epoch, batch, estimated;
    double mass, round_s, joules, samples;
    const uint8_t *values;
} gossip_model_msg;

/* The job's hash in HELLO (gossip.c): the model, the optimizer, the batch, the epochs, the seed,
 * the input's shape and the [gossip] settings; not the data (each peer may train on its own) nor
 * where the output goes. */
struct dataset;
void gossip_job_hash(const job_config *cfg, const struct dataset *train, uint8_t out[GOSSIP_JOB_HASH]);
/* What a peer accepts, per type, once the model's parameter count is known (0: not yet). */
void gossip_limits(frame_limits *l, long nparams);

size_t gossip_hello_encode(const gossip_hello *m, uint8_t *out, size_t cap);
size_t gossip_members_encode(const gossip_members *m, uint8_t *out, size_t cap);
/* The head of a PUSH, STATE or FINAL (type); the parameters follow. */
size_t gossip_model_head(unsigned type, const gossip_model_msg *m, uint8_t *out, size_t cap);

/* Decoders: 0, or -1 with why. */
int gossip_hello_decode(gossip_hello *m, const uint8_t *p, size_t len, char *why, size_t whylen);
int gossip_members_decode(gossip_members *m, const uint8_t *p, size_t len, char *why,
                          size_t whylen);
int gossip_model_decode(unsigned type, gossip_model_msg *m, const uint8_t *p, size_t len,
                        long nparams, char *why, size_t whylen);
int gossip_text_decode(char *out, size_t outlen, const uint8_t *p, size_t len, char *why,
                       size_t whylen);
const char *gossip_msg_name(unsigned type);

#endif
