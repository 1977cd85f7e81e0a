/* frugal join: a node of a training cluster, top to bottom:
 *
 *   connect      the key, the hub, the handshake, JOIN (workers, kernel path, energy source)
 *   take_job     the job (parsed like a job file), each training file found by hash (in the
 *                cache, at the job's path, or fetched from the coordinator), the data, a chunk
 *                engine; READY
 *   serve        LAYERs (or a PARAMS) load the batch's parameters; WORK chunks are computed
 *                together, each layer's gradient sent (GRAD, from a worker) as soon as the
 *                backward pass has it, then each chunk's RESULT (periodic averaging: a ROUND
 *                of local steps, its MODEL sent back); DONE ends it. A RECALL is answered at
 *                once, on the hub's thread: a chunk not started yet is given back. Under a
 *                power budget, a worker control of its own parks workers as it measures
 *
 * Losing the coordinator (killed, restarted with --resume, or a link that stalled) starts over
 * from connect, trying for --timeout seconds; after that the node stops with its name.
 *
 * Messages arrive on the hub's thread and wait in a queue for this one, so keepalives flow while
 * chunks are computed. */
#include "engine/cluster/node.h"
#include "common/clock.h"
#include "common/text.h"

#include "energy/carbon.h"
#include "energy/meter.h"
#include "energy/power_model.h"
#include "engine/job/cache_dir.h"
#include "engine/cluster/chunk_engine.h"
#include "engine/cluster/file_hash.h"
#include "engine/cluster/proto.h"
#include "engine/job/devices.h"
#include "engine/job/energy_run.h"
#include "engine/job/job_data.h"
#include "engine/placement/worker_control.h"
#include "netio/hub.h"
#include "ops/cpu.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FIGURES_EVERY_S 0.5   /* idle this long: the grid's figures, if they changed (FIGURES) */

typedef struct queued {
    struct queued *next;
    long work;                   /* a WORK: its arrival number (recall ring below); else -1 */
    netio_event e;
    char why[200];
    void *payload;               /* kept from the hub (netio_event_keep): not copied */
} queued;

typedef struct node_process {
    const node_options *o;
    netio_hub *hub;
    int peer;
    pthread_mutex_t lock;
    pthread_cond_t arrived;
    queued *head, *tail;
    job_config cfg;
    dataset train;
    chunk_engine e;
    int have_engine;
    run_devices devices;         /* this machine's OpenCL devices the engine computes on */
    int have_devices;
    _Atomic int send_failed;     /* a GRAD could not be queued (on a worker) */
    job_config control_cfg;      /* what the worker control goes by: this machine's budget */
    worker_control control;
    int lost;                    /* the session ended with the coordinator lost */
    int stopped;                 /* told to stop (a signal): it leaves, and does not rejoin */
    energy_meter *meter;
    carbon_source carbon;
    double said_carbon, said_renewable;   /* the figures the coordinator last had (FIGURES) */
    double grams_at_job;         /* its CO2e when its first work began (-1: not yet): what it
                                    reports is the job's, its setup (the data) left out */
    /* Until a chunk starts, the coordinator may take it back (RECALL) for an idle machine: each
     * WORK's claim (runtime.h), by its arrival number, in a ring longer than the chunks a
     * coordinator keeps in flight. The hub's thread fills it and answers RECALLs. */
    _Atomic int *claims;
    msg_work *ring_work;
    long ring, works_in;
    _Atomic long works_done;
    char err[1024];
    char joined[400];            /* what it says once admitted */
} node_process;

static void answer_recall(node_process *n, const netio_event *e);
static int register_work(node_process *n, const netio_event *e, long *work);

static void on_event(void *ctx, const netio_event *e)
{
    node_process *n = ctx;
    long work = -1;
    if (e->kind == NETIO_MESSAGE && e->type == MSG_RECALL)
        return answer_recall(n, e);
    if (e->kind == NETIO_MESSAGE && e->type == MSG_WORK && register_work(n, e, &work))
        return;
    queued *q = malloc(sizeof *q);
    if (!q) {   /* not dropped unsaid: the connection closes, and its DOWN (no payload) follows */
        if (e->kind == NETIO_MESSAGE)
            netio_hub_close(n->hub, e->peer, "out of memory for a message from the coordinator");
        return;
    }
    q->next = NULL;
    q->work = work;
    q->e = *e;
    snprintf(q->why, sizeof q->why, "%s", e->why ? e->why : "");
    q->payload = netio_event_keep(e);
    q->e.why = q->why, q->e.addr = NULL, q->e.block_ = NULL;
    pthread_mutex_lock(&n->lock);
    if (n->tail)
        n->tail->next = q;
    else
        n->head = q;
    n->tail = q;
    pthread_cond_signal(&n->arrived);
    pthread_mutex_unlock(&n->lock);
}

