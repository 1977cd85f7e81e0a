/* Starting a cluster run from a batch system or an MPI launcher (engine/cli/launch*.c): the
 * launchers' variables and files as they write them, partial or wrong ones, and whole runs with
 * the environments emulated (every rank a process here, every host a loopback address). */
#include "engine/cli/hostlist.h"
#include "engine/cli/launch.h"
#include "frugal_cli.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

static char out[1 << 16];

/* ---- the decoders ---- */

static void check_expands(const char *text, const char *want)
{
    hostlist h;
    char err[300], got[2048] = "";
    int rc = hostlist_expand(&h, text, err, sizeof err);
    for (int i = 0; !rc && i < h.n; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " " : "", h.name[i]);
    CHECKF(rc == 0 && !strcmp(got, want), "%s: got '%s' (%s), want '%s'", text, got,
           rc ? err : "", want);
    if (!rc)
        hostlist_free(&h);
}

static void check_refused(const char *text, const char *why)
{
    hostlist h;
    char err[300] = "";
    int rc = hostlist_expand(&h, text, err, sizeof err);
    CHECKF(rc == -1 && strstr(err, why), "%s: rc %d, '%s' (want '%s')", text, rc, err, why);
    if (!rc)
        hostlist_free(&h);
}

TEST(launch_host_lists_expand_as_slurm_writes_them)
{
    check_expands("node[01-03,7]", "node01 node02 node03 node7");
    check_expands("node[01-03,7],gpu-a[1-2]b[0-1]",
                  "node01 node02 node03 node7 gpu-a1b0 gpu-a1b1 gpu-a2b0 gpu-a2b1");
    check_expands("127.0.0.[1-3]", "127.0.0.1 127.0.0.2 127.0.0.3");
    check_expands("login1", "login1");
    check_expands("n[098-101]", "n098 n099 n100 n101");
    check_expands("a,b,a", "a b");   /* each host once */
    check_refused("node[3-1]", "not a range");
    check_refused("node[1-", "without its ']'");
    check_refused("node[a]", "not a range");
    check_refused("node]", "do not pair");
    check_refused("x,,y", "empty name");
    check_refused(",x", "empty name");
    check_refused("a[1-2[3]]", "do not pair");
    check_refused("a b", "not a host name");
    check_refused("n[0-99999]", "not a range");
    check_refused("a[0-99]b[0-99]", "more than 4096 hosts");

    hostlist h;
    char err[300];
    const char *file = "h1.grid5000.fr\nh1.grid5000.fr\n\nh2.grid5000.fr \r\nh1.grid5000.fr\n";
    CHECK(hostlist_parse_lines(&h, file, strlen(file), err, sizeof err) == 0);
    CHECK(h.n == 2 && !strcmp(h.name[0], "h1.grid5000.fr") && h.count[0] == 3 &&
          !strcmp(h.name[1], "h2.grid5000.fr") && h.count[1] == 1);
    hostlist_free(&h);
    CHECK(hostlist_parse_lines(&h, "ok\nb@d\n", 7, err, sizeof err) == -1 &&
          strstr(err, "line 2") && strstr(err, "b@d"));

    char addr[300];
    CHECK(launch_address_parse("node01:40123\n", 13, addr, sizeof addr, err, sizeof err) == 0 &&
          !strcmp(addr, "node01:40123"));
    CHECK(launch_address_parse("node01:0\n", 9, addr, sizeof addr, err, sizeof err) == -1);
    CHECK(launch_address_parse("node01", 6, addr, sizeof addr, err, sizeof err) == -1);
    CHECK(launch_address_parse("no de:1", 7, addr, sizeof addr, err, sizeof err) == -1);
    CHECK(launch_address_parse("a:123456", 8, addr, sizeof addr, err, sizeof err) == -1);
}

/* ---- the variables, as a test gives them ---- */

static const char *from_list(const char *name, void *ctx)
{
    size_t n = strlen(name);
    for (const char *const *v = ctx; *v; v++)
        if (!strncmp(*v, name, n) && (*v)[n] == '=')
            return *v + n + 1;
    return NULL;
}

static int detect(launch_env *e, const char *const *vars, char *err, size_t errlen)
{
    err[0] = 0;
    return launch_env_detect(e, from_list, (void *)vars, err, errlen);
}

