/* What a gossip peer did, as summary.json's "gossip" section shows it: filled by the peer
 * (engine/cluster/gossip_report.c), written by report_gossip.c, which calls no cluster code. */
#ifndef FRUGAL_GOSSIP_SUMMARY_H
#define FRUGAL_GOSSIP_SUMMARY_H

#define GOSSIP_SUMMARY_PEERS 64

typedef struct gossip_peer_summary {
    char id[17], address[64];
    char state[16];                /* up, finished, lost, left, dropped, known */
    char why[200];                 /* why lost, left or dropped */
    long pushes_in, pushes_out, pushes_late;
    unsigned long long bytes_sent, bytes_received;
    double joules, late_ms;        /* its joules so far; how late its pushes came */
    int estimated, final_in;
} gossip_peer_summary;

typedef struct gossip_summary {
    char id[17], address[64];
    const char *topology;
    int neighbours, every, peers_waited_for;
    double participation;
    int shard_index, shard_count;  /* count 0: no shard */
    char joined_from[64];          /* "": it started with the others; else whose model it took */
    int joined_at_epoch;
    long rounds, rounds_taken_part, pushes_in, pushes_out, pushes_late;
    double wait_s, weight, consensus_distance;
    unsigned long long bytes_sent, bytes_received;
    int final_models;              /* models in the final average (this one's included) */
    double final_test_acc, final_test_loss;   /* the averaged model's; NAN: none */
    double joules_every_peer;      /* this one's and each peer's last figure */
    int joules_estimated;          /* some of them are estimated */
    int npeers;
    gossip_peer_summary peers[GOSSIP_SUMMARY_PEERS];
} gossip_summary;

#endif