/* The next event; with wait 0, NULL when none is queued. The caller frees it (drop). */
/* What next_event returns once the node is told to stop (no allocation: it may be out of
 * memory). */
static queued told_to_stop_event;

/* Whether this node was told to leave (a signal). */
static int told_to_stop(const node_process *n)
{
    return n->o->stop && atomic_load_explicit(n->o->stop, memory_order_relaxed);
}

/* The next event, waiting for one when `wait`; told to stop, a DOWN saying so (ahead of the
 * queue: whatever waits there is not served). */
static queued *next_event_until(node_process *n, int wait, double until_s);

static queued *next_event(node_process *n, int wait) { return next_event_until(n, wait, -1); }

/* The next event within `seconds`, or NULL. */
static queued *next_event_within(node_process *n, double seconds)
{
    return next_event_until(n, 1, clock_now_s() + seconds);
}

static queued *next_event_until(node_process *n, int wait, double until_s)
{
    pthread_mutex_lock(&n->lock);
    while (wait && !n->head && !told_to_stop(n) && (until_s < 0 || clock_now_s() < until_s)) {
        struct timespec until;   /* the signal lands on any thread: look again every 100 ms */
        clock_gettime(CLOCK_REALTIME, &until);
        long ns = until.tv_nsec + 100 * 1000000L;
        until.tv_sec += ns / 1000000000L, until.tv_nsec = ns % 1000000000L;
        pthread_cond_timedwait(&n->arrived, &n->lock, &until);
    }
    queued *q = &told_to_stop_event;
    if (wait && !n->head && !told_to_stop(n)) {
        q = NULL;   /* time is up */
    } else if (wait && told_to_stop(n)) {
        q->e.kind = NETIO_DOWN;
        snprintf(q->why, sizeof q->why, "this node was told to stop (signal %d)",
                 atomic_load(n->o->stop));
        q->e.why = q->why;
        n->stopped = 1;
    } else if ((q = n->head) && !(n->head = q->next)) {
        n->tail = NULL;
    }
    pthread_mutex_unlock(&n->lock);
    return q;
}

/* Whether the coordinator's DONE waits in the queue: it ended training (and closed) while this
 * node still computed a chunk it no longer needed, a probe, so a send that fails then is no
 * lost coordinator. */
static int done_queued(node_process *n)
{
    pthread_mutex_lock(&n->lock);
    const queued *q = n->head;
    while (q && !(q->e.kind == NETIO_MESSAGE && (q->e.type == MSG_DONE || q->e.type == MSG_PAUSED)))
        q = q->next;
    pthread_mutex_unlock(&n->lock);
    return q != NULL;
}

static void drop(queued *q)
{
    if (q == &told_to_stop_event)
        return;
    free(q->payload);
    free(q);
}

/* The node's error on stderr (n unused); 1, the exit status. */
#define fail(n, ...) ((void)(n), text_error(1, "frugal join: ", __VA_ARGS__))

/* An event that is not the message wanted ends the node: the coordinator lost or refusing. */
static int unexpected(node_process *n, const queued *q, const char *waiting_for)
{
    if (n->stopped) {
        fprintf(n->o->out, "left coordinator %s while %s: %s\n", n->o->coordinator, waiting_for,
                q->why);
        return 1;
    }
    if (q->e.type == MSG_REFUSED && q->e.kind == NETIO_MESSAGE) {   /* for good: no rejoining */
        char text[PROTO_TEXT + 1] = "";
        proto_text_decode(text, sizeof text, q->e.payload, q->e.len, n->err, sizeof n->err);
        return fail(n, "coordinator %s refused this node: %s", n->o->coordinator, text);
    }
    if (q->e.kind == NETIO_DOWN || q->e.kind == NETIO_REFUSED) {
        n->lost = 1;
        return fail(n, "coordinator %s lost while %s: %s", n->o->coordinator, waiting_for, q->why);
    }
    if (q->e.type == MSG_PAUSED) {   /* it may be resumed: try to rejoin */
        char text[PROTO_TEXT + 1] = "";
        proto_text_decode(text, sizeof text, q->e.payload, q->e.len, n->err, sizeof n->err);
        fprintf(n->o->out, "coordinator %s: %s\n", n->o->coordinator, text);
        n->lost = 1;
        return 1;
    }
    if (q->e.type == MSG_DONE) {
        char text[PROTO_TEXT + 1] = "";
        proto_text_decode(text, sizeof text, q->e.payload, q->e.len, n->err, sizeof n->err);
        fprintf(n->o->out, "coordinator %s: %s\n", n->o->coordinator, text);
        return -1;   /* a clean end */
    }
    return fail(n, "coordinator %s sent a message of type %u while %s", n->o->coordinator,
                q->e.type, waiting_for);
}