TEST(launch_environment_of_each_launcher_is_read)
{
    launch_env e;
    char err[400];
    CHECK(detect(&e, (const char *const[]){"HOME=/root", NULL}, err, sizeof err) == 0 &&
          e.kind == LAUNCH_NONE && !e.note[0]);

    CHECKF(detect(&e, (const char *const[]){"SLURM_PROCID=1", "SLURM_STEP_NUM_TASKS=3",
                                            "SLURM_STEP_NODELIST=node[1-3]", "SLURM_JOB_NODELIST=node[1-4]",
                                            "SLURMD_NODENAME=node2", "SLURM_JOB_ID=77",
                                            "SLURM_STEP_ID=0", "SLURM_STEP_RESV_PORTS=12000-12003",
                                            NULL}, err, sizeof err) == 0, "%s", err);
    CHECKF(e.kind == LAUNCH_SLURM && e.rank == 1 && e.size == 3 && e.hosts.n == 3 &&
           !strcmp(e.hosts.name[0], "node1") && !strcmp(e.self, "node2") &&
           !strcmp(e.job_id, "77.0") && e.port == 12000 && e.local_size == 1 &&
           strstr(e.from, "SLURM_STEP_NODELIST"), "%s %d/%d %s", e.from, e.rank, e.size, e.job_id);
    launch_env_free(&e);

    /* a Slurm batch script itself: one machine, said why */
    CHECK(detect(&e, (const char *const[]){"SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_JOB_ID=9",
                                           "SLURM_JOB_NODELIST=n[1-4]", NULL}, err, sizeof err) == 0);
    CHECKF(e.kind == LAUNCH_NONE && strstr(e.note, "not started by srun"), "%s", e.note);

    /* mpirun inside a Slurm allocation: its ranks, not the daemons' SLURM_PROCID */
    CHECK(detect(&e, (const char *const[]){"SLURM_PROCID=0", "SLURM_STEP_NUM_TASKS=2",
                                           "SLURM_STEP_NODELIST=n[1-2]", "OMPI_COMM_WORLD_RANK=3",
                                           "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_SIZE=2",
                                           "OMPI_MCA_ess_base_jobid=123", "FRUGAL_TEST_HOSTNAME=n2",
                                           NULL}, err, sizeof err) == 0);
    CHECK(e.kind == LAUNCH_OPENMPI && e.rank == 3 && e.size == 4 && e.local_size == 2 &&
          e.hosts.n == 0 && !strcmp(e.job_id, "123") && !strcmp(e.self, "n2"));

    CHECK(detect(&e, (const char *const[]){"PMI_RANK=1", "PMI_SIZE=2", "MPI_LOCALNRANKS=2", NULL},
                 err, sizeof err) == 0);
    CHECK(e.kind == LAUNCH_PMI && e.rank == 1 && e.size == 2 && e.local_size == 2);

    /* OAR: this host first (rank 0), a host per line once per core */
    const char *nodes = test_tmp("oar-nodes");
    test_write_text(nodes, "127.0.0.1\n127.0.0.1\n127.0.0.2\n127.0.0.2\n127.0.0.3\n");
    char var[800];
    snprintf(var, sizeof var, "OAR_NODEFILE=%s", nodes);
    CHECKF(detect(&e, (const char *const[]){var, "OAR_JOB_ID=4242", "FRUGAL_TEST_HOSTNAME=127.0.0.2",
                                            NULL}, err, sizeof err) == 0, "%s", err);
    CHECK(e.kind == LAUNCH_OAR && e.rank == 0 && e.size == 3 && !strcmp(e.self, "127.0.0.2") &&
          !strcmp(e.hosts.name[0], "127.0.0.2") && !strcmp(e.hosts.name[1], "127.0.0.1") &&
          e.hosts.count[1] == 2 && !strcmp(e.job_id, "4242") && !e.note[0]);
    launch_env_free(&e);
    CHECK(detect(&e, (const char *const[]){var, "FRUGAL_TEST_HOSTNAME=elsewhere", NULL}, err,
                 sizeof err) == 0);
    CHECKF(!strcmp(e.self, "127.0.0.1") && strstr(e.note, "not in the node file"), "%s", e.note);
    launch_env_free(&e);
}

static void check_wrong(const char *const *vars, const char *want)
{
    launch_env e;
    char err[400];
    int rc = detect(&e, vars, err, sizeof err);
    CHECKF(rc == -1 && strstr(err, want), "rc %d: '%s' (want '%s')", rc, err, want);
    if (!rc)
        launch_env_free(&e);
}

TEST(launch_environment_partial_or_wrong_names_the_variable)
{
    check_wrong((const char *const[]){"SLURM_PROCID=0", "SLURM_STEP_NUM_TASKS=2", NULL},
                "no node list (SLURM_STEP_NODELIST");
    check_wrong((const char *const[]){"SLURM_PROCID=3", "SLURM_STEP_NUM_TASKS=3",
                                      "SLURM_STEP_NODELIST=n[1-3]", NULL}, "SLURM_PROCID=3");
    check_wrong((const char *const[]){"SLURM_PROCID=0", "SLURM_STEP_NUM_TASKS=2",
                                      "SLURM_STEP_NODELIST=n[1-", NULL}, "SLURM_STEP_NODELIST=n[1-:");
    check_wrong((const char *const[]){"SLURM_PROCID=0", "SLURM_STEP_NUM_TASKS=2",
                                      "SLURM_STEP_NODELIST=n[1-2]", "SLURMD_NODENAME=m7", NULL},
                "SLURMD_NODENAME=m7 is not in");
    check_wrong((const char *const[]){"SLURM_PROCID=0", "SLURM_STEP_NUM_TASKS=2",
                                      "SLURM_STEP_NODELIST=n[1-2]", "SLURM_STEP_RESV_PORTS=x", NULL},
                "SLURM_STEP_RESV_PORTS=x");
    check_wrong((const char *const[]){"OMPI_COMM_WORLD_RANK=0", NULL},
                "OMPI_COMM_WORLD_RANK is set but not OMPI_COMM_WORLD_SIZE");
    check_wrong((const char *const[]){"PMI_RANK=0", "PMI_SIZE=zero", NULL}, "PMI_SIZE=zero");
    check_wrong((const char *const[]){"OAR_NODEFILE=/nonexistent/nodes", NULL},
                "OAR_NODEFILE=/nonexistent/nodes");
    const char *empty = test_tmp("oar-empty");
    test_write_text(empty, "\n\n");
    char var[800];
    snprintf(var, sizeof var, "OAR_NODEFILE=%s", empty);
    check_wrong((const char *const[]){var, NULL}, "no host in it");
}

