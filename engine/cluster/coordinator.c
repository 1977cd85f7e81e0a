/* A cluster's coordinator, the session: nodes joining and leaving (the hub's events), the job
 * and its files sent to them, each ready node's messages handed to the training mode (mode.h),
 * and the run's calls passed on to it (coordinator_internal.h). */
#include "engine/cluster/coordinator_internal.h"

#include "common/input_file.h"
#include "energy/carbon.h"
#include "engine/cluster/file_hash.h"
#include "engine/cluster/proto.h"
#include "engine/job/energy_run.h"
#include "engine/placement/cluster_share.h"
#include "netio/hub.h"
#include "ops/cpu.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double coordinator_running_mean(double avg, double x)
{
    return avg > 0 ? (1 - COST_WEIGHT) * avg + COST_WEIGHT * x : x;
}

int coordinator_ready_nodes(const coordinator *c)
{
    int n = 0;
    for (int i = 0; i < c->nnodes; i++)
        n += c->nodes[i].ready && !c->nodes[i].gone;
    return n;
}

/* ---- the trace, and sending ---- */

/* The node's track in the trace, made on first use; -1 without a trace (or before attach). */
static int node_track(coordinator *c, peer_node *n)
{
    if (!c->rt || n->track < 0)
        return -1;
    if (!n->track) {
        char name[160];
        snprintf(name, sizeof name, "node %.60s (%.60s)", n->name, n->host[0] ? n->host : "joining");
        int id = rt_trace_track(c->rt, name);
        n->track = id < 0 ? -1 : id + 1;
    }
    return n->track - 1;
}

void coordinator_trace_node(coordinator *c, peer_node *n, const char *what, double start, double end)
{
    int track = node_track(c, n);
    if (track >= 0)
        rt_trace_span(c->rt, track, what, start, end);
}

/* A message to or from a node as an instant on its track (nothing to format without a trace). */
void coordinator_trace_message(coordinator *c, peer_node *n, const char *dir, unsigned type)
{
    if (node_track(c, n) < 0)
        return;
    char what[32];
    snprintf(what, sizeof what, "%s %s", dir, proto_msg_name(type));
    double t = clock_now_s();
    coordinator_trace_node(c, n, what, t, t);
}

void coordinator_count_message(coordinator *c, int dir, unsigned type, size_t payload)
{
    if (type >= MSG_TYPES)
        return;
    atomic_fetch_add(&c->traffic_msgs[dir][type], 1);
    atomic_fetch_add(&c->traffic_bytes[dir][type], (unsigned long long)netio_wire_bytes(payload));
}

int coordinator_send_to(coordinator *c, peer_node *n, uint16_t type, const void *head, size_t headlen,
            const void *body, size_t bodylen)
{
    coordinator_trace_message(c, n, "sent", type);
    if (netio_hub_send(c->hub, n->peer, type, head, headlen, body, bodylen))
        return -1;
    coordinator_count_message(c, 0, type, headlen + bodylen);
    return 0;
}

/* ---- messages from nodes (on the hub's thread) ---- */

/* A slot for a new connection: the table's next, else one whose node left before it was ready
 * (it took no part: nothing of it is reported or held by a mode). NULL: full. */
static peer_node *free_slot(coordinator *c)
{
    if (c->nnodes < MAX_NODES)
        return &c->nodes[c->nnodes++];
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i].gone && !c->nodes[i].ready)
            return &c->nodes[i];
    return NULL;
}

static peer_node *node_of(coordinator *c, int peer)
{
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i].peer == peer && !c->nodes[i].gone)
            return &c->nodes[i];
    return NULL;
}

void coordinator_weights_differ(coordinator *c, const char *why, const char *remedy)
{
    fprintf(c->log, "cluster: %s, so the weights will not be bit-identical to a run on one "
            "machine (%s)\n", why, remedy);
    if (!c->weights_why[0])
        snprintf(c->weights_why, sizeof c->weights_why, "%.399s", why);   /* (a long reason cut) */
}

/* A node may be DEADLINE_MARGIN times slower than measured (a CPU hog beside it, a busy link)
 * and at least DEADLINE_FLOOR_S late (scheduling) before it is late; never more than
 * DEADLINE_CAP_TIMEOUTS timeouts, which is also the deadline before it is measured. */
