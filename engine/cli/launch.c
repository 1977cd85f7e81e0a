/* A launched run's plan: each rank's part, the addresses and the key (launch.h).
 *
 *   launch_prepare   the launcher's variables -> the role -> the port and addresses -> the key
 *                    (rank 0 makes it, the others wait for it) -> what is printed and recorded
 *   launch_finish    rank 0 removes what it made */
#include "engine/cli/launch.h"

#include "common/clock.h"
#include "common/input_file.h"
#include "common/json.h"
#include "engine/job/config.h"
#include "netio/key.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LAUNCH_MAX_WAIT_FOR 64     /* the most nodes --wait-for waits for (run.c's limit) */
#define LAUNCH_STALE_S 120         /* a key or address older than this process by more: an
                                      earlier run's */

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

int launch_address_parse(const char *text, size_t len, char *addr, size_t addrlen, char *err,
                         size_t errlen)
{
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        len--;
    const char *colon = memchr(text, ':', len);
    size_t hlen = colon ? (size_t)(colon - text) : 0, plen = colon ? len - hlen - 1 : 0;
    char host[HOSTLIST_NAME], digits[6];
    if (!colon || memchr(text, 0, len) || hlen >= sizeof host || plen < 1 || plen >= sizeof digits)
        return fail(err, errlen, "expected one line HOST:PORT");
    memcpy(host, text, hlen);
    host[hlen] = 0;
    memcpy(digits, colon + 1, plen);
    digits[plen] = 0;
    long port = strspn(digits, "0123456789") == plen ? strtol(digits, NULL, 10) : 0;
    if (port < 1 || port > 65535)
        return fail(err, errlen, "expected one line HOST:PORT, PORT from 1 to 65535");
    if (!hostlist_name_valid(host))
        return fail(err, errlen, "'%s' is not a host name", host);
    snprintf(addr, addrlen, "%s:%ld", host, port);
    return 0;
}

const char *launch_override(const char *const *overrides, const char *name)
{
    const char *v = NULL;
    size_t n = strlen(name);
    for (int i = 0; overrides && overrides[i]; i++)
        if (!strncmp(overrides[i], name, n) && overrides[i][n] == '=')
            v = overrides[i] + n + 1;
    return v;
}

/* ---- the addresses ---- */

/* Every rank on this one host: loopback is the way between them. */
static int one_host(const launch_env *e)
{
    return e->hosts.n ? e->hosts.n == 1 : e->local_size == e->size;
}

/* Where a host listens (its address when the list names it by one, else every interface: the
 * traffic is authenticated and sealed) and where the others reach it. */
static void host_addresses(const launch_env *e, const char *host, char *listen, char *reach,
                           size_t n)
{
    struct in_addr a;
    const char *l = one_host(e) ? "127.0.0.1" : inet_pton(AF_INET, host, &a) == 1 ? host : "0.0.0.0";
    snprintf(listen, n, "%s", l);
    snprintf(reach, n, "%s", one_host(e) ? "127.0.0.1" : host);
}

/* rank 0's port: --port, the one srun reserved, or one from the job id (so two jobs sharing a
 * host do not take the same), below the ports Linux hands outgoing connections (32768 on),
 * which any connection on the host may hold: drawn from 40000 to 59999, a CI run's rank 0
 * found its port in use (2026-11-30). */
static void choose_port(launch_plan *p, const launch_request *rq)
{
    unsigned h = 5381;
    for (const char *c = p->env.job_id; *c; c++)
        h = h * 33 + (unsigned char)*c;
    p->port = rq->port ? rq->port : p->env.port ? p->env.port : 20000 + (int)(h % 12000);
    p->port_from = rq->port ? "--port" : p->env.port ? "SLURM_STEP_RESV_PORTS" : "the job id";
}

void launch_addresses(const launch_plan *p, const char *host, int offset, char *listen,
                      char *reach, size_t n)
{
    char self[HOSTLIST_NAME], l[HOSTLIST_NAME], r[HOSTLIST_NAME];
    snprintf(self, sizeof self, "%s", host ? host : p->env.self);
    if (!self[0] && gethostname(self, sizeof self - 1))
        snprintf(self, sizeof self, "localhost");
    host_addresses(&p->env, self, l, r, sizeof l);
    snprintf(listen, n, "%s:%d", l, p->port + offset);
    snprintf(reach, n, "%s:%d", r, p->port + offset);
}