/* Waits for a message of `type`: 0 with it in *out, 1 on an error, -1 for DONE. */
static int expect(node_process *n, uint16_t type, const char *waiting_for, queued **out)
{
    queued *q = next_event(n, 1);
    if (q->e.kind == NETIO_MESSAGE && q->e.type == type) {
        *out = q;
        return 0;
    }
    int rc = unexpected(n, q, waiting_for);
    drop(q);
    return rc;
}

/* This machine's identity signs the session (netio/key.h), for the coordinator's allow file. */
static int sign_session(node_process *n, msg_join *j)
{
    netio_identity id;
    uint8_t binding[NETIO_BINDING_BYTES];
    if (netio_identity_load(n->o->identity_path, &id, n->err, sizeof n->err))
        return fail(n, "%s", n->err);
    int rc = netio_hub_peer_binding(n->hub, n->peer, binding);
    if (!rc) {
        netio_identity_sign(&id, binding, j->signature);
        memcpy(j->identity, id.pk, sizeof j->identity);
        j->has_identity = 1;
    }
    sodium_memzero(&id, sizeof id);
    return rc ? fail(n, "coordinator %s lost before JOIN", n->o->coordinator) : 0;
}

static int connect_and_join(node_process *n)
{
    netio_config nc = {.timeout_s = n->o->timeout_s, .on_event = on_event, .ctx = n};
    proto_limits(&nc.limits, 0, 0, 0);
    if (proto_cipher_from_env(&nc, n->err, sizeof n->err) ||
        netio_key_load(n->o->key_path, nc.key, n->err, sizeof n->err) ||
        !(n->hub = netio_hub_start(&nc, n->err, sizeof n->err)) ||
        (n->peer = netio_hub_connect(n->hub, n->o->coordinator, n->err, sizeof n->err)) < 0) {
        sodium_memzero(nc.key, sizeof nc.key);
        return fail(n, "%s", n->err);
    }
    sodium_memzero(nc.key, sizeof nc.key);
    /* whatever fails before the handshake is done, try again until the timeout: a coordinator
     * still starting refuses connections, one crowded by strangers closes them, a stalled link
     * may close instead (a wrong key looks the same from here, and fails at the timeout) */
    double t0 = clock_now_s(), pause_s = 0.2;
    int said = 0;
    for (;;) {
        queued *q = next_event(n, 1);
        int up = q->e.kind == NETIO_UP;
        double waited = clock_now_s() - t0;
        double window = n->o->linger_s > n->o->timeout_s ? n->o->linger_s : n->o->timeout_s;
        int retry = !up && waited < window && !n->stopped;
        if (!up && !retry)
            fail(n, "cannot join %s: %s", n->o->coordinator, q->why);
        if (retry && !said++) {   /* what it waits for, once */
            fprintf(n->o->out, "waiting for coordinator %s (%s): trying again for %g s\n",
                    n->o->coordinator, q->why, window);
            fflush(n->o->out);
        }
        drop(q);
        if (up)
            break;
        if (!retry)
            return 1;
        usleep((useconds_t)(pause_s * 1e6));
        pause_s = pause_s < 1 ? 2 * pause_s : 2;   /* 0.2 s, doubling, at most 2 s apart */
        if ((n->peer = netio_hub_connect(n->hub, n->o->coordinator, n->err, sizeof n->err)) < 0)
            return fail(n, "%s", n->err);
    }
    msg_join j = {PROTO_VERSION, (uint32_t)n->o->workers, (uint32_t)ops_isa_supported(), "", "", 0,
                  {0}, {0}};
    if (n->o->identity_path && sign_session(n, &j))
        return 1;
    gethostname(j.host, sizeof j.host - 1);
    const double *pw = n->o->profile_w;
    n->meter = energy_meter_open(&(energy_options){0, MODEL_IDLE_W, MODEL_CORE_W, {pw[0], pw[1], pw[2]}});
    if (n->meter && energy_meter_start(n->meter, n->err, sizeof n->err) == 0)
        snprintf(j.energy, sizeof j.energy, "%s", energy_meter_source(n->meter));
    uint8_t buf[512];
    size_t len = proto_join_encode(&j, buf, sizeof buf);
    if (netio_hub_send(n->hub, n->peer, MSG_JOIN, buf, len, NULL, 0))
        return n->lost = 1, fail(n, "coordinator %s lost before JOIN", n->o->coordinator);
    char slower[80] = "";   /* said once the coordinator admits it (the JOB) */
    if (n->o->slowdown > 1)
        snprintf(slower, sizeof slower, ", emulating hardware %gx slower (--slowdown)", n->o->slowdown);
    snprintf(n->joined, sizeof n->joined, "joined %s with %d workers (kernels %s, energy: %s)%s\n",
             n->o->coordinator, n->o->workers, ops_isa_name(ops_isa_supported()),
             j.energy[0] ? j.energy : "none", slower);
    return 0;
}

/* ---- the training files, by hash ---- */

