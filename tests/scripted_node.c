/* Scripted nodes (scripted_node.h): the hub's callback records, per connection, whether it is
 * up or gone (and why), whether the job came, and the WORKs; the test's thread waits on them. */
#include "scripted_node.h"

#include "netio/hub.h"
#include "netio/key.h"
#include "ops/cpu.h"

#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { MAX_CONNECTIONS = 256, MAX_WORKS = 64, MAX_ROUNDS = 16, MAX_SCRIPTED = 8 };

typedef struct connection {
    int up, down, job;
    char why[200];
    int nworks, nrounds;
    msg_work works[MAX_WORKS];
    msg_round rounds[MAX_ROUNDS];
} connection;

struct scripted {
    netio_hub *hub;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    connection conn[MAX_CONNECTIONS];   /* by the hub's peer id */
    int peer[MAX_SCRIPTED];             /* each node's connection */
    int nnodes;
    long nparams;
};

static void on_event(void *ctx, const netio_event *e)
{
    scripted *s = ctx;
    if (e->peer < 0 || e->peer >= MAX_CONNECTIONS)
        return;
    pthread_mutex_lock(&s->lock);
    connection *c = &s->conn[e->peer];
    char why[200];
    if (e->kind == NETIO_UP)
        c->up = 1;
    else if (e->kind == NETIO_DOWN || e->kind == NETIO_REFUSED)
        c->down = 1, snprintf(c->why, sizeof c->why, "%s", e->why ? e->why : "");
    else if (e->type == MSG_JOB)
        c->job = 1;
    else if (e->type == MSG_WORK && c->nworks < MAX_WORKS &&
             !proto_work_decode(&c->works[c->nworks], e->payload, e->len, why, sizeof why))
        c->nworks++;
    else if (e->type == MSG_ROUND && c->nrounds < MAX_ROUNDS &&
             !proto_round_decode(&c->rounds[c->nrounds], e->payload, e->len, why, sizeof why))
        c->nrounds++;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
}

/* A deadline timeout_s from now, for wait_change. */
static struct timespec deadline(double timeout_s)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    long ns = t.tv_nsec + (long)((timeout_s - (double)(long)timeout_s) * 1e9);
    t.tv_sec += (time_t)timeout_s + ns / 1000000000L;
    t.tv_nsec = ns % 1000000000L;
    return t;
}

/* Locked: waits for the next event until the deadline; 0, or -1 past it. */
static int wait_change(scripted *s, const struct timespec *until)
{
    return pthread_cond_timedwait(&s->changed, &s->lock, until) ? -1 : 0;
}

scripted *scripted_start(const char *keyfile, long nparams, long largest, char *err, size_t errlen)
{
    scripted *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->nparams = nparams;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->changed, NULL);
    netio_config nc = {.timeout_s = 10, .on_event = on_event, .ctx = s};
    proto_limits(&nc.limits, 0, nparams, largest);
    if (netio_key_load(keyfile, nc.key, err, errlen) ||
        !(s->hub = netio_hub_start(&nc, err, errlen))) {
        sodium_memzero(nc.key, sizeof nc.key);
        scripted_stop(s);
        return NULL;
    }
    sodium_memzero(nc.key, sizeof nc.key);
    return s;
}