/* ---- the plan: key and address through the shared folder ---- */

static int plan(launch_plan *p, const launch_request *rq, const char *const *vars, char *err,
                size_t errlen)
{
    static char job[760];
    snprintf(job, sizeof job, "%s", test_tmp("plan.cfg"));
    test_write_text(job, "[job]\nepochs = 1\n[data]\ntrain_images = a.gz\ntrain_labels = b.gz\n"
                         "[conv]\nfilters = 2\nsize = 3\n[relu]\n[flatten]\n[dense]\noutputs = 10\n"
                         "[softmax_xent]\n");
    FILE *sink = fopen("/dev/null", "w");
    err[0] = 0;
    int rc = launch_prepare(p, rq, from_list, (void *)vars, job, NULL, sink, err, errlen);
    fclose(sink);
    return rc;
}

/* mpirun names no hosts: rank 0 makes the key and writes its address in the shared folder,
 * where the others find both; an earlier run's files are not taken for this one's. */
TEST(launch_mpi_rank_0_publishes_the_key_and_its_address)
{
    const char *dir = test_tmp("rendezvous");
    launch_request rq = {.rendezvous = dir, .port = 40001, .wait_s = 0.5};
    const char *rank0[] = {"PMI_RANK=0", "PMI_SIZE=2", "PMI_JOBID=j1", "FRUGAL_TEST_HOSTNAME=127.0.0.5", NULL};
    const char *rank1[] = {"PMI_RANK=1", "PMI_SIZE=2", "PMI_JOBID=j1", "FRUGAL_TEST_HOSTNAME=127.0.0.6", NULL};
    launch_plan p0, p1;
    char err[1200];
    CHECKF(plan(&p0, &rq, rank0, err, sizeof err) == 0, "%s", err);
    CHECKF(p0.role == LAUNCH_COORDINATOR && !strcmp(p0.listen, "127.0.0.5:40001") &&
           p0.key_made && strstr(p0.key_path, "/rendezvous/pmi-j1.key") && p0.wait_for == 1,
           "%s %s", p0.listen, p0.key_path);
    struct stat st;
    CHECK(stat(dir, &st) == 0 && (st.st_mode & 077) == 0 && stat(p0.key_path, &st) == 0 &&
          (st.st_mode & 077) == 0);
    CHECKF(plan(&p1, &rq, rank1, err, sizeof err) == 0, "%s", err);
    CHECKF(p1.role == LAUNCH_NODE && !strcmp(p1.coordinator, "127.0.0.5:40001") &&
           !strcmp(p1.key_path, p0.key_path), "%s %s", p1.coordinator, p1.key_path);
    CHECK(p0.json && strstr(p0.json, "\"launcher\": \"pmi\"") && strstr(p0.json, "\"role\": \"coordinator\"") &&
          strstr(p0.json, "\"key\": \"made by rank 0\""));
    launch_finish(&p1);

    /* an hour-old address: an earlier run's; rank 1 waits, then says where it looked */
    struct utimbuf old = {time(NULL) - 3600, time(NULL) - 3600};
    CHECK(utime(p0.address_path, &old) == 0);
    CHECK(plan(&p1, &rq, rank1, err, sizeof err) == -1);
    CHECKF(strstr(err, "rank 1 of 2: no address from rank 0") && strstr(err, "pmi-j1.address") &&
           strstr(err, "file system every host shares"), "%s", err);
    launch_finish(&p1);
    char key[900];
    snprintf(key, sizeof key, "%s", p0.key_path);
    launch_finish(&p0);
    CHECK(access(key, F_OK) != 0 && access(dir, F_OK) != 0);   /* rank 0 removes what it made */

    /* a folder others may write in is refused */
    CHECK(mkdir(dir, 0700) == 0 && chmod(dir, 0777) == 0);
    CHECK(plan(&p0, &rq, rank0, err, sizeof err) == -1 && strstr(err, "writable by others"));
    launch_finish(&p0);
    CHECK(chmod(dir, 0700) == 0);

    /* no --port: one from the job id, below the ports Linux hands outgoing connections */
    launch_request drawn = {.rendezvous = dir, .wait_s = 0.5};
    CHECKF(plan(&p0, &drawn, rank0, err, sizeof err) == 0, "%s", err);
    CHECKF(p0.port >= 20000 && p0.port < 32000 && !strcmp(p0.port_from, "the job id"), "%d %s",
           p0.port, p0.port_from);
    launch_finish(&p0);
}

/* ---- whole runs ---- */