/* Fetches f from the coordinator into path (through path.tmp, checked, then renamed). */
static int fetch(node_process *n, const proto_file *f, const char *path)
{
    char tmp[760];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *out = fopen(tmp, "wb");
    if (!out)
        return fail(n, "%s: %s", tmp, strerror(errno));
    fprintf(n->o->out, "fetching %s (%.1f MB) from the coordinator\n", f->name, f->size / 1e6);
    int rc = 0;
    for (uint64_t at = 0; at < f->size && !rc;) {
        msg_fetch m = {.offset = at};
        memcpy(m.hash, f->hash, 32);
        uint8_t buf[64];
        queued *q = NULL;
        rc = netio_hub_send(n->hub, n->peer, MSG_FETCH, buf, proto_fetch_encode(&m, buf, sizeof buf),
                            NULL, 0) ? (n->lost = 1, fail(n, "coordinator lost while fetching %s", f->name))
                                     : expect(n, MSG_FILE, "fetching a file", &q);
        msg_file part;
        if (!rc && (proto_file_decode(&part, q->e.payload, q->e.len, n->err, sizeof n->err) ||
                    part.offset != at || part.total != f->size || memcmp(part.hash, f->hash, 32) ||
                    !part.len))
            rc = fail(n, "coordinator %s sent a wrong part of %s", n->o->coordinator, f->name);
        if (!rc && fwrite(part.bytes, 1, part.len, out) != part.len)
            rc = fail(n, "%s: %s", tmp, strerror(errno));
        if (!rc)
            at += part.len;
        drop(q);
    }
    if (fclose(out) && !rc)
        rc = fail(n, "%s: %s", tmp, strerror(errno));
    if (!rc && !file_hash_matches(tmp, f->size, f->hash))
        rc = fail(n, "%s: what the coordinator sent does not match its hash", f->name);
    if (!rc && rename(tmp, path))
        rc = fail(n, "%s: %s", path, strerror(errno));
    if (rc)
        unlink(tmp);
    return rc;
}

/* Where file f is here: the cache (by hash), the job's own path if it holds the same bytes, or
 * fetched into the cache. */
static int find_file(node_process *n, const proto_file *f, char *path, size_t pathlen)
{
    char dir[400], hex[65], why[500];
    if (cache_folder(ENV_CACHE_DIR, "data", dir, sizeof dir, why, sizeof why))
        return fail(n, "the data cache: %s", why);
    sodium_bin2hex(hex, sizeof hex, f->hash, 32);
    snprintf(path, pathlen, "%s/%s", dir, hex);
    if (file_hash_matches(path, f->size, f->hash))
        return 0;
    if (file_hash_matches(f->name, f->size, f->hash)) {
        snprintf(path, pathlen, "%s", f->name);
        return 0;
    }
    return fetch(n, f, path);
}

/* The job as the coordinator runs it, with this node's workers, devices and slowdown and the
 * files found here. */
static int parse_job(node_process *n, const msg_job *job)
{
    char workers[64], slowdown[64], devices[64];
    snprintf(workers, sizeof workers, "execution.workers=%d", n->o->workers);
    snprintf(slowdown, sizeof slowdown, "execution.slowdown=%g", n->o->slowdown);
    snprintf(devices, sizeof devices, "execution.devices=%s", n->o->devices ? n->o->devices : "");
    const char *mine[] = {workers, slowdown, n->o->devices ? devices : NULL, NULL};
    if (proto_job_config(job, mine, &n->cfg, n->err, sizeof n->err))
        return fail(n, "%s", n->err);
    if (!carbon_follows_traces(&n->carbon) &&
        energy_run_carbon_traces(&n->carbon, &n->cfg, n->o->carbon_trace, n->o->renewable_trace,
                                 n->err, sizeof n->err))
        return fail(n, "--carbon-trace or --renewable-trace: %s", n->err);
    n->grams_at_job = -1;   /* from its first work on (add_figures) */
    char paths[PROTO_MAX_FILES][CONFIG_PATH], list[sizeof n->cfg.train_files] = "";
    for (uint32_t i = 0; i < job->nfiles; i++)
        if (find_file(n, &job->files[i], paths[i], sizeof paths[i]))
            return 1;
    if (n->cfg.format == DATA_IDX && job->nfiles == 2) {
        snprintf(n->cfg.train_images, sizeof n->cfg.train_images, "%s", paths[0]);
        snprintf(n->cfg.train_labels, sizeof n->cfg.train_labels, "%s", paths[1]);
    } else if (n->cfg.format == DATA_CIFAR10) {
        for (uint32_t i = 0; i < job->nfiles; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? "," : "", paths[i]);
        snprintf(n->cfg.train_files, sizeof n->cfg.train_files, "%s", list);
    } else {
        return fail(n, "coordinator %s sent %u files for an IDX job", n->o->coordinator, job->nfiles);
    }
    return 0;
}