static void addresses(launch_plan *p)
{
    const launch_env *e = &p->env;
    char listen[HOSTLIST_NAME + 8], reach[HOSTLIST_NAME + 8];
    launch_addresses(p, NULL, p->role == LAUNCH_PEER ? e->rank : 0, listen, reach, sizeof listen);
    if (p->role != LAUNCH_NODE)
        snprintf(p->listen, sizeof p->listen, "%s", listen);
    if (p->role == LAUNCH_PEER)
        snprintf(p->advertise, sizeof p->advertise, "%s", reach);
    if (e->hosts.n || e->rank == 0 || one_host(e))   /* else it comes from rank 0's file */
        launch_addresses(p, e->hosts.n ? e->hosts.name[0] : NULL, 0, listen, p->coordinator,
                         sizeof p->coordinator);
}

/* ---- the shared folder: the key and rank 0's address ---- */

/* The folder, made if missing; refused when others may write in it (they could put their own
 * key there). */
static int open_dir(launch_plan *p, const launch_request *rq, char *err, size_t errlen)
{
    const char *dir = rq->rendezvous ? rq->rendezvous : LAUNCH_DIR;
    if (mkdir(dir, 0700) && errno != EEXIST)
        return fail(err, errlen, "cannot make the launch folder %s: %s", dir, strerror(errno));
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode))
        return fail(err, errlen, "the launch folder %s is not a folder", dir);
    if (st.st_uid != geteuid() || (st.st_mode & 022))
        return fail(err, errlen, "the launch folder %s is %s: others could put a key of theirs "
                    "there (chmod go-w it, or give --rendezvous DIR or --key FILE)", dir,
                    st.st_uid != geteuid() ? "another user's" : "writable by others");
    if (!realpath(dir, p->dir))
        return fail(err, errlen, "the launch folder %s: %s", dir, strerror(errno));
    char name[80];
    snprintf(name, sizeof name, "%s%s%s", launch_env_kind_name(p->env.kind),
             p->env.job_id[0] ? "-" : "", p->env.job_id);
    for (char *c = name; *c; c++)   /* a job id names a file: nothing but these */
        if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._", *c))
            *c = '_';
    if (!rq->key)
        snprintf(p->key_path, sizeof p->key_path, "%s/%s.key", p->dir, name);
    snprintf(p->address_path, sizeof p->address_path, "%s/%s.address", p->dir, name);
    return 0;
}

/* Written whole or not at all: a temporary name, then renamed over an earlier run's. */
static int make_key(launch_plan *p, char *err, size_t errlen)
{
    char tmp[820], why[300];
    snprintf(tmp, sizeof tmp, "%s.%ld", p->key_path, (long)getpid());
    unlink(tmp);
    if (netio_key_generate(tmp, why, sizeof why) || rename(tmp, p->key_path)) {
        unlink(tmp);
        return fail(err, errlen, "rank 0 cannot write the run's key to %s: %s", p->key_path,
                    why[0] ? why : strerror(errno));
    }
    p->key_made = 1;
    return 0;
}

static int publish_address(launch_plan *p, char *err, size_t errlen)
{
    char tmp[820];
    snprintf(tmp, sizeof tmp, "%s.%ld", p->address_path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%s\n", p->coordinator) < 0 || fclose(f) || rename(tmp, p->address_path)) {
        unlink(tmp);
        return fail(err, errlen, "rank 0 cannot write its address to %s: %s", p->address_path,
                    strerror(errno));
    }
    return 0;
}

/* Waits for a file rank 0 writes, newer than this process's start by LAUNCH_STALE_S at most. */
static int wait_file(const launch_plan *p, const char *path, const char *what, time_t started,
                     char *err, size_t errlen)
{
    double t0 = clock_now_s();
    for (;;) {
        struct stat st;
        if (!stat(path, &st) && st.st_mtime >= started - LAUNCH_STALE_S)
            return 0;
        if (clock_now_s() - t0 > p->wait_s)
            return fail(err, errlen, "rank %d of %d: no %s from rank 0 at %s after %g s: is %s on "
                        "a file system every host shares (else --rendezvous DIR, or --key FILE "
                        "copied to every host), and did rank 0 start?", p->env.rank, p->env.size,
                        what, path, p->wait_s, p->dir);
        usleep(100 * 1000);
    }
}

static int read_address(launch_plan *p, time_t started, char *err, size_t errlen)
{
    char why[300];
    size_t len;
    if (wait_file(p, p->address_path, "address", started, err, errlen))
        return -1;
    char *text = input_read_all(p->address_path, 4096, "rank 0's address", &len, why, sizeof why);
    int rc = !text || launch_address_parse(text, len, p->coordinator, sizeof p->coordinator, why,
                                           sizeof why);
    free(text);
    return rc ? fail(err, errlen, "%s: %s", p->address_path, why) : 0;
}

