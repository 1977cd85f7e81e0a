/* A gossip peer's mesh: the hub's events, HELLO and MEMBERS, dialing, start and stop
 * (engine/cluster/gossip.h). Rounds are gossip_round.c's. */
#include "engine/cluster/gossip_internal.h"

#include "common/clock.h"
#include "engine/cluster/gossip_topology.h"
#include "engine/cluster/proto.h"
#include "engine/job/job_data.h"
#include "netio/key.h"

#include <sodium.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DIAL_EVERY_S 0.5

/* ---- the job's hash: what must be the same on every peer ---- */

static void hash_int(crypto_generichash_state *h, long v)
{
    int64_t x = v;
    crypto_generichash_update(h, (const uint8_t *)&x, sizeof x);
}

void gossip_job_hash(const job_config *cfg, const dataset *train, uint8_t out[GOSSIP_JOB_HASH])
{
    crypto_generichash_state h;
    crypto_generichash_init(&h, NULL, 0, GOSSIP_JOB_HASH);
    for (int i = 0; i < cfg->nlayers; i++) {
        const layer_config *l = &cfg->layers[i];
        long fields[] = {l->type, l->filters, l->size, l->stride, l->padding, l->outputs};
        for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
            hash_int(&h, fields[f]);
    }
    long rest[] = {cfg->nlayers, train->c, train->h, train->w, train->classes, cfg->batch,
                   cfg->epochs, (long)cfg->seed, (long)(cfg->lr * 1e6f), (long)(cfg->momentum * 1e6f),
                   (long)(cfg->weight_decay * 1e6f), cfg->gossip_topology, cfg->gossip_neighbours,
                   cfg->gossip_every, (long)(cfg->gossip_participation * 1e6f)};
    for (size_t f = 0; f < sizeof rest / sizeof rest[0]; f++)
        hash_int(&h, rest[f]);
    crypto_generichash_final(&h, out, GOSSIP_JOB_HASH);
}

/* ---- members and links ---- */

static gossip_member *find_member(gossip_peer *g, uint64_t id)
{
    for (int i = 0; i < g->nmembers; i++)
        if (g->members[i].id == id)
            return &g->members[i];
    return NULL;
}

static gossip_member *add_member(gossip_peer *g, uint64_t id, const char *addr)
{
    if (g->nmembers == CONFIG_MAX_PEERS)
        return NULL;
    gossip_member *m = &g->members[g->nmembers++];
    memset(m, 0, sizeof *m);
    m->id = id, m->conn = -1;
    snprintf(m->addr, sizeof m->addr, "%s", addr);
    return m;
}

static gossip_conn *conn_of(gossip_peer *g, int hub_id)
{
    for (int i = 0; i < GOSSIP_CONNS; i++)
        if (g->conns[i].used && g->conns[i].hub_id == hub_id)
            return &g->conns[i];
    return NULL;
}

static gossip_conn *new_conn(gossip_peer *g, int hub_id, int outgoing, int boot)
{
    for (int i = 0; i < GOSSIP_CONNS; i++)
        if (!g->conns[i].used) {
            g->conns[i] = (gossip_conn){1, hub_id, -1, outgoing, boot};
            return &g->conns[i];
        }
    return NULL;
}

int gossip_member_of(gossip_peer *g, int hub_id)
{
    gossip_conn *c = conn_of(g, hub_id);
    return c ? c->member : -1;
}

int gossip_send(gossip_peer *g, gossip_member *m, unsigned type, const void *head, size_t headlen,
                const void *body, size_t bodylen)
{
    if (m->conn < 0)
        return -1;
    unsigned long long bytes = FRAME_HEADER + headlen + bodylen;
    m->bytes_sent += bytes, g->bytes_sent += bytes;
    return netio_hub_send(g->hub, m->conn, (uint16_t)type, head, headlen, body, bodylen);
}

void gossip_member_gone(gossip_peer *g, gossip_member *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->gone_why, sizeof m->gone_why, fmt, ap);
    va_end(ap);
    int was_up = m->state == MEMBER_UP;
    m->state = MEMBER_GONE;
    if (m->conn >= 0) {
        gossip_conn *c = conn_of(g, m->conn);
        if (c)
            c->member = -1;
        netio_hub_close(g->hub, m->conn, m->gone_why);
        m->conn = -1;
    }
    if (was_up)
        fprintf(g->log, "gossip: peer %016llx at %s %s\n", (unsigned long long)m->id, m->addr,
                m->gone_why);
    fflush(g->log);
    pthread_cond_broadcast(&g->changed);
}