/* The cluster tests' job: DAHL's network, a slice of Fashion-MNIST; extra: more lines. */
static const char *job(const char *name, const char *extra)
{
    static char paths[4][760];
    static int next;
    char *path = paths[next++ % 4];
    snprintf(path, 760, "%s", test_tmp(name));
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "[job]\nepochs = 2\nbatch = 32\nseed = 7\n"
                   "[data]\nformat = idx\n"
                   "train_images = /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz\n"
                   "train_labels = /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz\n"
                   "limit = 1536\n"
                   "[conv]\nfilters = 4\nsize = 3\n[relu]\n[maxpool]\nsize = 2\n[flatten]\n"
                   "[dense]\noutputs = 10\n[softmax_xent]\n"
                   "[optimizer]\ntype = sgd\nlr = 0.01\nmomentum = 0.9\n"
                   "[execution]\nworkers = 1\ngrain = 4\ndevices = cpu\n"
                   "[energy]\nbaseline_seconds = 0\n[placement]\nall_nodes = on\n%s", extra);
        fclose(f);
    }
    return path;
}

/* Ranks 0..n-1 of `frugal train JOB` (the same command on each), each with the variables
 * vars(rank) gives; their output in out; 0 when every one ended with 0. */
typedef void (*rank_vars)(int rank, char vars[8][200]);

static int run_ranks(const char *name, int n, rank_vars vars, const char *const *args)
{
    pid_t pid[4];
    static char env[4][8][200];
    for (int r = 0; r < n; r++) {
        memset(env[r], 0, sizeof env[r]);
        vars(r, env[r]);
        const char *e[10] = {0};
        for (int i = 0; i < 8 && env[r][i][0]; i++)
            e[i] = env[r][i];
        char log[760];
        snprintf(log, sizeof log, "%s/%s-%d.log", test_tmpdir(), name, r);
        pid[r] = frugal_spawn(&(frugal_call){(uid_t)-1, e, 0}, log, args);
    }
    int ok = 1;
    out[0] = 0;
    for (int r = 0; r < n; r++) {
        int status = 0;
        waitpid(pid[r], &status, 0);
        ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
        char path[760], log[8192];
        snprintf(path, sizeof path, "%s/%s-%d.log", test_tmpdir(), name, r);
        snprintf(out + strlen(out), sizeof out - strlen(out), "\n--- rank %d (status %d) ---\n%s",
                 r, status, test_read_text(path, log, sizeof log));
    }
    return ok ? 0 : 1;
}

/* The model.bin of runs a and b (test_tmp names), byte for byte. */
static void same_model(const char *a, const char *b)
{
    static char da[1 << 20], db[1 << 20];
    char pa[800], pb[800];
    snprintf(pa, sizeof pa, "%s/model.bin", test_tmp(a));
    snprintf(pb, sizeof pb, "%s/model.bin", test_tmp(b));
    FILE *fa = fopen(pa, "rb"), *fb = fopen(pb, "rb");
    size_t na = fa ? fread(da, 1, sizeof da, fa) : 0, nb = fb ? fread(db, 1, sizeof db, fb) : 0;
    CHECKF(na > 0 && na == nb && !memcmp(da, db, na), "%s and %s differ (%zu and %zu bytes)", pa,
           pb, na, nb);
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
}

/* Run `name`'s summary.json (a test_tmp name, with its sub-folder if any), in buf. */
static char *summary_of(const char *name, char *buf, size_t n)
{
    char path[800];
    snprintf(path, sizeof path, "%s/summary.json", test_tmp(name));
    return test_read_text(path, buf, n);
}

static void single(const char *jobpath, const char *name)
{
    char output[800];
    snprintf(output, sizeof output, "job.output=%s", test_tmp(name));
    CHECKF(FRUGAL(out, "train", jobpath, "--set", output, "--overwrite") == 0, "%s", out);
}

static char slurm_port[16], rendezvous[800], output_set[800];
static int slurm_tasks;   /* a task per host 127.0.0.1.. (the step's id is their number) */

static void slurm_vars(int r, char v[8][200])
{
    snprintf(v[0], 200, "SLURM_PROCID=%d", r);
    snprintf(v[1], 200, "SLURM_STEP_NUM_TASKS=%d", slurm_tasks);
    snprintf(v[2], 200, "SLURM_STEP_NODELIST=127.0.0.[1-%d]", slurm_tasks);
    snprintf(v[3], 200, "SLURMD_NODENAME=127.0.0.%d", r + 1);
    snprintf(v[4], 200, "SLURM_JOB_ID=%d", getpid());
    snprintf(v[5], 200, "SLURM_STEP_ID=%d", slurm_tasks);
}

/* srun -N 3 frugal train JOB: rank 0 coordinates on its host, the others join it with the key
 * it made in the shared folder; the weights are one machine's. */