#define DEADLINE_MARGIN 4.0
#define DEADLINE_FLOOR_S 2.0
#define DEADLINE_CAP_TIMEOUTS 3.0

double coordinator_deadline(const coordinator *c, double expected_s)
{
    double cap = DEADLINE_CAP_TIMEOUTS * c->timeout_s;
    double floor_s = DEADLINE_FLOOR_S < cap ? DEADLINE_FLOOR_S : cap;
    double d = expected_s > 0 ? DEADLINE_MARGIN * expected_s : cap;
    return d < floor_s ? floor_s : d > cap ? cap : d;
}

int coordinator_stopping(coordinator *c)
{
    int stopping = c->stop && atomic_load_explicit(c->stop, memory_order_relaxed);
    if (stopping && !c->stop_seen)
        c->stop_seen = clock_now_s();
    return stopping;
}

double coordinator_due(const coordinator *c, double due)
{
    double last = c->stop_seen + c->timeout_s / 2;
    return c->stop_seen > 0 && last < due ? last : due;
}

void coordinator_refuse(coordinator *c, peer_node *n, const char *why)
{
    fprintf(c->log, "cluster: node %s refused: %s\n", n->name, why);
    netio_hub_close(c->hub, n->peer, why);
}

static void on_join(coordinator *c, peer_node *n, const uint8_t *p, size_t len)
{
    msg_join j;
    char why[200];
    if (n->workers || proto_join_decode(&j, p, len, why, sizeof why))
        return coordinator_refuse(c, n, n->workers ? "a second JOIN" : why);
    if (coordinator_admit(c, n, &j))
        return;
    if (c->cfg->deterministic && j.isa < (uint32_t)ops_isa_active())
        return coordinator_refuse(c, n, "it cannot run this run's kernel path (deterministic = on)");
    n->workers = n->running = (int)j.workers, n->isa = j.isa;
    snprintf(n->host, sizeof n->host, "%s", j.host);
    snprintf(n->energy, sizeof n->energy, "%s", j.energy);
    if (!c->cfg->deterministic && j.isa != (uint32_t)ops_isa_active()) {
        char why[300], remedy[120];
        const char *here = ops_isa_name(ops_isa_active());
        snprintf(why, sizeof why, "node %s (%s) computes with %s kernels, this machine with %s: "
                 "they round differently", n->name, n->host, ops_isa_name((ops_isa)j.isa), here);
        snprintf(remedy, sizeof remedy, "[execution] deterministic = on makes every node use %s",
                 here);
        coordinator_weights_differ(c, why, remedy);
    }
    size_t cap = 64 + c->job.text_len + c->job.overrides_len + PROTO_MAX_FILES * 600;
    uint8_t *buf = malloc(cap);
    msg_job job = c->job;
    job.isa = c->cfg->deterministic ? (uint32_t)ops_isa_active() : PROTO_ANY_ISA;
    if (!buf || coordinator_send_to(c, n, MSG_JOB, buf, proto_job_encode(&job, buf, cap), NULL, 0))
        coordinator_refuse(c, n, "cannot send it the job");
    free(buf);
}

/* The node built the model: it takes work from the next batch on. What it computes on is said,
 * and so is a device that makes its chunks round otherwise than this machine's CPU. */
static void on_ready(coordinator *c, peer_node *n, const uint8_t *p, size_t len)
{
    msg_ready r;
    char why[600];
    if (proto_ready_decode(&r, p, len, why, sizeof why) || r.nparams != c->nparams)
        return coordinator_refuse(c, n, r.nparams != c->nparams ? "its model has other parameters" : why);
    if (n->ready)
        return;
    n->ready = 1, n->grams_at = clock_now_s();
    snprintf(n->devices, sizeof n->devices, "%s", r.devices);
    netio_hub_peer_stats(c->hub, n->peer, &n->net);
    fprintf(c->log, "cluster: node %s (%s, %d workers, %s; computing on %s; traffic %s) joined\n",
            n->name, n->host, n->workers, n->energy, n->devices, n->net.cipher);
    if (strcmp(n->devices, "cpu")) {
        snprintf(why, sizeof why, "node %s (%s) computes on OpenCL devices (%s): they round "
                 "differently from CPUs", n->name, n->host, n->devices);
        coordinator_weights_differ(c, why, "frugal join --devices cpu keeps a node on its CPU");
    }
    pthread_cond_broadcast(&c->joined);
    c->mode->node_ready(c, n);
}

