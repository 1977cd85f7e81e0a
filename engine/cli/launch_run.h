/* frugal train under a batch system or MPI launcher: each rank does its part of the plan
 * (launch.h): rank 0 trains as the coordinator (or a gossip peer) and, in an OAR job, starts the
 * others (launch_spawn.h); the other ranks join it as `frugal join` would. Without a launcher,
 * run_train as it is. */
#ifndef FRUGAL_LAUNCH_RUN_H
#define FRUGAL_LAUNCH_RUN_H

#include "engine/cli/launch.h"
#include "engine/cli/run.h"
#include "engine/cluster/node.h"

/* What run_train returns (a node: what frugal join does); signals caught while it runs. */
int launch_run_train(run_options *o, const launch_request *rq);
/* node_run with signals caught (the first one leaves): frugal join, and a launched node. */
int launch_run_join(node_options *o);

#endif