/* Under this machine's power budget (--power-budget, else the job's node budget; never the whole
 * job's, which the coordinator keeps), the job's policy chooses how many workers run here; the
 * job's operating_point is set or searched on this machine as on any other. */
static void start_control(node_process *n)
{
    job_config *c = &n->control_cfg;
    *c = n->cfg;
    if (n->o->power_budget_w > 0)
        c->node_power_budget_watts = (float)n->o->power_budget_w;
    c->power_budget_watts = 0;
    char why[200];
    if (n->o->operating_point &&   /* checked when given: cannot fail */
        op_setting_parse(n->o->operating_point, &c->operating_point, why, sizeof why) == 0)
        snprintf(c->operating_point_text, sizeof c->operating_point_text, "%s", n->o->operating_point);
    if ((c->node_power_budget_watts <= 0 && !op_setting_any(&c->operating_point)) || !n->meter)
        return;
    if (c->node_power_budget_watts <= 0)
        c->policy = -1;   /* the operating points alone: every worker runs */
    c->workers = n->o->workers_pinned ? n->o->workers : 0;
    char key[128] = "node-";   /* its figures include waiting for the coordinator */
    worker_control_key(key + 5, sizeof key - 5, c, n->train.c, n->train.h, n->train.w,
                       ops_isa_name(ops_isa_active()), NULL);   /* a node runs no devices */
    worker_control_begin(&n->control, c, n->e.rt, n->e.t, n->meter, key, n->o->out);
    worker_control_pass(&n->control, 1);
}

/* Chunks' gradient of one layer, as soon as the backward pass has it (on a worker). */
static void send_gradient(void *ctx, int chunk, int chunks, int layer, const float *grad,
                          long count)
{
    node_process *n = ctx;
    uint8_t head[PROTO_LAYER_HEAD];
    msg_layer g = {n->e.seq, (uint32_t)chunk, (uint32_t)layer, (uint32_t)chunks, NULL, 0};
    if (netio_hub_send(n->hub, n->peer, MSG_GRAD, head, proto_layer_head(&g, head, sizeof head),
                       grad, sizeof(float) * (size_t)count))
        atomic_store(&n->send_failed, 1);
}

static int take_job(node_process *n)
{
    queued *q = NULL;
    int rc = expect(n, MSG_JOB, "waiting for the job", &q);
    if (rc)
        return rc;
    fputs(n->joined, n->o->out);
    msg_job job;
    rc = proto_job_decode(&job, q->e.payload, q->e.len, n->err, sizeof n->err)
             ? fail(n, "coordinator %s: %s", n->o->coordinator, n->err) : 0;
    drop(q);
    if (!rc && job.isa != PROTO_ANY_ISA && ops_isa_set((ops_isa)job.isa))
        rc = fail(n, "this CPU cannot run the %s kernels the run uses", ops_isa_name((ops_isa)job.isa));
    rc = rc ? rc : parse_job(n, &job);
    proto_job_free(&job);
    if (rc)
        return rc;
    if (job_load_train(&n->cfg, &n->train, n->err, sizeof n->err))
        return fail(n, "%s", n->err);
    rt_config here = {.workers = n->cfg.workers, .slowdown = n->cfg.slowdown};
    n->have_devices = 1;   /* devices_open starts by clearing them: closing them is safe */
    if (devices_open(&n->devices, &n->cfg, &here, n->o->out, n->err, sizeof n->err) ||
        chunk_engine_open(&n->e, &n->cfg, &n->train, &here, n->err, sizeof n->err))
        return fail(n, "%s", n->err);
    n->have_engine = 1;
    devices_models_load(&n->devices, n->e.rt, n->cfg.deterministic, n->o->out);
    n->ring = 4L * trainer_plan(n->e.t)->nchunks;   /* a coordinator keeps two batches' at most */
    n->works_in = 0;
    atomic_store(&n->works_done, 0);
    if (!(n->claims = calloc((size_t)n->ring, sizeof *n->claims)) ||
        !(n->ring_work = calloc((size_t)n->ring, sizeof *n->ring_work)))
        return fail(n, "out of memory for %ld chunks' claims", n->ring);
    chunk_engine_stream(&n->e, &(trainer_gradient_sink){n, send_gradient});
    start_control(n);
    frame_limits l;
    proto_limits(&l, 0, chunk_engine_nparams(&n->e), n->e.largest);
    netio_hub_set_limits(n->hub, &l);
    msg_ready r = {chunk_engine_nparams(&n->e), ""};
    devices_describe(&n->devices, r.devices, sizeof r.devices);
    uint8_t ready[8 + PROTO_TEXT];
    if (netio_hub_send(n->hub, n->peer, MSG_READY, ready, proto_ready_encode(&r, ready, sizeof ready),
                       NULL, 0))
        return n->lost = 1, fail(n, "coordinator %s lost", n->o->coordinator);
    fprintf(n->o->out, "ready: %ld images %dx%dx%d, %ld parameters; computing on %s\n",
            n->train.n, n->train.h, n->train.w, n->train.c, r.nparams, r.devices);
    fflush(n->o->out);
    return 0;
}