static void send_hello(gossip_peer *g, int hub_id)
{
    gossip_hello h = {GOSSIP_VERSION, {0}, g->id, "", (uint32_t)g->last_epoch, (uint32_t)g->finished_here,
                      g->round};
    memcpy(h.job, g->job_hash, GOSSIP_JOB_HASH);
    snprintf(h.addr, sizeof h.addr, "%s", g->addr);
    uint8_t buf[256];
    size_t n = gossip_hello_encode(&h, buf, sizeof buf);
    g->bytes_sent += FRAME_HEADER + n;
    netio_hub_send(g->hub, hub_id, GOSSIP_MSG_HELLO, buf, n, NULL, 0);
}

/* The members up (and this peer) to one member, or one newcomer to every member up. */
static void send_members(gossip_peer *g, gossip_member *to, const gossip_member *only)
{
    static gossip_members list;   /* locked: one at a time */
    list.n = 0;
    if (!only) {
        list.id[list.n] = g->id;
        snprintf(list.addr[list.n++], GOSSIP_ADDR, "%s", g->addr);
    }
    for (int i = 0; i < g->nmembers && list.n < CONFIG_MAX_PEERS; i++) {
        const gossip_member *m = only ? only : &g->members[i];
        if (m->state == MEMBER_UP && m != to) {
            list.id[list.n] = m->id;
            snprintf(list.addr[list.n++], GOSSIP_ADDR, "%s", m->addr);
        }
        if (only)
            break;
    }
    uint8_t buf[4 + CONFIG_MAX_PEERS * (12 + GOSSIP_ADDR)];
    size_t n = gossip_members_encode(&list, buf, sizeof buf);
    if (list.n)
        gossip_send(g, to, GOSSIP_MSG_MEMBERS, buf, n, NULL, 0);
}

/* Two links to one member (both dialed at once): both ends keep the one dialed by the lower id,
 * or the newer when one end dialed both. 1 when `c` is the one kept. */
static int keep_link(gossip_peer *g, gossip_member *m, gossip_conn *c)
{
    gossip_conn *old = m->conn >= 0 ? conn_of(g, m->conn) : NULL;
    if (!old || old == c)
        return 1;
    uint64_t by_old = old->outgoing ? g->id : m->id, by_new = c->outgoing ? g->id : m->id;
    gossip_conn *lose = by_new <= by_old ? old : c;
    lose->member = -1;
    netio_hub_close(g->hub, lose->hub_id, "a second link between two peers");
    return lose != c;
}

static void on_hello(gossip_peer *g, gossip_conn *c, const netio_event *e)
{
    gossip_hello h;
    char why[256];
    if (gossip_hello_decode(&h, e->payload, e->len, why, sizeof why)) {
        fprintf(g->log, "gossip: refused %s: %s\n", e->addr, why);
        netio_hub_close(g->hub, e->peer, why);
        return;
    }
    if (memcmp(h.job, g->job_hash, GOSSIP_JOB_HASH)) {
        fprintf(g->log, "gossip: refused %s (peer %016llx): another job (its model, optimizer, "
                "batch, epochs, seed or [gossip] settings differ)\n", e->addr, (unsigned long long)h.id);
        netio_hub_close(g->hub, e->peer, "another job: its hash differs from this peer's");
        return;
    }
    if (h.id == g->id) {
        netio_hub_close(g->hub, e->peer, "a link to itself");
        return;
    }
    gossip_member *m = find_member(g, h.id);
    if (m && m->state == MEMBER_GONE) {
        netio_hub_close(g->hub, e->peer, "a peer dropped or lost before (a restarted peer takes a new id)");
        return;
    }
    if (!m && !(m = add_member(g, h.id, h.addr))) {
        netio_hub_close(g->hub, e->peer, "too many peers");
        return;
    }
    snprintf(m->addr, sizeof m->addr, "%s", h.addr);
    m->epoch = h.epoch, m->round = m->hello_round = h.round;
    if (!keep_link(g, m, c))
        return;
    c->member = (int)(m - g->members);
    int fresh = m->state != MEMBER_UP && m->state != MEMBER_FINISHED;
    m->conn = c->hub_id, m->outgoing = c->outgoing;
    if (fresh) {
        m->state = h.finished ? MEMBER_FINISHED : MEMBER_UP;
        fprintf(g->log, "gossip: peer %016llx at %s up (epoch %u, round %llu)\n",
                (unsigned long long)m->id, m->addr, h.epoch, (unsigned long long)h.round);
        fflush(g->log);
        send_members(g, m, NULL);
        for (int i = 0; i < g->nmembers; i++)
            if (&g->members[i] != m && g->members[i].state == MEMBER_UP)
                send_members(g, &g->members[i], m);
    }
    pthread_cond_broadcast(&g->changed);
}