TEST(launch_slurm_ranks_train_as_one_machine)
{
    const char *j = job("launch-sync.cfg", "");
    single(j, "launch-single");
    snprintf(slurm_port, sizeof slurm_port, "%d", test_port(20));
    snprintf(rendezvous, sizeof rendezvous, "%s", test_tmp("slurm-rendezvous"));
    snprintf(output_set, sizeof output_set, "job.output=%s", test_tmp("launch-slurm"));
    slurm_tasks = 3;
    int rc = run_ranks("slurm", 3, slurm_vars,
                       (const char *const[]){"train", j, "--set", output_set, "--port", slurm_port,
                                             "--rendezvous", rendezvous, "--overwrite", NULL});
    CHECKF(rc == 0, "%s", out);
    CHECKF(strstr(out, "launch: slurm (SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST): "
                       "rank 0 of 3 on 127.0.0.1; hosts 127.0.0.1, 127.0.0.2, 127.0.0.3") &&
           strstr(out, "launch: the coordinator, listening at 127.0.0.1:") &&
           strstr(out, "waiting for 2 nodes") && strstr(out, "launch: a node of the coordinator at 127.0.0.1:") &&
           strstr(out, "launch: key made by this rank: ") && strstr(out, "chunks computed"), "%s", out);
    same_model("launch-single", "launch-slurm");
    char a[900], summary[1 << 15];
    summary_of("launch-slurm", summary, sizeof summary);
    CHECKF(strstr(summary, "\"launch\": {\"launcher\": \"slurm\"") &&
           strstr(summary, "\"used\": true, \"rank\": 0, \"ranks\": 3") &&
           strstr(summary, "\"hosts\": [\"127.0.0.1\", \"127.0.0.2\", \"127.0.0.3\"]") &&
           strstr(summary, "\"role\": \"coordinator\"") && strstr(summary, "\"port_from\": \"--port\"") &&
           strstr(summary, "\"weights_as_one_machine\": true"), "%s", summary);
    /* the key rank 0 made (where it said) is gone with the run */
    const char *said = strstr(out, "launch: key made by this rank: ");
    CHECK(said && sscanf(said + strlen("launch: key made by this rank: "), "%899s", a) == 1);
    CHECKF(strstr(a, "/slurm-rendezvous/slurm-") && access(a, F_OK) != 0, "%s is left", a);
}

/* Machines' own identities in a launched run: each node proves the identity --identity names
 * (a file on its own host), rank 0 admits those its --allow file lists; without a launcher
 * --identity on frugal train is refused. */
TEST(launch_nodes_prove_their_identities)
{
    const char *j = job("launch-id.cfg", "");
    char id[800], pub[820], line[400], allow[800], port[16], o[800], dir[800];
    snprintf(id, sizeof id, "%s", test_tmp("launch-node.id"));
    unlink(id);
    snprintf(pub, sizeof pub, "%s.pub", id);
    unlink(pub);
    CHECKF(FRUGAL(out, "keygen", "--identity", id) == 0, "%s", out);
    char *space = strrchr(test_read_text(pub, line, sizeof line), ' ');
    CHECKF(space != NULL, "%s", line);
    if (!space)
        return;
    snprintf(space, sizeof line - (size_t)(space - line), " rack-2-node\n");
    snprintf(allow, sizeof allow, "%s", test_tmp("launch-allow"));
    test_write_text(allow, "%s", line);
    snprintf(port, sizeof port, "%d", test_port(28));
    snprintf(o, sizeof o, "job.output=%s", test_tmp("launch-id"));
    snprintf(dir, sizeof dir, "%s", test_tmp("id-rendezvous"));
    slurm_tasks = 2;
    int rc = run_ranks("ids", 2, slurm_vars,
                       (const char *const[]){"train", j, "--set", o, "--port", port, "--rendezvous",
                                             dir, "--identity", id, "--allow", allow, "--overwrite",
                                             NULL});
    CHECKF(rc == 0 && strstr(out, "launch: this node proves its identity ") &&
           strstr(out, "rack-2-node [id ") && strstr(out, "chunks computed"), "%s", out);
    char summary[1 << 15];
    CHECKF(strstr(summary_of("launch-id", summary, sizeof summary), "\"identities\": true"), "%s",
           summary);
    rc = FRUGAL(out, "train", j, "--set", o, "--identity", id);
    CHECKF(rc == 1 && strstr(out, "--identity is for the nodes of a launched run (no launcher)"),
           "%d: %s", rc, out);
}

static void openmpi_vars(int r, char v[8][200])
{
    snprintf(v[0], 200, "OMPI_COMM_WORLD_RANK=%d", r);
    snprintf(v[1], 200, "OMPI_COMM_WORLD_SIZE=2");
    snprintf(v[2], 200, "OMPI_COMM_WORLD_LOCAL_SIZE=2");
}

/* mpirun -np 2 frugal train JOB --key K on one host: periodic averaging over loopback, with the
 * key given (no shared folder used). */
