/* The launcher that started this process, from the variables it set (launch_env.h). */
#include "engine/cli/launch_env.h"

#include "common/input_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LAUNCH_NODEFILE_MAX (1 << 20)

typedef struct reader {
    launch_getenv_fn get;
    void *ctx;
    char *err;
    size_t errlen;
} reader;

static const char *var(const reader *r, const char *name)
{
    const char *v = r->get(name, r->ctx);
    return v && *v ? v : NULL;
}

/* The first of the names that is set (its name in *which), or NULL. */
static const char *first_of(const reader *r, const char *const *names, const char **which)
{
    for (int i = 0; names[i]; i++)
        if (var(r, names[i]))
            return *which = names[i], var(r, names[i]);
    return NULL;
}

/* A whole number from min to max in the variable; -1 with the error when it is not. */
static int number(const reader *r, const char *name, long min, long max, int *out)
{
    const char *v = var(r, name);
    char *end;
    long n = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || n < min || n > max) {
        snprintf(r->err, r->errlen, "%s=%s: expected a whole number from %ld to %ld", name,
                 v ? v : "(unset)", min, max);
        return -1;
    }
    *out = (int)n;
    return 0;
}

/* rank and size from their variables, the rank within the size. */
static int rank_and_size(const reader *r, launch_env *e, const char *rank, const char *size)
{
    if (!var(r, size)) {
        snprintf(r->err, r->errlen, "%s is set but not %s: a partial launcher environment", rank,
                 size);
        return -1;
    }
    if (number(r, size, 1, 1 << 20, &e->size) || number(r, rank, 0, e->size - 1, &e->rank)) {
        size_t n = strlen(r->err);
        snprintf(r->err + n, r->errlen - n, " (%s=%s)", size, var(r, size));
        return -1;
    }
    snprintf(e->from, sizeof e->from, "%s, %s", rank, size);
    return 0;
}

static void append_from(launch_env *e, const char *name)
{
    size_t n = strlen(e->from);
    snprintf(e->from + n, sizeof e->from - n, ", %s", name);
}

static int detect_slurm(const reader *r, launch_env *e)
{
    e->kind = LAUNCH_SLURM;
    if (rank_and_size(r, e, "SLURM_PROCID", "SLURM_STEP_NUM_TASKS"))
        return -1;
    const char *which;
    const char *list = first_of(r, (const char *const[]){"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST",
                                                         "SLURM_NODELIST", NULL}, &which);
    if (!list) {
        snprintf(r->err, r->errlen, "SLURM_PROCID and SLURM_STEP_NUM_TASKS are set but no node "
                 "list (SLURM_STEP_NODELIST or SLURM_JOB_NODELIST)");
        return -1;
    }
    char why[200];
    if (hostlist_expand(&e->hosts, list, why, sizeof why)) {
        snprintf(r->err, r->errlen, "%s=%.200s: %s", which, list, why);
        return -1;
    }
    append_from(e, which);
    const char *self = var(r, "SLURMD_NODENAME");
    if (self && hostlist_find(&e->hosts, self) < 0) {
        snprintf(r->err, r->errlen, "SLURMD_NODENAME=%.100s is not in %s=%.200s", self, which, list);
        return -1;
    }
    snprintf(e->self, sizeof e->self, "%s", self ? self : e->hosts.n == 1 ? e->hosts.name[0] : "");
    e->local_size = (e->size + e->hosts.n - 1) / e->hosts.n;   /* srun's block distribution */
    const char *job = var(r, "SLURM_JOB_ID"), *step = var(r, "SLURM_STEP_ID");
    snprintf(e->job_id, sizeof e->job_id, "%.30s%s%.20s", job ? job : "", step ? "." : "",
             step ? step : "");
    const char *ports = var(r, "SLURM_STEP_RESV_PORTS");   /* "12000-12015" */
    if (ports) {
        e->port = atoi(ports);
        if (e->port < 1 || e->port > 65535) {
            snprintf(r->err, r->errlen, "SLURM_STEP_RESV_PORTS=%.60s: expected ports such as "
                     "12000-12015", ports);
            return -1;
        }
        append_from(e, "SLURM_STEP_RESV_PORTS");
    }
    return 0;
}

static int detect_mpi(const reader *r, launch_env *e, launch_kind kind, const char *hostname)
{
    e->kind = kind;
    snprintf(e->self, sizeof e->self, "%s", hostname);   /* MPI names no hosts: this one's own name */
    int open_mpi = kind == LAUNCH_OPENMPI;
    if (rank_and_size(r, e, open_mpi ? "OMPI_COMM_WORLD_RANK" : "PMI_RANK",
                      open_mpi ? "OMPI_COMM_WORLD_SIZE" : "PMI_SIZE"))
        return -1;
    const char *local = open_mpi ? "OMPI_COMM_WORLD_LOCAL_SIZE" : "MPI_LOCALNRANKS";
    if (var(r, local)) {
        if (number(r, local, 1, e->size, &e->local_size))
            return -1;
        append_from(e, local);
    }
    const char *which, *job = first_of(r, (const char *const[]){"OMPI_MCA_ess_base_jobid",
                                                                "PMIX_NAMESPACE", "PMI_JOBID",
                                                                NULL}, &which);
    snprintf(e->job_id, sizeof e->job_id, "%.63s", job ? job : "");
    return 0;
}