/* ---- serving chunks ---- */

/* Before and after each work: the sampler's latest figures, not a fresh sample (which can
 * take milliseconds, NVML's in a VM). */
static energy_reading read_meter(node_process *n)
{
    energy_reading r = {0};
    if (n->meter)
        energy_meter_latest(n->meter, &r);
    return r;
}

/* A result's machine figures: the energy so far, the power drawn while computing it (the
 * meter's total from before to after), the grid's carbon intensity now, the workers running. */
static void add_figures(node_process *n, const energy_reading *before, const energy_reading *after,
                        msg_result *r)
{
    r->joules = after->total_j;
    /* over the samples between, or over the latest sampling interval when none fell between */
    r->watts = after->t > before->t ? (after->total_j - before->total_j) / (after->t - before->t)
                                    : after->total_w;
    r->carbon_g_per_kwh = n->carbon.value;
    r->renewable_w = n->carbon.renewable_w;
    if (n->grams_at_job < 0)
        n->grams_at_job = carbon_grams(&n->carbon, before->total_j);
    r->grams = carbon_grams(&n->carbon, after->total_j) - n->grams_at_job;
    r->estimated = n->meter ? (uint32_t)energy_meter_estimated(n->meter) : 1;
    r->workers = (uint32_t)rt_active_workers(n->e.rt);
}

static void update_carbon(node_process *n, const energy_reading *now)
{
    char why[600];
    if (carbon_update(&n->carbon, now->t, now->total_j, why, sizeof why))
        fprintf(n->o->out, "energy: %s; keeping %g g CO2e/kWh\n", why, n->carbon.value);
}

/* A RESULT (no body), or a MODEL with the parameters in body. */
static int send_figures(node_process *n, uint16_t type, const msg_result *r, const void *body, size_t len)
{
    uint8_t head[112];
    if (netio_hub_send(n->hub, n->peer, type, head, proto_result_head(r, head, sizeof head),
                       body, len) && !done_queued(n))
        return n->lost = 1, fail(n, "coordinator %s lost while sending results", n->o->coordinator);
    return 0;
}

/* On the hub's thread: a WORK's claim opened in the ring. A coordinator with more chunks here
 * than the ring holds is not following the protocol: its connection is closed. */
static int register_work(node_process *n, const netio_event *e, long *work)
{
    msg_work w;
    char why[200];
    if (!n->ring || proto_work_decode(&w, e->payload, e->len, why, sizeof why))
        return 0;   /* the serving thread says what is wrong with it */
    if (n->works_in - atomic_load(&n->works_done) >= n->ring) {
        netio_hub_close(n->hub, e->peer, "more chunks sent than a coordinator keeps in flight");
        return 1;
    }
    long i = n->works_in % n->ring;
    n->ring_work[i] = w;
    atomic_store(&n->claims[i], RT_CLAIM_OPEN);
    *work = n->works_in++;
    return 0;
}

/* On the hub's thread: a RECALL answered at once, even while chunks are computing. The chunk
 * is given back only if none of its tasks has started (the claim's compare-and-swap). */
static void answer_recall(node_process *n, const netio_event *e)
{
    msg_recall r;
    char why[200];
    if (proto_recall_decode(MSG_RECALL, &r, e->payload, e->len, why, sizeof why)) {
        netio_hub_close(n->hub, e->peer, why);
        return;
    }
    for (long k = n->works_in - 1; k >= atomic_load(&n->works_done) && !r.given; k--) {
        long i = k % n->ring;
        int open = RT_CLAIM_OPEN;
        if (n->ring_work[i].seq == r.seq && n->ring_work[i].chunk == r.chunk)
            r.given = atomic_compare_exchange_strong(&n->claims[i], &open, RT_CLAIM_ELSEWHERE);
    }
    uint8_t buf[16];
    netio_hub_send(n->hub, e->peer, MSG_RECALLED, buf, proto_recall_encode(&r, buf, sizeof buf),
                   NULL, 0);
}

/* Runs a batch's chunks (their gradients leave as the backward pass makes them) and sends
 * their figures. */