TEST(launch_openmpi_ranks_average_with_the_key_given)
{
    const char *j = job("launch-average.cfg", "[cluster]\nmode = average\nsync_every = 4\n");
    char port[16], key[800];
    snprintf(port, sizeof port, "%d", test_port(21));
    snprintf(key, sizeof key, "%s", test_tmp("launch.key"));
    unlink(key);
    CHECKF(FRUGAL(out, "keygen", key) == 0, "%s", out);
    snprintf(output_set, sizeof output_set, "job.output=%s", test_tmp("launch-openmpi"));
    int rc = run_ranks("openmpi", 2, openmpi_vars,
                       (const char *const[]){"train", j, "--set", output_set, "--port", port, "--key",
                                             key, "--launcher", "auto", "--overwrite", NULL});
    CHECKF(rc == 0, "%s", out);
    CHECKF(strstr(out, "launch: openmpi (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, "
                       "OMPI_COMM_WORLD_LOCAL_SIZE): rank 1 of 2") &&
           strstr(out, "launch: key given: ") && strstr(out, "training finished"), "%s", out);
    char summary[1 << 15];
    summary_of("launch-openmpi", summary, sizeof summary);
    CHECKF(strstr(summary, "\"launcher\": \"openmpi\"") && strstr(summary, "\"key\": \"--key\"") &&
           strstr(summary, "\"mode\": \"average\""), "%s", summary);
    CHECK(access(".frugal-launch", F_OK) != 0);   /* nothing made where the tests run */
}

static void pmi_vars(int r, char v[8][200])
{
    snprintf(v[0], 200, "PMI_RANK=%d", r);
    snprintf(v[1], 200, "PMI_SIZE=2");
    snprintf(v[2], 200, "MPI_LOCALNRANKS=2");
    snprintf(v[3], 200, "PMI_JOBID=%d", getpid());
}

/* A PMI launcher (MPICH's mpiexec) and a gossip job: every rank a peer, each in its own output
 * folder, rank 0 introducing the others. */
TEST(launch_pmi_ranks_are_gossip_peers)
{
    const char *j = job("launch-gossip.cfg", "[cluster]\nmode = gossip\n[gossip]\nevery = 2\npeers = 2\n");
    char port[16];
    snprintf(port, sizeof port, "%d", test_port(22));   /* and 23: rank 1's */
    snprintf(rendezvous, sizeof rendezvous, "%s", test_tmp("pmi-rendezvous"));
    snprintf(output_set, sizeof output_set, "job.output=%s", test_tmp("launch-gossip"));
    int rc = run_ranks("pmi", 2, pmi_vars,
                       (const char *const[]){"train", j, "--set", output_set, "--port", port,
                                             "--rendezvous", rendezvous, "--overwrite", NULL});
    CHECKF(rc == 0, "%s", out);
    char want[200];
    snprintf(want, sizeof want, "launch: a gossip peer at 127.0.0.1:%d, introduced by rank 0 at "
             "127.0.0.1:%d", test_port(23), test_port(22));
    CHECKF(strstr(out, want), "%s\n%s", want, out);
    const char *avg = strstr(out, "gossip: the final model is the average of 2 peers' models");
    CHECKF(avg && strstr(avg + 1, "gossip: the final model is the average of 2 peers' models"), "%s", out);
    for (int r = 0; r < 2; r++) {
        char peer[64], summary[1 << 15];
        snprintf(peer, sizeof peer, "launch-gossip/peer-%d", r);
        summary_of(peer, summary, sizeof summary);
        CHECKF(strstr(summary, "\"launcher\": \"pmi\"") && strstr(summary, "\"role\": \"peer\"") &&
               strstr(summary, "\"gossip\""), "%s: %s", peer, summary);
    }
}

/* frugal train inside an OAR job: this host is rank 0 and starts `frugal join` on the node
 * file's other hosts through oarsh (a stand-in here that runs the command on this machine). */
