/* OAR starts a job's script once, on its first host: that frugal (rank 0) starts one on each
 * other host of the node file, through oarsh (or FRUGAL_LAUNCH_RSH), in the same folder:
 * `frugal join` for a sync or average run, `frugal train` as a peer for a gossip one. Their
 * command lines carry the key file's path, never the key. */
#ifndef FRUGAL_LAUNCH_SPAWN_H
#define FRUGAL_LAUNCH_SPAWN_H

#include "engine/cli/launch.h"
#include "engine/cli/run.h"

#include <sys/types.h>

#define LAUNCH_SPAWN_RSH "oarsh"
#define LAUNCH_NODES_END_S 60      /* after the coordinator ends, how long its nodes may take */

typedef struct launch_children {
    int n;
    pid_t *pid;                    /* 0 once ended */
} launch_children;

/* Starts ranks 1.. of the plan (o: the run as rank 0 runs it). 0, or -1 with err (those started
 * are stopped). */
int launch_spawn(launch_children *c, const launch_plan *p, const run_options *o,
                 const launch_request *rq, FILE *out, char *err, size_t errlen);
/* Waits for every one to end: a gossip peer as long as it trains, a node LAUNCH_NODES_END_S
 * at most (then SIGTERM); a stop (a signal here) is passed on. Each end is said on out. 0 when
 * every one ended with status 0. Frees c. */
int launch_spawn_wait(launch_children *c, int gossip, const _Atomic int *stop, FILE *out);

/* The command line rank r runs on its host (malloc'd), for a shell: `cd DIR && exec BIN ...`. */
char *launch_spawn_command(const launch_plan *p, const run_options *o, const launch_request *rq,
                           int r, const char *bin, const char *cwd);

#endif