static void on_members(gossip_peer *g, gossip_member *from, const netio_event *e)
{
    static gossip_members list;   /* locked */
    char why[256];
    if (gossip_members_decode(&list, e->payload, e->len, why, sizeof why)) {
        gossip_member_gone(g, from, "dropped: %s", why);
        return;
    }
    for (uint32_t i = 0; i < list.n; i++)
        if (list.id[i] != g->id && !find_member(g, list.id[i]))
            add_member(g, list.id[i], list.addr[i]);   /* the dialer connects (the lower id) */
}

static void on_model_message(gossip_peer *g, gossip_member *m, const netio_event *e)
{
    gossip_model_msg msg;
    char why[256];
    if (gossip_model_decode(e->type, &msg, e->payload, e->len, g->o.nparams, why, sizeof why)) {
        gossip_member_gone(g, m, "dropped: %s", why);
        return;
    }
    if (e->type == GOSSIP_MSG_PUSH)
        gossip_on_push(g, m, &msg);
    else if (e->type == GOSSIP_MSG_STATE)
        gossip_on_state(g, m, &msg);
    else
        gossip_on_final(g, m, &msg);
}

static void on_message(gossip_peer *g, gossip_conn *c, const netio_event *e)
{
    if (c->member < 0) {
        if (e->type == GOSSIP_MSG_HELLO)
            on_hello(g, c, e);
        else
            netio_hub_close(g->hub, e->peer, "a message before HELLO");
        return;
    }
    gossip_member *m = &g->members[c->member];
    m->bytes_received += FRAME_HEADER + e->len, g->bytes_received += FRAME_HEADER + e->len;
    char text[GOSSIP_TEXT + 1], why[256];
    switch (e->type) {
    case GOSSIP_MSG_MEMBERS:
        on_members(g, m, e);
        break;
    case GOSSIP_MSG_PUSH:
    case GOSSIP_MSG_STATE:
    case GOSSIP_MSG_FINAL:
        on_model_message(g, m, e);
        break;
    case GOSSIP_MSG_STATE_ASK:
        gossip_on_state_ask(g, m);
        break;
    case GOSSIP_MSG_LEAVE:
        if (gossip_text_decode(text, sizeof text, e->payload, e->len, why, sizeof why))
            gossip_member_gone(g, m, "dropped: %s", why);
        else
            gossip_member_gone(g, m, "left: %s", text);
        break;
    default:
        gossip_member_gone(g, m, "dropped: a %s message out of turn", gossip_msg_name(e->type));
    }
}

static void on_down(gossip_peer *g, gossip_conn *c, const netio_event *e)
{
    if (c->boot >= 0)
        g->boot_dialing[c->boot] = 0;
    if (c->member >= 0) {
        gossip_member *m = &g->members[c->member];
        m->conn = -1;
        if (m->state == MEMBER_FINISHED)
            m->state = MEMBER_GONE, snprintf(m->gone_why, sizeof m->gone_why, "finished");
        else if (m->state != MEMBER_GONE)
            gossip_member_gone(g, m, "lost: %s", e->why ? e->why : "its link closed");
    }
    c->used = 0;
    pthread_cond_broadcast(&g->changed);
}

static void on_event(void *ctx, const netio_event *e)
{
    gossip_peer *g = ctx;
    pthread_mutex_lock(&g->lock);
    gossip_conn *c = conn_of(g, e->peer);
    if (e->kind == NETIO_REFUSED && c && c->outgoing) {   /* a dial that failed: tried again */
        if (c->boot >= 0 && !g->boot_warned[c->boot]++)
            fprintf(g->log, "gossip: %s not reached yet (%s): trying again every %.1f s\n",
                    g->boot[c->boot], e->why, DIAL_EVERY_S);
        on_down(g, c, e);
    } else if (e->kind == NETIO_REFUSED) {
        fprintf(g->log, "gossip: refused a connection from %s: %s\n", e->addr, e->why);
    } else if (e->kind == NETIO_UP) {
        if (!c)
            c = new_conn(g, e->peer, 0, -1);
        if (c)
            send_hello(g, e->peer);
        else
            netio_hub_close(g->hub, e->peer, "too many links");
    } else if (c && e->kind == NETIO_MESSAGE) {
        g->bytes_received += c->member < 0 ? FRAME_HEADER + e->len : 0;
        on_message(g, c, e);
    } else if (c && e->kind == NETIO_DOWN) {
        on_down(g, c, e);
    }
    fflush(g->log);
    pthread_mutex_unlock(&g->lock);
}