static int compute(node_process *n, const msg_work *w, _Atomic int *const *claims, int count,
                   long *given)
{
    energy_reading before = read_meter(n);
    if (chunk_engine_run(&n->e, w, claims, count, n->err, sizeof n->err))
        return fail(n, "%s", n->err);
    if (atomic_load(&n->send_failed) && !done_queued(n))
        return n->lost = 1, fail(n, "coordinator %s lost while sending gradients", n->o->coordinator);
    energy_reading after = read_meter(n);
    update_carbon(n, &after);
    for (int i = 0; i < count; i++) {
        if (claims[i] && atomic_load(claims[i]) == RT_CLAIM_ELSEWHERE) {
            ++*given;   /* RECALLED said so: nothing more of it goes */
            continue;
        }
        msg_result r;
        chunk_engine_result(&n->e, &w[i], &r);   /* figures only: the gradients went as GRADs */
        add_figures(n, &before, &after, &r);
        if (send_figures(n, MSG_RESULT, &r, NULL, 0))
            return 1;
    }
    return 0;
}

/* Periodic averaging: a round of local steps from the parameters loaded, and the model after it
 * sent back. */
static int train_round(node_process *n, const queued *q)
{
    msg_round w;
    msg_result r;
    if (proto_round_decode(&w, q->e.payload, q->e.len, n->err, sizeof n->err) ||
        (n->e.late ? n->e.seq == UINT64_MAX : w.seq != n->e.seq))   /* overlapped: the engine
                                                                        checks the rounds' order */
        return fail(n, "coordinator %s: %s", n->o->coordinator,
                    n->err[0] ? n->err : "ROUND for parameters it did not send");
    energy_reading before = read_meter(n);
    if (chunk_engine_round(&n->e, &w, &r, n->err, sizeof n->err))
        return fail(n, "%s", n->err);
    energy_reading after = read_meter(n);
    update_carbon(n, &after);
    add_figures(n, &before, &after, &r);
    return send_figures(n, MSG_MODEL, &r, r.body,
                        r.grads ? sizeof(float) * r.nparams : n->e.delta_len);
}

/* PARAMS, one LAYER of them, a DELTA or an AVERAGE. */
static int load_params(node_process *n, const queued *q)
{
    chunk_engine *e = &n->e;
    uint64_t seq;
    const float *values;
    const uint8_t *body;
    msg_layer m;
    msg_delta d;
    int bad = q->e.type == MSG_AVERAGE
                  ? proto_average_decode(&seq, &body, q->e.payload, q->e.len,
                                         e->delta ? e->delta_len : sizeof(float) * (size_t)e->m.nparams,
                                         n->err, sizeof n->err) ||
                        chunk_engine_average(e, seq, body, n->err, sizeof n->err)
              : q->e.type == MSG_DELTA
                  ? proto_delta_decode(&d, q->e.payload, q->e.len, e->delta_len, n->err, sizeof n->err) ||
                        chunk_engine_delta(e, d.seq, d.base, d.body, n->err, sizeof n->err)
              : q->e.type == MSG_PARAMS
                  ? proto_params_decode(&seq, &values, q->e.payload, q->e.len, chunk_engine_nparams(e),
                                        n->err, sizeof n->err) ||
                        chunk_engine_params(e, seq, values, n->err, sizeof n->err)
                  : proto_layer_decode(MSG_LAYER, &m, q->e.payload, q->e.len, e->layer_params,
                                       e->nlayers, n->err, sizeof n->err) ||
                        chunk_engine_layer(e, m.seq, (int)m.layer, m.values, n->err, sizeof n->err);
    return bad ? fail(n, "coordinator %s: %s", n->o->coordinator, n->err) : 0;
}

/* The WORK gathered for one run of the chunk engine. */
typedef struct work_group {
    msg_work w[MAX_GROUP];
    _Atomic int *claim[MAX_GROUP];
    int count;
    long last;                   /* the arrival number of the last, -1: none registered */
    long served, given;
} work_group;

/* Where a WORK goes in the group: in place of the same chunk's earlier WORK if this node gave
 * that one back (RECALLED; the coordinator may deal it here again, when the machine it went to
 * is lost), else at the end. */
static int slot_for(work_group *g, const msg_work *w)
{
    for (int i = 0; i < g->count; i++)
        if (g->w[i].seq == w->seq && g->w[i].chunk == w->chunk && g->claim[i] &&
            atomic_load(g->claim[i]) == RT_CLAIM_ELSEWHERE) {
            g->served++, g->given++;   /* the one given back */
            return i;
        }
    return g->count;
}

/* The group computed, its ring entries released for later WORK. */
static int run_group(node_process *n, work_group *g, int rc)
{
    if (g->count && !rc)
        rc = compute(n, g->w, g->claim, g->count, &g->given);
    if (g->last >= 0)
        atomic_store(&n->works_done, g->last + 1);
    g->served += g->count, g->count = 0, g->last = -1;
    return rc;
}

/* Idle a while (nothing queued for FIGURES_EVERY_S): its grid's figures, when they changed
 * since the coordinator last had them, so that a node left out for its grid is taken back when
 * the grid turns green. */