TEST(launch_oar_job_starts_the_other_hosts)
{
    const char *j = job("launch-oar.cfg", "");
    single(j, "launch-oar-single");
    const char *nodes = test_tmp("oar-nodefile"), *rsh = test_tmp("fake-oarsh");
    test_write_text(nodes, "127.0.0.1\n127.0.0.1\n127.0.0.2\n127.0.0.2\n");
    test_write_text(rsh, "#!/bin/sh\n# oarsh HOST COMMAND: the command, here\nshift\nexec /bin/sh -c \"$*\"\n");
    CHECK(chmod(rsh, 0755) == 0);
    static char v_nodes[800], v_rsh[800], v_job[64];
    snprintf(v_nodes, sizeof v_nodes, "OAR_NODEFILE=%s", nodes);
    snprintf(v_rsh, sizeof v_rsh, "FRUGAL_LAUNCH_RSH=%s", rsh);
    snprintf(v_job, sizeof v_job, "OAR_JOB_ID=%d", getpid());
    char port[16], output[800], dir[800];
    snprintf(port, sizeof port, "%d", test_port(24));
    snprintf(output, sizeof output, "job.output=%s", test_tmp("launch-oar"));
    snprintf(dir, sizeof dir, "%s", test_tmp("oar-rendezvous"));
    int rc = frugal_run(&(frugal_call){(uid_t)-1, (const char *const[]){v_nodes, v_rsh, v_job, NULL}, 0},
                        out, sizeof out,
                        (const char *const[]){"train", j, "--set", output, "--port", port,
                                              "--rendezvous", dir, "--workers", "1", "--overwrite", NULL});
    CHECKF(rc == 0, "%s", out);
    CHECKF(strstr(out, "launch: oar (OAR_NODEFILE): rank 0 of 2 on 127.0.0.1; hosts 127.0.0.1, 127.0.0.2") &&
           strstr(out, "launch: started rank 1 on 127.0.0.2: cd ") && strstr(out, " join 127.0.0.1:") &&
           strstr(out, " --workers 1") && strstr(out, "launch: rank 1 ended: 0") &&
           strstr(out, "chunks computed") &&
           strstr(out, "not in the node file"), "%s", out);
    CHECKF(!strstr(out, "--key frugal-key"), "%s", out);   /* the key's path, never the key */
    same_model("launch-oar-single", "launch-oar");
    char a[800], summary[1 << 15];
    summary_of("launch-oar", summary, sizeof summary);
    CHECKF(strstr(summary, "\"launcher\": \"oar\"") && strstr(summary, "\"FRUGAL_LAUNCH_RSH\""),
           "%s", summary);

    /* a gossip job: the other host is started as a peer, introduced by this one */
    const char *g = job("launch-oar-gossip.cfg", "[cluster]\nmode = gossip\n[gossip]\nevery = 2\npeers = 2\n");
    snprintf(output, sizeof output, "job.output=%s", test_tmp("launch-oar-gossip"));
    rc = frugal_run(&(frugal_call){(uid_t)-1, (const char *const[]){v_nodes, v_rsh, v_job, NULL}, 0},
                    out, sizeof out,
                    (const char *const[]){"train", g, "--set", output, "--port", port,
                                          "--rendezvous", dir, "--overwrite", NULL});
    char want[300];
    snprintf(want, sizeof want, " train %s --launcher none --listen 127.0.0.2:%d --advertise "
             "127.0.0.2:%d --peer 127.0.0.1:%s --key ", g, test_port(24) + 1, test_port(24) + 1, port);
    CHECKF(rc == 0 && strstr(out, want) && strstr(out, "launch: rank 1 ended: 0") &&
           strstr(out, "gossip: the final model is the average of 2 peers' models"), "%s\n%s", want, out);
    snprintf(a, sizeof a, "%s/peer-1/model.bin", test_tmp("launch-oar-gossip"));
    CHECKF(access(a, F_OK) == 0, "%s is missing", a);
}

/* Wrong or partial environments stop at once with the variable named; a rank whose rank 0
 * never comes stops after --launch-timeout naming the folder; --listen wins over a launcher;
 * a Slurm batch script without srun trains as one machine and says so. */
TEST(launch_wrong_environment_fails_fast_and_command_line_wins)
{
    const char *j = job("launch-wrong.cfg", "");
    char o[800];
    snprintf(o, sizeof o, "job.output=%s", test_tmp("launch-wrong"));
    int rc = frugal_run(&(frugal_call){(uid_t)-1, (const char *const[]){"SLURM_PROCID=0",
                        "SLURM_STEP_NUM_TASKS=2", NULL}, 0}, out, sizeof out,
                        (const char *const[]){"train", j, "--set", o, NULL});
    CHECKF(rc == 1 && strstr(out, "frugal train: launcher environment: SLURM_PROCID and "
                                  "SLURM_STEP_NUM_TASKS are set but no node list"), "%d: %s", rc, out);

    char dir[800];
    snprintf(dir, sizeof dir, "%s", test_tmp("lonely-rendezvous"));
    rc = frugal_run(&(frugal_call){(uid_t)-1, (const char *const[]){"SLURM_PROCID=1",
                    "SLURM_STEP_NUM_TASKS=2", "SLURM_STEP_NODELIST=127.0.0.[1-2]", "SLURM_JOB_ID=1", NULL}, 0},
                    out, sizeof out, (const char *const[]){"train", j, "--set", o, "--rendezvous", dir,
                                                           "--launch-timeout", "1", NULL});
    CHECKF(rc == 1 && strstr(out, "rank 1 of 2: no key from rank 0 at ") &&
           strstr(out, "after 1 s"), "%d: %s", rc, out);

    char key[800], listen[64];
    snprintf(key, sizeof key, "%s", test_tmp("launch-wins.key"));
    unlink(key);
    CHECKF(FRUGAL(out, "keygen", key) == 0, "%s", out);
    snprintf(listen, sizeof listen, "127.0.0.1:%d", test_port(25));
    rc = frugal_run(&(frugal_call){(uid_t)-1, (const char *const[]){"SLURM_PROCID=1",
                    "SLURM_STEP_NUM_TASKS=2", "SLURM_STEP_NODELIST=127.0.0.[1-2]", NULL}, 0},
                    out, sizeof out, (const char *const[]){"train", j, "--set", o, "--listen", listen,
                                                           "--key", key, "--overwrite", NULL});
    CHECKF(rc == 0 && strstr(out, "launch: slurm rank 1 of 2 found, not used: --listen given: it wins"),
           "%d: %s", rc, out);
    char summary[1 << 15];
    CHECKF(strstr(summary_of("launch-wrong", summary, sizeof summary),
                  "\"used\": false, \"why\": \"--listen given: it wins\""), "%s", summary);

    rc = frugal_run(&(frugal_call){(uid_t)-1, (const char *const[]){"SLURM_PROCID=0", "SLURM_NTASKS=4",
                    "SLURM_JOB_ID=31", NULL}, 0}, out, sizeof out,
                    (const char *const[]){"train", j, "--set", o, "--overwrite", NULL});
    CHECKF(rc == 0 && strstr(out, "launch: in Slurm job 31 but not started by srun"), "%d: %s", rc, out);
}

