/* Which batch system or MPI launcher started this process, read from the environment it set:
 * Slurm's srun (SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST), Open MPI's mpirun
 * (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_SIZE), a PMI launcher (MPICH's or Intel's mpirun:
 * PMI_RANK, PMI_SIZE; PMIx: PMIX_RANK), or an OAR job ($OAR_NODEFILE: nothing starts a process
 * per host there, frugal starts them itself, engine/cli/launch_spawn.c). Pure: the variables
 * come through a function, so tests give them without touching the process's. */
#ifndef FRUGAL_LAUNCH_ENV_H
#define FRUGAL_LAUNCH_ENV_H

#include "engine/cli/hostlist.h"

#include <stddef.h>

typedef enum launch_kind { LAUNCH_NONE, LAUNCH_SLURM, LAUNCH_OPENMPI, LAUNCH_PMI, LAUNCH_OAR } launch_kind;

typedef struct launch_env {
    launch_kind kind;
    int rank, size;            /* OAR: 0, and one rank per host of the node file */
    int local_size;            /* ranks on this host (0: the launcher does not say) */
    char job_id[64];           /* "" when the launcher gives none */
    hostlist hosts;            /* the hosts, rank 0's first; empty where the launcher gives none
                                  (MPI: rank 0 publishes its address, launch.c) */
    char self[HOSTLIST_NAME];  /* this host as the list names it ("": not known) */
    int port;                  /* a port the launcher reserved for this step (srun
                                  --resv-ports), or 0 */
    char from[160];            /* the variables it was read from, for the record */
    char note[200];            /* why a launcher's variables were not taken as a launch (a
                                  Slurm batch script, not srun), or "" */
} launch_env;

typedef const char *(*launch_getenv_fn)(const char *name, void *ctx);

/* Fills e from the variables get returns (NULL: unset). 0 with e->kind LAUNCH_NONE when no
 * launcher started this process; -1 with err naming the variables when they are partial or
 * wrong (a rank outside the size, a node list that does not parse, an unreadable node file). */
int launch_env_detect(launch_env *e, launch_getenv_fn get, void *ctx, char *err, size_t errlen);
/* launch_env_detect on this process's environment (getenv). */
int launch_env_read(launch_env *e, char *err, size_t errlen);
void launch_env_free(launch_env *e);

/* "slurm", "openmpi", "pmi", "oar" or "none". */
const char *launch_env_kind_name(launch_kind k);

#endif