static void on_fetch(coordinator *c, peer_node *n, const uint8_t *p, size_t len)
{
    msg_fetch f;
    char why[200];
    if (proto_fetch_decode(&f, p, len, why, sizeof why))
        return coordinator_refuse(c, n, why);
    for (uint32_t i = 0; i < c->job.nfiles; i++) {
        const proto_file *pf = &c->job.files[i];
        if (memcmp(pf->hash, f.hash, 32) || f.offset >= pf->size)
            continue;
        size_t want = pf->size - f.offset < PROTO_FILE_PIECE ? (size_t)(pf->size - f.offset)
                                                             : PROTO_FILE_PIECE;
        uint8_t *bytes = malloc(want), head[48];
        int fd = open(c->paths[i], O_RDONLY);
        int ok = bytes && fd >= 0 && pread(fd, bytes, want, (off_t)f.offset) == (ssize_t)want;
        if (fd >= 0)
            close(fd);
        msg_file m = {.offset = f.offset, .total = pf->size};
        memcpy(m.hash, pf->hash, 32);
        if (!ok || coordinator_send_to(c, n, MSG_FILE, head, proto_file_head(&m, head, sizeof head),
                                  bytes, want))
            coordinator_refuse(c, n, "cannot send it a training file");
        free(bytes);
        return;
    }
    coordinator_refuse(c, n, "it asked for a file this run does not share");
}

/* A node is gone: what it was computing goes to the others (or the fallback). */
static void node_lost(coordinator *c, peer_node *n, const char *why)
{
    int back = c->mode->reclaim(c, n);
    if (n->inflight)
        n->active_s += clock_now_s();
    n->gone = 1, n->inflight = 0;
    netio_hub_peer_stats(c->hub, n->peer, &n->net);
    snprintf(n->left_why, sizeof n->left_why, "%s", why);
    c->lost_nodes += n->ready;
    c->resent_chunks += back;
    if (n->workers)   /* (one refused before it joined was said then) */
        fprintf(c->log, "cluster: node %s (%s) lost: %s%s\n", n->name, n->host[0] ? n->host : "?",
                why, back ? "; its unfinished chunks are computed elsewhere" : "");
    c->mode->node_lost(c, n);
}

/* Locked. A node's grid figures while it computes nothing (proto.h). */
static void on_figures(coordinator *c, peer_node *n, const uint8_t *p, size_t len)
{
    msg_result r;
    char why[200];
    if (proto_figures_decode(&r, p, len, why, sizeof why)) {
        coordinator_refuse(c, n, why);
        return;
    }
    n->carbon = r.carbon_g_per_kwh, n->renewable_w = r.renewable_w, n->grams = r.grams;
    n->grams_at = clock_now_s();
    n->joules = r.joules, n->estimated = (int)r.estimated;
}