/* ---- a real srun, on a one-machine Slurm started here ---- */

/* A daemon started with the environment env (NULL-ended), its output in log. */
static pid_t start_daemon(const char *const *argv, const char *const *env, const char *log)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        FILE *f = freopen(log, "w", stdout);
        if (!f || dup2(fileno(stdout), 2) < 0)
            _exit(127);
        for (int i = 0; env[i]; i++)
            putenv((char *)env[i]);
        alarm(300);
        execv(argv[0], (char *const *)argv);
        _exit(126);
    }
    return pid;
}

static void stop_daemon(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    for (int i = 0; i < 100 && waitpid(pid, NULL, WNOHANG) == 0; i++)
        usleep(100 * 1000);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* slurmctld and slurmd on loopback (auth/none: root only, no munge), then `srun -n 2 frugal
 * train JOB`: Slurm's own variables, a one-host list, the key in the shared folder. */
TEST(launch_real_srun_trains_on_a_one_machine_slurm)
{
    if (access("/usr/sbin/slurmctld", X_OK) || access("/usr/sbin/slurmd", X_OK) ||
        access("/usr/bin/srun", X_OK) || geteuid() != 0) {
        printf("  (%s: the real srun is not run; ./build.sh deps installs Slurm)\n",
               geteuid() ? "not root, which Slurm's auth/none needs" : "slurm-wlm is not installed");
        return;
    }
    const char *dir = test_tmp("slurm");
    char conf[800], conf_var[820], path[900];
    mkdir(dir, 0700);
    snprintf(conf, sizeof conf, "%s/slurm.conf", dir);
    test_write_text(conf,
        "ClusterName=frugaltest\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort=%d\nSlurmdPort=%d\n"
        "AuthType=auth/none\nCredType=cred/none\nProctrackType=proctrack/pgid\nTaskPlugin=task/none\n"
        "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
        "MpiDefault=none\nSlurmUser=root\nSlurmdUser=root\nReturnToService=2\n"
        "StateSaveLocation=%s\nSlurmdSpoolDir=%s\nSlurmctldPidFile=%s/ctld.pid\nSlurmdPidFile=%s/d.pid\n"
        "SchedulerType=sched/builtin\nSelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n"
        "NodeName=fnode NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=%ld State=UNKNOWN\n"
        "PartitionName=p Nodes=fnode Default=YES MaxTime=10 State=UP OverSubscribe=YES\n",
        test_port(26), test_port(27), dir, dir, dir, dir, sysconf(_SC_NPROCESSORS_ONLN));
    snprintf(conf_var, sizeof conf_var, "SLURM_CONF=%s", conf);
    const char *env[] = {conf_var, NULL};
    char ctld_log[900], d_log[900];
    snprintf(ctld_log, sizeof ctld_log, "%s/slurmctld.log", dir);
    snprintf(d_log, sizeof d_log, "%s/slurmd.log", dir);
    pid_t ctld = start_daemon((const char *const[]){"/usr/sbin/slurmctld", "-D", "-i", NULL}, env, ctld_log);
    usleep(500 * 1000);
    pid_t d = start_daemon((const char *const[]){"/usr/sbin/slurmd", "-D", "-N", "fnode", NULL}, env, d_log);

    const char *j = job("launch-srun.cfg", "");
    single(j, "launch-srun-single");
    char bin[800], output[800], frugal_dir[800];
    const char *variant = getenv("FRUGAL_TEST_VARIANT");
    snprintf(bin, sizeof bin, "%s/build/%s/frugal", getcwd(path, sizeof path), variant ? variant : "release");
    snprintf(output, sizeof output, "job.output=%s", test_tmp("launch-srun"));
    snprintf(frugal_dir, sizeof frugal_dir, "%s/srun-rendezvous", dir);
    /* srun waits for the node to come up (--immediate would not); timeout bounds it */
    char cmd[4096], log[1 << 15];
    snprintf(cmd, sizeof cmd, "SLURM_CONF=%s timeout 240 /usr/bin/srun -n 2 --overcommit -t 5 %s train %s "
             "--set %s --rendezvous %s --overwrite > %s/srun.log 2>&1", conf, bin, j, output,
             frugal_dir, dir);
    int rc = system(cmd);
    stop_daemon(d);
    stop_daemon(ctld);
    snprintf(path, sizeof path, "%s/srun.log", dir);
    test_read_text(path, log, sizeof log);
    char dlog[4096];
    CHECKF(rc == 0, "srun: status %d\n%s\n--- slurmd ---\n%s", rc, log,
           test_read_text(d_log, dlog, sizeof dlog));
    CHECKF(strstr(log, "launch: slurm (SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST): "
                       "rank 0 of 2 on fnode; hosts fnode") &&
           strstr(log, "launch: a node of the coordinator at 127.0.0.1:") &&
           strstr(log, "chunks computed"), "%s", log);
    same_model("launch-srun-single", "launch-srun");
}
