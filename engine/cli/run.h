/* frugal train: a whole run, from the job file to the last checkpoint, as a loop over epochs
 * (engine/cli/run.c). A coordinator of several machines drives the same loop. */
#ifndef FRUGAL_RUN_H
#define FRUGAL_RUN_H

#include <stdio.h>

#define RUN_WAIT_FOR_S 60              /* the longest --wait-for waits */
#define RUN_MAX_PEERS 16               /* --peer addresses */

typedef struct run_options {
    const char *job;
    const char *const *overrides;      /* "section.key=value", NULL-ended; may be NULL */
    const char *trace;                 /* a Chrome trace of the run's tasks, or NULL */
    int resume;                        /* continue from the output folder's checkpoint */
    int overwrite;                     /* start afresh where a run left a checkpoint */
    int verbose;                       /* the tables by task kind and sensor at the end */
    const char *resume_command;        /* the command line that continues this run (the hint) */
    FILE *out;                         /* progress and results; errors go to stderr */
    const _Atomic int *stop; /* non-zero (a signal's number): stop at a batch boundary */
    const char *listen;                /* ADDR:PORT: coordinate a cluster (engine/cluster/coordinator.h) */
    const char *key;                   /* its key file */
    const char *allow;                 /* the identities admitted (allow_list.h), or NULL: any */
    double timeout_s;                  /* a silent node is lost after this long (0: 10 s) */
    int wait_for;                      /* nodes to wait for before training (up to RUN_WAIT_FOR_S) */
    const char *peers[RUN_MAX_PEERS];  /* gossip: --peer HOST:PORT (engine/cluster/gossip.h) */
    int npeers;
    const char *advertise;             /* gossip: the address others reach this peer at */
    const char *launch_json;           /* the launcher found, for summary.json (launch.h), or NULL */
} run_options;

/* 0 when the run finished, 1 on an error (named on stderr), 128 + *stop when it stopped early
 * (after saving its checkpoint, metrics and summary). */
int run_train(const run_options *o);

#endif