static void on_event(void *ctx, const netio_event *e)
{
    coordinator *c = ctx;
    pthread_mutex_lock(&c->lock);
    peer_node *n = node_of(c, e->peer);
    switch (e->kind) {
    case NETIO_REFUSED:
        refusal_log_add(&c->refusals, c->log, clock_now_s(), e->addr, e->why);
        break;
    case NETIO_UP:
        if (c->stopping || !(n = free_slot(c))) {
            if (!c->stopping)
                fprintf(c->log, "cluster: connection from %s refused: %d nodes take part already\n",
                        e->addr, MAX_NODES);
            netio_hub_close(c->hub, e->peer, c->stopping ? "training is over" : "too many nodes");
            break;
        }
        memset(n, 0, sizeof *n);
        n->peer = e->peer, n->params_seq = n->layers_seq = UINT64_MAX, n->joined_at = clock_now_s() - c->start;
        n->green_index = -1;
        snprintf(n->addr, sizeof n->addr, "%s", e->addr);
        snprintf(n->name, sizeof n->name, "%s", e->addr);   /* with its identity from JOIN on */
        break;
    case NETIO_DOWN:
        if (n && c->stopping)   /* it leaves on the DONE: not lost */
            n->gone = 1;
        else if (n)
            node_lost(c, n, e->why);
        break;
    case NETIO_MESSAGE:
        coordinator_check_revoked(c);
        if (!n || n->gone)
            break;
        coordinator_trace_message(c, n, "received", e->type);
        coordinator_count_message(c, 1, e->type, e->len);
        if (e->type == MSG_JOIN)
            on_join(c, n, e->payload, e->len);
        else if (e->type == MSG_FETCH)
            on_fetch(c, n, e->payload, e->len);
        else if (e->type == MSG_READY)
            on_ready(c, n, e->payload, e->len);
        else if (e->type == MSG_FIGURES && n->ready)
            on_figures(c, n, e->payload, e->len);
        else if (!n->ready || c->mode->on_message(c, n, e))   /* the mode's messages */
            coordinator_refuse(c, n, "a message out of turn");
        break;
    }
    fflush(c->log);
    pthread_mutex_unlock(&c->lock);
}

/* ---- starting and stopping ---- */

static int hash_file(const char *path, proto_file *f, char *err, size_t errlen)
{
    snprintf(f->name, sizeof f->name, "%s", path);
    return file_hash(path, UINT64_MAX, f->hash, &f->size, err, errlen);
}

/* The job as nodes get it: the file as it is, and the --set overrides apart, one a line (a
 * comment in the file is only a comment). */
static int job_text(coordinator *c, const coordinator_options *o, char *err, size_t errlen)
{
    size_t len, olen = 0;
    char *text = input_read_all(o->job_path, CONFIG_MAX_BYTES, "job file", &len, err, errlen);
    char *over = malloc(PROTO_OVERRIDES_BYTES + 1);
    int n = 0;
    for (; text && over && o->overrides && o->overrides[n]; n++) {
        const char *s = o->overrides[n];
        if (strchr(s, '\n') || n == PROTO_MAX_OVERRIDES ||
            strlen(s) + 1 > PROTO_OVERRIDES_BYTES - olen) {
            snprintf(err, errlen, "--set %.60s: %s", s, strchr(s, '\n') ? "a line break in it"
                     : "more overrides than a cluster's job carries");
            break;
        }
        olen += (size_t)sprintf(over + olen, "%s%s", n ? "\n" : "", s);
    }
    if (!text || !over || (o->overrides && o->overrides[n])) {
        if (text && !over)
            snprintf(err, errlen, "out of memory for the job's overrides");
        free(text), free(over);
        return -1;
    }
    over[olen] = 0;
    c->job.text = text, c->job.text_len = len;
    c->job.overrides = over, c->job.overrides_len = olen;
    return 0;
}

/* The training files: IDX images and labels, or the CIFAR-10 batches. */
static int share_files(coordinator *c, char *err, size_t errlen)
{
    const job_config *cfg = c->cfg;
    char list[CONFIG_PATH * 3];
    if (cfg->format == DATA_IDX)
        snprintf(list, sizeof list, "%s,%s", cfg->train_images, cfg->train_labels);
    else
        snprintf(list, sizeof list, "%s", cfg->train_files);
    char *save = NULL;
    for (char *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        if (c->job.nfiles == PROTO_MAX_FILES) {
            snprintf(err, errlen, "more than %d training files to share", PROTO_MAX_FILES);
            return -1;
        }
        proto_file *f = &c->job.files[c->job.nfiles];
        if (hash_file(p, f, err, errlen) || !(c->paths[c->job.nfiles++] = strdup(p)))
            return -1;
    }
    return 0;
}