/* ---- dialing: the --peer addresses until they answer, and members with higher ids ---- */

static int addr_up(gossip_peer *g, const char *addr)
{
    for (int i = 0; i < g->nmembers; i++)
        if (g->members[i].state != MEMBER_KNOWN && !strcmp(g->members[i].addr, addr))
            return 1;
    return !strcmp(addr, g->addr);
}

/* Locked. */
static void dial(gossip_peer *g, const char *addr, gossip_member *m, int boot)
{
    char err[256];
    int id = netio_hub_connect(g->hub, addr, err, sizeof err);
    gossip_conn *c = id >= 0 ? new_conn(g, id, 1, boot) : NULL;
    if (id >= 0 && !c)
        netio_hub_close(g->hub, id, "too many links");
    if (boot >= 0)
        g->boot_dialing[boot] = c != NULL;
    if (m && c)
        m->conn = -1;   /* bound by its HELLO */
}

static void dial_round(gossip_peer *g, double now)
{
    for (int b = 0; b < g->nboot; b++)
        if (!g->boot_dialing[b] && now >= g->boot_next[b] && !addr_up(g, g->boot[b])) {
            g->boot_next[b] = now + DIAL_EVERY_S;
            dial(g, g->boot[b], NULL, b);
        }
    for (int i = 0; i < g->nmembers; i++) {
        gossip_member *m = &g->members[i];
        if (m->state == MEMBER_KNOWN && g->id < m->id && now >= m->next_dial) {
            m->next_dial = now + 2 * DIAL_EVERY_S;
            dial(g, m->addr, m, -1);
        }
    }
}

static void *dialer(void *arg)
{
    gossip_peer *g = arg;
    pthread_mutex_lock(&g->lock);
    while (!g->stopping) {
        dial_round(g, clock_now_s());
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000000L;
        if (ts.tv_nsec >= 1000000000L)
            ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&g->changed, &g->lock, &ts);
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

/* ---- start and stop ---- */

static int count_up(const gossip_peer *g)
{
    int n = 0;
    for (int i = 0; i < g->nmembers; i++)
        n += g->members[i].state == MEMBER_UP;
    return n;
}

/* Until [gossip] peers are up (counting this one), or one --peer answers when none is asked. */
static void wait_for_peers(gossip_peer *g)
{
    int want = g->cfg->gossip_peers ? g->cfg->gossip_peers - 1 : g->nboot ? 1 : 0;
    if (!want)
        return;
    fprintf(g->log, "gossip: waiting up to %d s for %d peer%s\n", GOSSIP_START_S, want,
            want > 1 ? "s" : "");
    fflush(g->log);
    double until = clock_now_s() + GOSSIP_START_S;
    pthread_mutex_lock(&g->lock);
    while (count_up(g) < want && clock_now_s() < until &&
           !(g->o.stop && atomic_load(g->o.stop))) {
        pthread_mutex_unlock(&g->lock);
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&g->lock);
    }
    int up = count_up(g);
    pthread_mutex_unlock(&g->lock);
    if (up < want)
        fprintf(g->log, "gossip: %d of the %d peers waited for are up after %d s: training with "
                "those (others may join at any time)\n", up, want, GOSSIP_START_S);
}

/* shard = auto: this peer's place among the ids of the peers up now. */
static int auto_shard(gossip_peer *g, job_config *cfg, dataset *train, char *err, size_t errlen)
{
    pthread_mutex_lock(&g->lock);
    int below = 0;
    for (int i = 0; i < g->nmembers; i++)
        below += g->members[i].state == MEMBER_UP && g->members[i].id < g->id;
    pthread_mutex_unlock(&g->lock);
    g->shard_index = below % cfg->shard_count;
    fprintf(g->log, "gossip: data shard %d of %d (shard = auto: this peer's place by id)\n",
            g->shard_index, cfg->shard_count);
    return job_data_shard(cfg, train, g->shard_index, cfg->shard_count, err, errlen);
}