/* OAR starts the job's script on its first host, once: this process is rank 0 and starts one
 * on each other host of the node file. */
static int detect_oar(const reader *r, launch_env *e, const char *hostname)
{
    e->kind = LAUNCH_OAR;
    const char *which;
    const char *path = first_of(r, (const char *const[]){"OAR_NODEFILE", "OAR_NODE_FILE",
                                                         "OAR_FILE_NODES", NULL}, &which);
    char why[300] = "no host in it";
    size_t len;
    char *text = input_read_all(path, LAUNCH_NODEFILE_MAX, "OAR node file", &len, why, sizeof why);
    if (!text || hostlist_parse_lines(&e->hosts, text, len, why, sizeof why) || !e->hosts.n) {
        snprintf(r->err, r->errlen, "%s=%.300s: %s", which, path, why);
        free(text);
        return -1;
    }
    free(text);
    snprintf(e->from, sizeof e->from, "%s", which);
    int at = hostlist_find(&e->hosts, hostname);
    char shortname[HOSTLIST_NAME];
    snprintf(shortname, sizeof shortname, "%s", hostname);
    shortname[strcspn(shortname, ".")] = 0;
    for (int i = 0; at < 0 && i < e->hosts.n; i++)   /* node files may hold the long names */
        if (!strncmp(e->hosts.name[i], shortname, strlen(shortname)) &&
            (e->hosts.name[i][strlen(shortname)] == '.' || !e->hosts.name[i][strlen(shortname)]))
            at = i;
    if (at < 0) {
        snprintf(e->note, sizeof e->note, "this host (%.60s) is not in the node file: taken as "
                 "its first, where OAR starts a job's script", hostname);
        at = 0;
    }
    if (at > 0) {   /* this host first: it is rank 0 */
        char name[HOSTLIST_NAME];
        int count = e->hosts.count[at];
        memcpy(name, e->hosts.name[at], sizeof name);
        memmove(e->hosts.name + 1, e->hosts.name, (size_t)at * sizeof *e->hosts.name);
        memmove(e->hosts.count + 1, e->hosts.count, (size_t)at * sizeof *e->hosts.count);
        memcpy(e->hosts.name[0], name, sizeof name);
        e->hosts.count[0] = count;
    }
    snprintf(e->self, sizeof e->self, "%s", e->hosts.name[0]);
    e->rank = 0, e->size = e->hosts.n, e->local_size = 1;
    const char *job = first_of(r, (const char *const[]){"OAR_JOB_ID", "OAR_JOBID", NULL}, &which);
    snprintf(e->job_id, sizeof e->job_id, "%.63s", job ? job : "");
    return 0;
}

static int detect(const reader *r, launch_env *e, const char *hostname)
{
    if (var(r, "OMPI_COMM_WORLD_RANK"))   /* mpirun's, even inside a Slurm allocation */
        return detect_mpi(r, e, LAUNCH_OPENMPI, hostname);
    const char *pmi_rank = var(r, "PMI_RANK"), *procid = var(r, "SLURM_PROCID");
    /* srun sets PMI_RANK too (--mpi=pmi2), to the same rank */
    if (procid && var(r, "SLURM_STEP_NUM_TASKS") && (!pmi_rank || !strcmp(pmi_rank, procid)))
        return detect_slurm(r, e);
    if (pmi_rank)
        return detect_mpi(r, e, LAUNCH_PMI, hostname);
    if (var(r, "OAR_NODEFILE") || var(r, "OAR_NODE_FILE") || var(r, "OAR_FILE_NODES"))
        return detect_oar(r, e, hostname);
    if (procid && var(r, "SLURM_NTASKS") && !var(r, "SLURM_STEP_NUM_TASKS")) {
        /* a Slurm batch script itself, not a task srun started */
        snprintf(e->note, sizeof e->note, "in Slurm job %.30s but not started by srun (no "
                 "SLURM_STEP_NUM_TASKS): one machine; `srun frugal train JOB` starts one per "
                 "task", var(r, "SLURM_JOB_ID") ? var(r, "SLURM_JOB_ID") : "?");
    }
    return 0;
}

int launch_env_detect(launch_env *e, launch_getenv_fn get, void *ctx, char *err, size_t errlen)
{
    *e = (launch_env){0};
    reader r = {get, ctx, err, errlen};
    char hostname[HOSTLIST_NAME] = "";
    const char *h = var(&r, "FRUGAL_TEST_HOSTNAME");   /* only a test's reader gives it */
    if (h)
        snprintf(hostname, sizeof hostname, "%s", h);
    else if (gethostname(hostname, sizeof hostname - 1))
        hostname[0] = 0;
    if (detect(&r, e, hostname)) {
        launch_env_free(e);
        e->kind = LAUNCH_NONE;
        return -1;
    }
    return 0;
}

static const char *from_process(const char *name, void *ctx)
{
    (void)ctx;
    return strcmp(name, "FRUGAL_TEST_HOSTNAME") ? getenv(name) : NULL;
}

int launch_env_read(launch_env *e, char *err, size_t errlen)
{
    return launch_env_detect(e, from_process, NULL, err, errlen);
}

void launch_env_free(launch_env *e)
{
    hostlist_free(&e->hosts);
}

const char *launch_env_kind_name(launch_kind k)
{
    static const char *const names[] = {"none", "slurm", "openmpi", "pmi", "oar"};
    return names[k];
}