coordinator *coordinator_start(const coordinator_options *o, const job_config *cfg,
                               const dataset *train, rt_config *rc, FILE *log, char *err,
                               size_t errlen)
{
    coordinator *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->cfg = cfg, c->train = train, c->log = log, c->timeout_s = o->timeout_s, c->start = clock_now_s();
    c->stop = o->stop;
    c->limits = (policy_limits){cfg->policy < 0 ? POLICY_TIME : (placement_policy)cfg->policy,
                                cfg->power_budget_watts, cfg->max_slowdown, cfg->carbon_g_per_kwh};
    carbon_init(&c->carbon, cfg->carbon_g_per_kwh, cfg->carbon_file);
    if (energy_run_carbon_traces(&c->carbon, cfg, cfg->carbon_trace, cfg->renewable_trace, err,
                                 errlen)) {
        free(c);
        return NULL;
    }
    double start = carbon_trace_now(&c->carbon);
    c->deadline = cfg->deadline_at >= 0 ? cfg->deadline_at : cfg->deadline_s > 0 ? start + cfg->deadline_s : -1;
    if (cfg->all_nodes)
        fprintf(log, "placement: nodes pinned by hand ([placement] all_nodes = on): every node "
                "takes work\n");
    snprintf(c->listen_at, sizeof c->listen_at, "%s", o->listen);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->joined, NULL);
    c->mode = mode_for_job(cfg);
    void *peer_ctx = NULL;
    if ((o->allow_path && (c->allowing = 1, allow_list_load(&c->allow, o->allow_path, err, errlen))) ||
        netio_key_load(o->key_path, c->net.key, err, errlen) || job_text(c, o, err, errlen) ||
        share_files(c, err, errlen) || c->mode->open(c, &peer_ctx, err, errlen))
        goto fail;
    if (!c->weights_why[0] && rc->ndevices > 0)   /* (a mode may have said why already) */
        coordinator_weights_differ(c, "this machine computes some of its chunks on OpenCL devices and every "
                       "node on its CPU: they round differently", "devices = cpu keeps them so");
    if (rc->ndevices == RT_MAX_DEVICES) {
        snprintf(err, errlen, "no room for the cluster's worker beside %d devices", rc->ndevices);
        goto fail;
    }
    rc->devices[rc->ndevices++] = (rt_device){.kind = RT_WORKER_PEER, .name = "cluster",
                                              .ctx = peer_ctx};
    return c;
fail:
    coordinator_stop(c, NULL, 0);
    return NULL;
}

int coordinator_attach(coordinator *c, trainer *t, rt_runtime *rt, char *err, size_t errlen)
{
    c->rt = rt;
    c->nparams = trainer_nparams(t);
    c->nlayers = trainer_layer_params(t, c->layer_params);   /* the packed order of trainer.c */
    for (int l = 0, at = 0; l < c->nlayers; l++) {
        c->layer_offset[l] = at, at += (int)c->layer_params[l];
        c->param_layers += c->layer_params[l] > 0;
        c->largest = c->layer_params[l] > c->largest ? c->layer_params[l] : c->largest;
    }
    c->net.ctx = c;
    c->net.on_event = on_event;
    c->net.timeout_s = c->timeout_s;
    proto_limits(&c->net.limits, 1, c->nparams, c->largest);
    if (proto_cipher_from_env(&c->net, err, errlen))
        return -1;
    c->hub = netio_hub_start(&c->net, err, errlen);
    if (!c->hub || netio_hub_listen(c->hub, c->listen_at, c->listen, sizeof c->listen, err, errlen))
        return -1;
    fprintf(c->log, "cluster: listening on %s (nodes join with: frugal join %s --key KEYFILE); a "
            "node silent for %.0f s is lost\n", c->listen, c->listen, c->timeout_s);
    /* Under the lock the hub's thread delivers events with: a node may be ready already, and
     * its events must see the mode's state whole (TSan caught the sync mode's slots read while
     * they were being set up). */
    pthread_mutex_lock(&c->lock);
    c->t = t;
    int rc = c->mode->attach(c, err, errlen);
    fflush(c->log);
    pthread_mutex_unlock(&c->lock);
    return rc;
}

void coordinator_use_green_log(coordinator *c, green_log *g)
{
    pthread_mutex_lock(&c->lock);
    c->green = g;
    c->green_here = g ? green_log_machine(g, "coordinator") : -1;
    pthread_mutex_unlock(&c->lock);
}

