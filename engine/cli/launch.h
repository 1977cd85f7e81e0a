/* A cluster run started by a batch system or an MPI launcher (`srun frugal train JOB.cfg`,
 * `mpirun -np 4 frugal train JOB.cfg`, `frugal train JOB.cfg` inside an OAR job): from what the
 * launcher says (launch_env.h), each process's part (rank 0 coordinates, the others join it;
 * in a gossip run every rank is a peer), the addresses, and the key: the one --key names, or one
 * rank 0 makes in a folder every host shares, which the others wait for (never a key in the
 * environment or on a command line). docs/batch-systems.md says it for users. */
#ifndef FRUGAL_LAUNCH_H
#define FRUGAL_LAUNCH_H

#include "engine/cli/launch_env.h"

#include <stdio.h>

#define LAUNCH_WAIT_S 120          /* how long a rank waits for rank 0's key or address */
#define LAUNCH_DIR ".frugal-launch"   /* the shared folder's default, in the working folder */

typedef struct launch_request {    /* from frugal train's command line */
    const char *key;               /* --key FILE, or NULL: rank 0 makes one */
    const char *rendezvous;        /* --rendezvous DIR, or NULL: LAUNCH_DIR */
    int port;                      /* --port P, or 0: the launcher's or one from the job id */
    double wait_s;                 /* --launch-timeout S, or 0: LAUNCH_WAIT_S */
    int off;                       /* --launcher none */
    const char *manual;            /* "--listen" or "--peer" when given (they win), or NULL */
    const char *identity;          /* --identity FILE: each node's own (rank 0 takes --allow) */
} launch_request;

typedef enum launch_role {
    LAUNCH_ALONE,                  /* no launcher (or one process): as without one */
    LAUNCH_COORDINATOR,            /* rank 0 of a sync or average run */
    LAUNCH_NODE,                   /* another rank of one: frugal join */
    LAUNCH_PEER                    /* any rank of a gossip run */
} launch_role;

typedef struct launch_plan {
    launch_env env;
    launch_role role;
    int mode;                      /* the job's cluster_mode */
    char output[600];              /* the job's output folder (gossip: each rank's in it) */
    int port;                      /* rank 0's; a gossip rank r listens at port + r */
    const char *port_from;         /* "--port", "SLURM_STEP_RESV_PORTS" or "the job id" */
    char listen[HOSTLIST_NAME + 8];      /* where this process listens ("": it does not) */
    char advertise[HOSTLIST_NAME + 8];   /* gossip: where the others reach it */
    char coordinator[HOSTLIST_NAME + 8]; /* rank 0, as the others reach it */
    char dir[700];                 /* the shared folder (absolute), "" when unused */
    char key_path[800];
    int key_made;                  /* rank 0 made it (and removes it at the end) */
    char address_path[800];        /* rank 0's address for ranks that cannot know it (MPI) */
    int wait_for;                  /* the coordinator: nodes to wait for */
    double wait_s;
    char *json;                    /* summary.json's "launch" object (malloc'd) */
} launch_plan;

/* Reads the environment (through get, or this process's when NULL) and decides; job and
 * overrides say the run's mode. Rank 0 makes the
 * key (and publishes its address) here; the others wait for them here (up to wait_s). 0 with
 * p->role LAUNCH_ALONE when nothing was launched (or --listen/--peer won, which p->json
 * records); -1 with err naming the variable, file or folder at fault. What it found is printed
 * on out. */
int launch_prepare(launch_plan *p, const launch_request *rq, launch_getenv_fn get, void *ctx,
                   const char *job, const char *const *overrides, FILE *out, char *err,
                   size_t errlen);
/* Removes the files rank 0 made, frees the plan. */
void launch_finish(launch_plan *p);

/* Where a rank on host (NULL: this one) listens and where the others reach it, at the port
 * plus offset (a gossip rank's own). */
void launch_addresses(const launch_plan *p, const char *host, int offset, char *listen,
                      char *reach, size_t n);

/* The value of the last "name=value" of the --set list (NULL-ended), or NULL. */
const char *launch_override(const char *const *overrides, const char *name);

/* "HOST:PORT" as rank 0 publishes it: 0 and the address in addr (addrlen), or -1 with err.
 * The file comes from a shared folder, so it is checked as outside input (fuzzed). */
int launch_address_parse(const char *text, size_t len, char *addr, size_t addrlen, char *err,
                         size_t errlen);

#endif