/* rank 0 makes the key (unless --key) and, where the others cannot know its host, publishes
 * its address; the others wait for both. */
static int rendezvous(launch_plan *p, const launch_request *rq, char *err, size_t errlen)
{
    int need_address = !p->env.hosts.n && !one_host(&p->env);
    if (rq->key)
        snprintf(p->key_path, sizeof p->key_path, "%s", rq->key);
    if (rq->key && !need_address)
        return 0;
    time_t started = time(NULL);
    if (open_dir(p, rq, err, errlen))
        return -1;
    if (p->env.rank == 0)
        return (!rq->key && make_key(p, err, errlen)) ||
               (need_address && publish_address(p, err, errlen)) ? -1 : 0;
    return (!rq->key && wait_file(p, p->key_path, "key", started, err, errlen)) ||
           (need_address && read_address(p, started, err, errlen)) ? -1 : 0;
}

/* ---- what is said and recorded ---- */

static const char *role_name(launch_role r)
{
    static const char *const names[] = {"alone", "coordinator", "node", "peer"};
    return names[r];
}

static void write_json(launch_plan *p, const launch_request *rq, const char *unused_why)
{
    const launch_env *e = &p->env;
    size_t len;
    FILE *f = open_memstream(&p->json, &len);
    if (!f)
        return;
    fputs("{\"launcher\": ", f);
    json_string(f, launch_env_kind_name(e->kind));
    fputs(", \"from\": ", f);
    json_string(f, e->from);
    fprintf(f, ", \"used\": %s", unused_why ? "false" : "true");
    if (unused_why)
        fputs(", \"why\": ", f), json_string(f, unused_why);
    fprintf(f, ", \"rank\": %d, \"ranks\": %d, \"job_id\": ", e->rank, e->size);
    json_string(f, e->job_id);
    fputs(", \"hosts\": [", f);
    for (int i = 0; i < e->hosts.n && i < 256; i++)
        fputs(i ? ", " : "", f), json_string(f, e->hosts.name[i]);
    fputs("], \"this_host\": ", f);
    json_string(f, e->self);
    if (!unused_why) {
        fputs(", \"role\": ", f);
        json_string(f, role_name(p->role));
        fputs(", \"mode\": ", f);
        json_string(f, p->mode == CLUSTER_GOSSIP ? "gossip" : p->mode == CLUSTER_AVERAGE ? "average"
                                                                                   : "sync");
        fprintf(f, ", \"port\": %d, \"port_from\": ", p->port);
        json_string(f, p->port_from);
        fputs(", \"coordinator\": ", f);
        json_string(f, p->coordinator);
        fputs(", \"listen\": ", f);
        json_string(f, p->listen);
        fputs(", \"key\": ", f);
        json_string(f, rq->key ? "--key" : "made by rank 0");
        fprintf(f, ", \"identities\": %s", rq->identity ? "true" : "false");
        fputs(", \"key_file\": ", f);
        json_string(f, p->key_path);
    }
    fputs(", \"note\": ", f);
    json_string(f, e->note);
    fputc('}', f);
    if (fclose(f))
        free(p->json), p->json = NULL;
}

static void say(const launch_plan *p, const launch_request *rq, FILE *out)
{
    const launch_env *e = &p->env;
    fprintf(out, "launch: %s (%s): rank %d of %d", launch_env_kind_name(e->kind), e->from, e->rank,
            e->size);
    if (e->self[0])
        fprintf(out, " on %s", e->self);
    if (e->hosts.n) {
        fprintf(out, "; hosts");
        for (int i = 0; i < e->hosts.n && i < 8; i++)
            fprintf(out, "%s %s", i ? "," : "", e->hosts.name[i]);
        if (e->hosts.n > 8)
            fprintf(out, " and %d more", e->hosts.n - 8);
    }
    fprintf(out, "\n");
    if (p->role == LAUNCH_COORDINATOR)
        fprintf(out, "launch: the coordinator, listening at %s (port from %s), waiting for %d "
                "node%s\n", p->listen, p->port_from, p->wait_for, p->wait_for == 1 ? "" : "s");
    else if (p->role == LAUNCH_NODE)
        fprintf(out, "launch: a node of the coordinator at %s\n", p->coordinator);
    else
        fprintf(out, "launch: a gossip peer at %s%s%s\n", p->advertise,
                e->rank ? ", introduced by rank 0 at " : " (rank 0)", e->rank ? p->coordinator : "");
    fprintf(out, "launch: key %s%s\n", rq->key ? "given: " : p->key_made ? "made by this rank: "
            : "made by rank 0: ", p->key_path);
    if (rq->identity && p->role == LAUNCH_NODE)
        fprintf(out, "launch: this node proves its identity %s\n", rq->identity);
    if (e->local_size > 1 && !one_host(e))
        fprintf(out, "launch: warning: %d ranks on this host, each using every core: ask the "
                "launcher for one task per host\n", e->local_size);
    if (e->note[0])
        fprintf(out, "launch: %s\n", e->note);
}

