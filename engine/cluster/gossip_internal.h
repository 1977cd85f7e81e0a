/* A gossip peer's state, shared by its files: gossip.c (the mesh: hub events, HELLO, MEMBERS,
 * dialing), gossip_round.c (rounds, the final average), gossip_report.c (gossip.csv, the lines,
 * the summary). Everything below `lock` is guarded by it, except what the training thread alone
 * touches (marked). */
#ifndef FRUGAL_GOSSIP_INTERNAL_H
#define FRUGAL_GOSSIP_INTERNAL_H

#include "engine/cluster/gossip.h"
#include "engine/cluster/gossip_proto.h"
#include "energy/carbon.h"
#include "engine/report/green_log.h"
#include "netio/hub.h"

#include <pthread.h>

typedef enum member_state {
    MEMBER_KNOWN,                /* heard of in a MEMBERS, not connected yet */
    MEMBER_UP,                   /* HELLO exchanged */
    MEMBER_FINISHED,             /* its FINAL is in: it exchanges no more */
    MEMBER_GONE                  /* lost, left, or dropped (gone_why) */
} member_state;

typedef struct gossip_member {
    uint64_t id;
    char addr[GOSSIP_ADDR];
    member_state state;
    char gone_why[200];
    int conn;                    /* the hub's peer id, -1: none */
    int outgoing;                /* conn was dialed from here */
    double next_dial;            /* when to dial again (the lower id dials) */
    uint32_t epoch, batch;       /* where it is (HELLO, PUSH) */
    uint64_t round;
    uint64_t hello_round;        /* its round when it met this peer: > 0, it was training then */
    int pushed;                  /* a PUSH came; pushed_round is the latest's round */
    uint64_t pushed_round;
    double late_s;               /* how long after this peer was ready its pushes came (EWMA) */
    int late_measured;
    double round_s, joules;
    int estimated;
    long pushes_in, pushes_out, pushes_late;
    unsigned long long bytes_sent, bytes_received;
    float *final_model;          /* its FINAL's parameters */
    double final_samples, final_joules;
} gossip_member;

typedef struct gossip_conn {
    int used, hub_id, member, outgoing, boot;   /* member -1 until its HELLO; boot: -1 or a --peer */
} gossip_conn;

#define GOSSIP_CONNS (2 * CONFIG_MAX_PEERS + GOSSIP_MAX_BOOTSTRAP)

struct gossip_peer {
    gossip_options o;
    job_config *cfg;
    const dataset *train;
    double started_at;
    FILE *log;
    netio_config net;
    netio_hub *hub;
    pthread_t dialer;
    int dialer_started;
    uint64_t id;
    char addr[GOSSIP_ADDR];
    uint8_t job_hash[GOSSIP_JOB_HASH];
    energy_meter *meter;                 /* training thread */
    carbon_source *carbon;               /* training thread: participation (NULL: always) */
    green_log *green;
    int green_here;
    double round_joules;                 /* the meter's total at the last round's end */
    double green_img_s, green_w;         /* this peer's speed and power over its last round */

    pthread_mutex_t lock;
    pthread_cond_t changed;              /* a member's state, a PUSH, a STATE, a FINAL */
    int stopping;
    gossip_member members[CONFIG_MAX_PEERS];
    int nmembers;
    gossip_conn conns[GOSSIP_CONNS];
    int nboot;
    char boot[GOSSIP_MAX_BOOTSTRAP][GOSSIP_ADDR];
    double boot_next[GOSSIP_MAX_BOOTSTRAP];
    int boot_dialing[GOSSIP_MAX_BOOTSTRAP];
    int boot_warned[GOSSIP_MAX_BOOTSTRAP];
    /* pushes mixed in at the next round: their weighted sum and weights */
    double *acc, acc_w;
    long pushes_in, pushes_late;
    unsigned long long bytes_sent, bytes_received;
    uint64_t round;                      /* the rounds done (the next one's number) */
    uint64_t ready_round;                /* the round this peer waits in (lateness measured) */
    double ready_at;
    /* a newcomer's STATE (gossip_attach) */
    int state_from;                      /* the member asked; -1 none */
    int state_in;
    float *state_model;
    uint64_t state_round;
    uint32_t state_epoch;
    int finished_here;                   /* this peer sent its FINAL */

    long nparams;                        /* set at the start */
    trainer *t;                          /* set under lock at gossip_attach */
    float *z;                            /* the parameters, as exchanged: written under lock */
    double w;                            /* their push-sum weight */
    double round_s;                      /* this peer's seconds a round */
    int last_epoch;                      /* the epoch it trains */
    /* the training thread's */
    int steps_since;
    long rounds_taken_part, pushes_out;
    double wait_s, last_round_at, consensus, samples;
    FILE *csv;
    char joined_from[GOSSIP_ADDR];
    int joined_at_epoch;
    int final_models;
    double final_test_acc, final_test_loss;
    int shard_index;
};

/* gossip.c, locked: the member of a hub peer id (-1: none), and a message to a member (0, or -1
 * when its link is gone); bytes are counted. */
int gossip_member_of(gossip_peer *g, int hub_id);
int gossip_send(gossip_peer *g, gossip_member *m, unsigned type, const void *head, size_t headlen,
                const void *body, size_t bodylen);
/* Locked: marks a member gone, says why on the log, closes its link. */
void gossip_member_gone(gossip_peer *g, gossip_member *m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* gossip_round.c, locked, on the hub's thread: a PUSH, STATE or FINAL from member m. */
void gossip_on_push(gossip_peer *g, gossip_member *m, const gossip_model_msg *msg);
void gossip_on_state(gossip_peer *g, gossip_member *m, const gossip_model_msg *msg);
void gossip_on_final(gossip_peer *g, gossip_member *m, const gossip_model_msg *msg);
void gossip_on_state_ask(gossip_peer *g, gossip_member *m);
/* gossip_report.c: a round's line of gossip.csv (training thread). */
void gossip_log_round(gossip_peer *g, int epoch, long batch, int took_part, int targets,
                      int expected, int received, double wait_s);
/* Locked: the joules of this peer and of every peer's last figure. */
double gossip_joules_here(gossip_peer *g, int *estimated);

#endif