static int say_figures(node_process *n)
{
    energy_reading now = read_meter(n);
    update_carbon(n, &now);
    if (n->carbon.value == n->said_carbon && n->carbon.renewable_w == n->said_renewable)
        return 0;
    msg_result r = {.samples = 0};
    add_figures(n, &now, &now, &r);
    n->said_carbon = n->carbon.value, n->said_renewable = n->carbon.renewable_w;
    return send_figures(n, MSG_FIGURES, &r, NULL, 0);
}

static int serve(node_process *n)
{
    work_group g = {.last = -1};
    long rounds = 0;
    for (;;) {
        int rc = 0;
        queued *first = next_event_within(n, FIGURES_EVERY_S);
        if (!first && say_figures(n))
            return 1;
        /* what is queued: parameters first apply, then WORK of that batch gathers */
        for (queued *q = first; q; q = g.count < MAX_GROUP ? next_event(n, 0) : NULL) {
            if (q->e.kind == NETIO_MESSAGE && q->e.type == MSG_WORK) {
                msg_work w;
                if (proto_work_decode(&w, q->e.payload, q->e.len, n->err, sizeof n->err) ||
                    w.seq != n->e.seq)
                    rc = fail(n, "coordinator %s: %s", n->o->coordinator,
                              n->err[0] ? n->err : "WORK for parameters it did not send");
                int i = slot_for(&g, &w);
                g.w[i] = w;
                g.claim[i] = q->work >= 0 ? &n->claims[q->work % n->ring] : NULL;
                g.count += i == g.count;
                g.last = q->work >= 0 ? q->work : g.last;
            } else if (q->e.kind == NETIO_MESSAGE && q->e.type == MSG_ROUND) {
                if (g.count)
                    rc = fail(n, "coordinator %s: a ROUND among WORK", n->o->coordinator);
                rc = rc ? rc : train_round(n, q);
                rounds += !rc;
            } else if (q->e.kind == NETIO_MESSAGE &&
                       (q->e.type == MSG_PARAMS || q->e.type == MSG_LAYER ||
                        q->e.type == MSG_DELTA || q->e.type == MSG_AVERAGE)) {
                rc = run_group(n, &g, rc);   /* the chunks of the batch before go first */
                rc = rc ? rc : load_params(n, q);
            } else {
                rc = unexpected(n, q, "training");
            }
            drop(q);
            if (rc)
                break;
        }
        rc = run_group(n, &g, rc);
        if (rc) {
            if (rounds)
                fprintf(n->o->out, "%ld rounds of local steps trained\n", rounds);
            else
                fprintf(n->o->out, "%ld chunks computed, %ld given back to the coordinator for "
                        "an idle machine\n", g.served - g.given, g.given);
            return rc < 0 ? 0 : rc;
        }
    }
}

/* One connection's life: 0 when the coordinator ended training, 1 otherwise (n->lost says
 * whether the coordinator was lost). Everything it set up is released. */
static int session(node_process *n)
{
    n->lost = 0;
    atomic_store(&n->send_failed, 0);
    int rc = connect_and_join(n);
    rc = rc ? rc : take_job(n);
    rc = rc < 0 ? 0 : rc ? rc : serve(n);
    netio_hub_stop(n->hub);
    n->hub = NULL;
    for (queued *q; (q = next_event(n, 0));)
        drop(q);
    worker_control_end(&n->control);
    memset(&n->control, 0, sizeof n->control);
    if (n->have_engine) {
        devices_models_save(&n->devices, n->e.rt, n->o->out);
        chunk_engine_close(&n->e);
    }
    n->have_engine = 0;
    if (n->have_devices)
        devices_close(&n->devices);
    n->have_devices = 0;
    free(n->claims);
    free(n->ring_work);
    n->claims = NULL, n->ring_work = NULL, n->ring = 0;
    energy_meter_close(n->meter);
    n->meter = NULL;
    dataset_free(&n->train);
    return rc;
}

int node_run(const node_options *o)
{
    node_process *n = calloc(1, sizeof *n);
    if (!n)
        return fail(NULL, "out of memory");
    n->o = o;
    carbon_init(&n->carbon, o->carbon_g_per_kwh, o->carbon_file);
    if (carbon_update(&n->carbon, 0, 0, n->err, sizeof n->err)) {
        fail(NULL, "--carbon-file: %s", n->err);
        free(n);
        return 1;
    }
    pthread_mutex_init(&n->lock, NULL);
    pthread_cond_init(&n->arrived, NULL);
    int rc;
    while ((rc = session(n)) && n->lost) {
        fprintf(o->out, "coordinator %s lost or paused: trying to rejoin for %g s\n", o->coordinator,
                o->linger_s > o->timeout_s ? o->linger_s : o->timeout_s);
        fflush(o->out);
    }
    pthread_cond_destroy(&n->arrived);
    pthread_mutex_destroy(&n->lock);
    carbon_free(&n->carbon);
    free(n);
    return rc;
}
