/* What a cluster did, as summary.json's "cluster" section shows it: filled by the coordinator
 * (engine/cluster/coordinator_report.c), drawn by report.c, which calls no cluster code. */
#ifndef FRUGAL_CLUSTER_SUMMARY_H
#define FRUGAL_CLUSTER_SUMMARY_H

#define CLUSTER_SUMMARY_NODES 64
#define CLUSTER_SUMMARY_DECISIONS 16

typedef struct cluster_node_summary {
    char address[64], host[64], energy[160], devices[160], cipher[24];
    char lost[200];                /* why it was lost; "" while it is not */
    char identity[65];             /* its proven identity's public key in hex; "": none */
    char identity_name[48];        /* its name in the allow file (or the key's first digits) */
    int gone;
    int workers, active_workers;
    const char *kernel_path;
    double joined_after_s;
    long chunks, probe_chunks, chunks_stolen, chunks_given_back, chunks_summed_there;
    long chunks_late;              /* taken from it past their deadline */
    long batches_dealt, batches_present;
    double share, img_per_s;
    unsigned long long bytes_sent, bytes_received;
    double network_wait_s, compute_s, chunk_cost_ms, round_trip_lag_ms;
    double joules, watts_computing, carbon_g_per_kwh;
    double gco2e;                  /* its CO2e so far, as it reports it */
    int parked, estimated;
} cluster_node_summary;

typedef struct cluster_decision_summary {
    double t;                      /* seconds into the run */
    int nodes_taking_work;
    char why[400];
} cluster_decision_summary;

/* The messages of one type between the coordinator and its nodes, both ways, and their bytes
 * on the wire (netio_wire_bytes): what `frugal simulate` predicts message by message. */
#define CLUSTER_TRAFFIC_TYPES 24
typedef struct cluster_traffic {
    const char *type;              /* the message's name (proto_msg_name) */
    long sent, received;           /* messages, as the coordinator counts them */
    unsigned long long sent_bytes, received_bytes;
} cluster_traffic;

typedef struct cluster_summary {
    double joules_every_machine, joules_here, joules_nodes;
    const char *joules_how;        /* measured, estimated, partly estimated */
    char listen[80];
    const char *mode;              /* the training mode's name */
    int sync_every, compress, overlap, centered_clip;
    long models_clipped;           /* centered_clip: models clipped, over the rounds */
    long models_skipped;           /* participation = backup: models the rounds did not wait for */
    long rounds, node_rounds_lost, rounds_sharing_a_chunk;
    char weights_why[400];         /* "": the weights are one machine's */
    double timeout_s;
    long coordinator_chunks;
    double coordinator_share;
    long nodes_lost, chunks_resent, chunks_by_the_fallback, chunks_stolen, chunks_taken_back;
    long chunks_late;              /* taken from nodes past their deadline, computed here */
    int nnodes;
    cluster_node_summary nodes[CLUSTER_SUMMARY_NODES];
    /* the placement policy over machines */
    const char *policy;
    int nodes_pinned;
    double power_budget_watts, max_slowdown;
    double coordinator_img_per_s, coordinator_watts, coordinator_carbon_g_per_kwh;
    int probe_every_batches, decisions_total, ndecisions;
    cluster_decision_summary decisions[CLUSTER_SUMMARY_DECISIONS];
    int ntraffic;                  /* the types with any message */
    cluster_traffic traffic[CLUSTER_TRAFFIC_TYPES];
} cluster_summary;

#endif