void scripted_stop(scripted *s)
{
    if (!s)
        return;
    if (s->hub)
        netio_hub_stop(s->hub);
    pthread_cond_destroy(&s->changed);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* Connects, again while the coordinator is still starting (refusing connections): the peer id
 * once up, or -1. */
static int connect_up(scripted *s, const char *addr, char *err, size_t errlen)
{
    for (int tries = 0; tries < 100; tries++) {
        int peer = netio_hub_connect(s->hub, addr, err, errlen);
        if (peer < 0 || peer >= MAX_CONNECTIONS)
            return -1;
        pthread_mutex_lock(&s->lock);
        connection *c = &s->conn[peer];
        while (!c->up && !c->down)
            pthread_cond_wait(&s->changed, &s->lock);
        int up = c->up && !c->down;
        if (!up)
            snprintf(err, errlen, "%s: %s", addr, c->why);
        pthread_mutex_unlock(&s->lock);
        if (up)
            return peer;
        usleep(100 * 1000);
    }
    return -1;
}

static int send_join(scripted *s, int peer, int workers)
{
    msg_join j = {PROTO_VERSION, (uint32_t)workers, (uint32_t)ops_isa_supported(), "scripted", "", 0,
                  {0}, {0}};
    uint8_t buf[512];
    return netio_hub_send(s->hub, peer, MSG_JOIN, buf, proto_join_encode(&j, buf, sizeof buf),
                          NULL, 0);
}

/* Waits (10 s at most) for the coordinator's JOB on peer: whether it came; err says why not. */
static int wait_job(scripted *s, int peer, const char *addr, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->lock);
    struct timespec until = deadline(10);
    connection *c = &s->conn[peer];
    while (!c->job && !c->down && !wait_change(s, &until))
        ;
    int job = c->job;
    if (!job)
        snprintf(err, errlen, "%s: no JOB came (%s)", addr, c->why);
    pthread_mutex_unlock(&s->lock);
    return job;
}

int scripted_join_and_hang_up(scripted *s, const char *addr, char *err, size_t errlen)
{
    int peer = connect_up(s, addr, err, errlen);
    if (peer < 0 || send_join(s, peer, 1) || !wait_job(s, peer, addr, err, errlen))
        return -1;
    netio_hub_close(s->hub, peer, "hung up");
    return 0;
}

int scripted_join(scripted *s, const char *addr, int workers, char *err, size_t errlen)
{
    if (s->nnodes == MAX_SCRIPTED) {
        snprintf(err, errlen, "more than %d scripted nodes", MAX_SCRIPTED);
        return -1;
    }
    int peer = connect_up(s, addr, err, errlen);
    if (peer < 0)
        return -1;
    if (send_join(s, peer, workers)) {
        snprintf(err, errlen, "%s: cannot send JOIN", addr);
        return -1;
    }
    if (!wait_job(s, peer, addr, err, errlen))
        return -1;
    msg_ready r = {s->nparams, "cpu"};
    uint8_t buf[8 + PROTO_TEXT];
    if (netio_hub_send(s->hub, peer, MSG_READY, buf, proto_ready_encode(&r, buf, sizeof buf),
                       NULL, 0)) {
        snprintf(err, errlen, "%s: cannot send READY", addr);
        return -1;
    }
    s->peer[s->nnodes] = peer;
    err[0] = '\0';   /* the tries refused while the coordinator started are over */
    return s->nnodes++;
}

/* Waits (up to timeout_s) for node i's first WORK of chunk `chunk` (UINT32_MAX: any) of a
 * batch after `after`: 0 with it in w, or -1. */
static int wait_work(scripted *s, int i, uint32_t chunk, uint64_t after, double timeout_s,
                     msg_work *w)
{
    connection *c = &s->conn[s->peer[i]];
    struct timespec until = deadline(timeout_s);
    int found = 0;
    pthread_mutex_lock(&s->lock);
    for (int seen = 0; !found;) {
        for (; seen < c->nworks && !found; seen++)
            if ((chunk == UINT32_MAX || c->works[seen].chunk == chunk) &&
                (after == UINT64_MAX || c->works[seen].seq > after))
                *w = c->works[seen], found = 1;
        if (!found && (c->down || wait_change(s, &until)))
            break;
    }
    pthread_mutex_unlock(&s->lock);
    return found ? 0 : -1;
}

int scripted_wait_work(scripted *s, int i, uint32_t chunk, double timeout_s, msg_work *w)
{
    return wait_work(s, i, chunk, UINT64_MAX, timeout_s, w);
}

int scripted_wait_work_after(scripted *s, int i, uint64_t seq, double timeout_s, msg_work *w)
{
    return wait_work(s, i, UINT32_MAX, seq, timeout_s, w);
}