/* Locked. Whether n computes for this run now: a round out (averaging), or its share of the
 * batches (synchronous) unless the policy leaves it out. */
static int node_computing(const coordinator *c, const peer_node *n)
{
    if (c->cfg->sync_every)
        return (n->rounds[0].in && !n->rounds[0].done) || (n->rounds[1].in && !n->rounds[1].done);
    return !n->sitting_out && !n->parked;
}

/* A node reports its grams with a round's result (or, computing nothing, now and then): a
 * budget counting those alone learns of a slow round's cost once it is spent (a CI run
 * overspent a 0.01 g budget so). While it computes, the grams since its report are counted at
 * its power computing (this machine's until it reports one) and its grid's intensity. */
double coordinator_node_grams(const coordinator *c, const peer_node *n, double now)
{
    if (!n->ready || n->gone || n->grams_at <= 0 || now <= n->grams_at || !node_computing(c, n))
        return n->grams;
    double watts = n->watts > 0 ? n->watts : c->local_w;
    double g_per_kwh = n->carbon > 0 ? n->carbon : c->carbon.value;
    return n->grams + watts * (now - n->grams_at) * g_per_kwh / 3.6e6;
}

double coordinator_nodes_grams(coordinator *c)
{
    pthread_mutex_lock(&c->lock);
    double g = 0, now = clock_now_s();
    for (int i = 0; i < c->nnodes; i++)
        g += coordinator_node_grams(c, &c->nodes[i], now);
    pthread_mutex_unlock(&c->lock);
    return g;
}

int coordinator_any_node_green(coordinator *c, double threshold)
{
    pthread_mutex_lock(&c->lock);
    int any = 0;
    for (int i = 0; i < c->nnodes; i++) {
        const peer_node *n = &c->nodes[i];
        any |= n->ready && !n->gone && n->samples > 0 &&
               (n->carbon <= threshold || (n->watts > 0 && n->renewable_w >= n->watts));
    }
    pthread_mutex_unlock(&c->lock);
    return any;
}

void coordinator_use_meter(coordinator *c, energy_meter *meter)
{
    pthread_mutex_lock(&c->lock);
    c->meter = meter;
    pthread_mutex_unlock(&c->lock);
}

int coordinator_wait_for(coordinator *c, int nodes, double seconds)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)seconds;
    pthread_mutex_lock(&c->lock);
    int rc = 0;
    while (coordinator_ready_nodes(c) < nodes && rc == 0)
        rc = pthread_cond_timedwait(&c->joined, &c->lock, &until);
    int got = coordinator_ready_nodes(c);
    pthread_mutex_unlock(&c->lock);
    return got;
}

void coordinator_stop(coordinator *c, const char *why, int paused)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    c->stopping = 1;
    refusal_log_flush(&c->refusals, c->log, clock_now_s());
    for (int i = 0; why && c->hub && i < c->nnodes; i++)
        if (!c->nodes[i].gone)
            netio_hub_send(c->hub, c->nodes[i].peer, paused ? MSG_PAUSED : MSG_DONE, why,
                           strlen(why), NULL, 0);
    pthread_mutex_unlock(&c->lock);
    if (c->mode_state)
        c->mode->stop(c);
    if (c->hub && why)
        usleep(100 * 1000);   /* DONE on its way before the connections close */
    netio_hub_stop(c->hub);
    sodium_memzero(c->net.key, sizeof c->net.key);
    proto_job_free(&c->job);
    for (int i = 0; i < PROTO_MAX_FILES; i++)
        free(c->paths[i]);
    allow_list_free(&c->allow);
    carbon_free(&c->carbon);
    if (c->mode_state)
        c->mode->close(c);
    pthread_cond_destroy(&c->joined);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* ---- what the run asks of its training mode ---- */

int coordinator_train_epoch(coordinator *c, int epoch, long first_batch, pass_result *out,
                            char *err, size_t errlen)
{
    return c->mode->train_epoch(c, epoch, first_batch, out, err, errlen);
}

int coordinator_extra_work(coordinator *c, rt_stats *out)
{
    pthread_mutex_lock(&c->lock);
    int some = c->mode->extra_work(c, out);
    pthread_mutex_unlock(&c->lock);
    return some;
}