static int open_net(gossip_peer *g, char *err, size_t errlen)
{
    g->net.timeout_s = g->o.timeout_s > 0 ? g->o.timeout_s : 10;
    g->net.on_event = on_event, g->net.ctx = g;
    gossip_limits(&g->net.limits, g->o.nparams);
    char bound[128];
    if (proto_cipher_from_env(&g->net, err, errlen) ||
        netio_key_load(g->o.key_path, g->net.key, err, errlen) ||
        !(g->hub = netio_hub_start(&g->net, err, errlen)) ||
        netio_hub_listen(g->hub, g->o.listen, bound, sizeof bound, err, errlen))
        return -1;
    const char *addr = g->o.advertise ? g->o.advertise : bound;
    if (strlen(addr) >= GOSSIP_ADDR)
        return snprintf(err, errlen, "--listen %s: an address of at most %d characters", addr,
                        GOSSIP_ADDR - 1), -1;
    memcpy(g->addr, addr, strlen(addr) + 1);
    return 0;
}

gossip_peer *gossip_start(const gossip_options *o, job_config *cfg, dataset *train, FILE *log,
                          char *err, size_t errlen)
{
    gossip_peer *g = calloc(1, sizeof *g);
    if (!g || sodium_init() < 0) {
        free(g);
        return snprintf(err, errlen, "out of memory (or libsodium cannot start)"), NULL;
    }
    g->o = *o, g->nparams = o->nparams, g->cfg = cfg, g->train = train, g->log = log, g->started_at = clock_now_s(), g->state_from = -1, g->w = 1;
    g->final_test_acc = g->final_test_loss = NAN;
    g->shard_index = cfg->shard_count ? cfg->shard_index : -1;
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->changed, NULL);
    randombytes_buf(&g->id, sizeof g->id);
    g->id |= 1;   /* never 0 */
    for (int i = 0; i < GOSSIP_MAX_BOOTSTRAP && o->peers[i]; i++)
        snprintf(g->boot[g->nboot++], GOSSIP_ADDR, "%s", o->peers[i]);
    gossip_job_hash(cfg, train, g->job_hash);
    if (open_net(g, err, errlen)) {
        gossip_stop(g, NULL);
        return NULL;
    }
    fprintf(log, "gossip: peer %016llx listening on %s; topology %s (%d neighbour%s), an exchange "
            "every %d steps, participation %.0f%%\n", (unsigned long long)g->id, g->addr,
            config_gossip_topology_name(cfg->gossip_topology), cfg->gossip_neighbours,
            cfg->gossip_neighbours > 1 ? "s" : "", cfg->gossip_every, 100 * cfg->gossip_participation);
    g->dialer_started = pthread_create(&g->dialer, NULL, dialer, g) == 0;
    wait_for_peers(g);
    if (cfg->shard_count && cfg->shard_index < 0 && auto_shard(g, cfg, train, err, errlen)) {
        gossip_stop(g, "its data shard is empty");
        return NULL;
    }
    return g;
}

void gossip_use_meter(gossip_peer *g, energy_meter *meter) { g->meter = meter; }

void gossip_use_green(gossip_peer *g, carbon_source *carbon, green_log *green)
{
    g->carbon = carbon, g->green = green;
    g->green_here = green ? green_log_machine(green, "this peer") : -1;
}

void gossip_stop(gossip_peer *g, const char *why)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    g->stopping = 1;
    for (int i = 0; why && g->hub && i < g->nmembers; i++)
        if (g->members[i].state == MEMBER_UP)
            gossip_send(g, &g->members[i], GOSSIP_MSG_LEAVE, why, strnlen(why, GOSSIP_TEXT), NULL, 0);
    for (int i = 0; g->hub && i < GOSSIP_CONNS; i++)   /* the table is the hub thread's too */
        if (g->conns[i].used)
            netio_hub_close(g->hub, g->conns[i].hub_id, why ? why : "training finished");
    pthread_cond_broadcast(&g->changed);
    pthread_mutex_unlock(&g->lock);
    if (g->dialer_started)   /* it dials no more once stopping is set */
        pthread_join(g->dialer, NULL);
    if (g->hub)
        netio_hub_stop(g->hub);
    if (g->csv)
        fclose(g->csv);
    for (int i = 0; i < g->nmembers; i++)
        free(g->members[i].final_model);
    free(g->acc);
    free(g->z);
    free(g->state_model);
    pthread_cond_destroy(&g->changed);
    pthread_mutex_destroy(&g->lock);
    sodium_memzero(&g->net.key, sizeof g->net.key);
    free(g);
}