int scripted_works(scripted *s, int i, uint64_t seq, msg_work *w, int max)
{
    connection *c = &s->conn[s->peer[i]];
    int n = 0;
    pthread_mutex_lock(&s->lock);
    for (int k = 0; k < c->nworks && n < max; k++)
        if (c->works[k].seq == seq)
            w[n++] = c->works[k];
    pthread_mutex_unlock(&s->lock);
    for (int a = 1; a < n; a++)   /* chunk order */
        for (int b = a; b > 0 && w[b].chunk < w[b - 1].chunk; b--) {
            msg_work t = w[b];
            w[b] = w[b - 1], w[b - 1] = t;
        }
    return n;
}

int scripted_grad(scripted *s, int i, uint64_t seq, uint32_t chunk, uint32_t chunks, int layer,
                  long n)
{
    return scripted_grad_filled(s, i, seq, chunk, chunks, layer, n, 0);
}

int scripted_grad_filled(scripted *s, int i, uint64_t seq, uint32_t chunk, uint32_t chunks,
                         int layer, long n, float value)
{
    float *zeros = malloc(sizeof *zeros * (size_t)(n > 0 ? n : 1));
    for (long k = 0; zeros && k < n; k++)
        zeros[k] = value;
    uint8_t head[PROTO_LAYER_HEAD];
    msg_layer g = {seq, chunk, (uint32_t)layer, chunks, NULL, 0};
    int rc = !zeros || netio_hub_send(s->hub, s->peer[i], MSG_GRAD, head,
                                      proto_layer_head(&g, head, sizeof head), zeros,
                                      sizeof(float) * (size_t)n);
    free(zeros);
    return rc ? -1 : 0;
}

int scripted_result(scripted *s, int i, uint64_t seq, uint32_t chunk)
{
    msg_result r = {.seq = seq, .chunk = chunk, .samples = 4, .workers = 1};
    uint8_t head[112];
    return netio_hub_send(s->hub, s->peer[i], MSG_RESULT, head,
                          proto_result_head(&r, head, sizeof head), NULL, 0) ? -1 : 0;
}

int scripted_model(scripted *s, int i, uint64_t seq, long samples, long nparams, float value)
{
    msg_result r = {.seq = seq, .samples = (uint32_t)samples, .workers = 1, .compute_s = 0.1};
    float *body = malloc(sizeof(float) * (size_t)nparams);
    uint8_t head[112];
    for (long k = 0; body && k < nparams; k++)
        body[k] = value;
    int rc = !body || netio_hub_send(s->hub, s->peer[i], MSG_MODEL, head,
                                     proto_result_head(&r, head, sizeof head), body,
                                     sizeof(float) * (size_t)nparams);
    free(body);
    return rc ? -1 : 0;
}

int scripted_wait_down(scripted *s, int i, double timeout_s)
{
    connection *c = &s->conn[s->peer[i]];
    struct timespec until = deadline(timeout_s);
    pthread_mutex_lock(&s->lock);
    while (!c->down && !wait_change(s, &until))
        ;
    int down = c->down;
    pthread_mutex_unlock(&s->lock);
    return down ? 0 : -1;
}

int scripted_wait_rounds(scripted *s, int i, int n, double timeout_s, msg_round *r)
{
    connection *c = &s->conn[s->peer[i]];
    struct timespec until = deadline(timeout_s);
    pthread_mutex_lock(&s->lock);
    while (c->nrounds < n && !c->down && !wait_change(s, &until))
        ;
    int got = c->nrounds < n ? c->nrounds : n;
    memcpy(r, c->rounds, sizeof *r * (size_t)got);
    pthread_mutex_unlock(&s->lock);
    return got;
}

void scripted_leave(scripted *s, int i)
{
    netio_hub_close(s->hub, s->peer[i], "the test's script ends here");
}

int scripted_join_again(scripted *s, int i)
{
    return send_join(s, s->peer[i], 1) ? -1 : 0;
}