/* ---- the plan ---- */

/* The run's mode and output folder, from the job file as this run reads it. */
static int read_job(launch_plan *p, const char *job, const char *const *overrides, char *err,
                    size_t errlen)
{
    job_config *cfg = malloc(sizeof *cfg);
    if (!cfg)
        return fail(err, errlen, "out of memory");
    int rc = config_load(cfg, job, overrides, err, errlen);
    p->mode = cfg->cluster_mode;
    snprintf(p->output, sizeof p->output, "%s", cfg->output);
    free(cfg);
    return rc;
}

/* Why a launcher's variables do not make a launch here, or NULL when they do. */
static const char *not_launched(const launch_plan *p, const launch_request *rq)
{
    if (p->env.kind == LAUNCH_NONE)
        return "no launcher";
    if (rq->off)
        return "--launcher none";
    if (rq->manual)
        return !strcmp(rq->manual, "--listen") ? "--listen given: it wins" : "--peer given: it wins";
    if (p->env.size == 1)
        return "one rank: one machine";
    return NULL;
}

int launch_prepare(launch_plan *p, const launch_request *rq, launch_getenv_fn get, void *ctx,
                   const char *job, const char *const *overrides, FILE *out, char *err,
                   size_t errlen)
{
    *p = (launch_plan){.wait_s = rq->wait_s > 0 ? rq->wait_s : LAUNCH_WAIT_S};
    char why[400];
    if (!rq->off && (get ? launch_env_detect(&p->env, get, ctx, why, sizeof why)
                         : launch_env_read(&p->env, why, sizeof why)))
        return fail(err, errlen, "launcher environment: %s", why);
    const char *unused = not_launched(p, rq);
    if (unused && rq->identity)
        return fail(err, errlen, "--identity is for the nodes of a launched run (%s); a node "
                    "started by hand: frugal join --identity", unused);
    if (unused) {
        if (p->env.kind != LAUNCH_NONE)
            fprintf(out, "launch: %s rank %d of %d found, not used: %s\n",
                    launch_env_kind_name(p->env.kind), p->env.rank, p->env.size, unused);
        if (p->env.note[0])   /* a Slurm batch script, not srun */
            fprintf(out, "launch: %s\n", p->env.note);
        if (p->env.kind != LAUNCH_NONE || p->env.note[0])
            write_json(p, rq, unused);
        return 0;
    }
    if (read_job(p, job, overrides, err, errlen))
        return -1;
    if (rq->identity && p->mode == CLUSTER_GOSSIP)
        return fail(err, errlen, "--identity is a node's (a sync or average run): every gossip "
                    "peer holds the key");
    p->role = p->mode == CLUSTER_GOSSIP ? LAUNCH_PEER : p->env.rank ? LAUNCH_NODE
                                                                    : LAUNCH_COORDINATOR;
    p->wait_for = p->role == LAUNCH_COORDINATOR ? p->env.size - 1 : 0;
    if (p->wait_for > LAUNCH_MAX_WAIT_FOR)
        p->wait_for = LAUNCH_MAX_WAIT_FOR;   /* the rest join as they come */
    choose_port(p, rq);
    if (p->role == LAUNCH_PEER && p->port + p->env.size > 65536)
        return fail(err, errlen, "ports %d to %d: past 65535 (give --port lower)", p->port,
                    p->port + p->env.size - 1);
    addresses(p);
    if (rendezvous(p, rq, err, errlen))
        return -1;
    say(p, rq, out);
    write_json(p, rq, NULL);
    fflush(out);
    return 0;
}

void launch_finish(launch_plan *p)
{
    if (p->key_made)
        unlink(p->key_path);
    if (p->env.rank == 0 && p->role != LAUNCH_ALONE && p->address_path[0])
        unlink(p->address_path);
    if (p->key_made)
        rmdir(p->dir);   /* when nothing else is in it */
    launch_env_free(&p->env);
    free(p->json);
    p->json = NULL;
}
