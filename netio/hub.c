#include "netio/hub.h"

#include "netio/secure.h"
#include "common/clock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_LISTEN 4
#define READ_BUDGET (8u << 20)   /* bytes read from one peer per turn: fairness among peers */
#define CLOSE_FLUSH_S 1.0        /* a peer closed by its owner gets what was queued until then */

/* Where a connection is in its life. */
typedef enum phase {
    CONNECTING,      /* ours, connect() in progress */
    AWAIT_HELLO,     /* theirs: waiting for the client's hello; ours: for the server's and header */
    AWAIT_HEADER,    /* theirs: waiting for the client's stream header */
    AWAIT_PROOF,     /* theirs: waiting for a first sealed frame (a hello can be replayed) */
    OPEN,
} phase;

typedef struct out_buf {
    struct out_buf *next;
    size_t len, off;
    uint8_t data[];
} out_buf;

typedef struct peer {
    int id, fd, ours;
    phase ph;
    char addr[64];
    char host[56];               /* addr without its port: limits are per address */
    double born;
    secure sec;
    double deadline;             /* of the handshake step in progress */
    double last_rx, last_tx;
    uint8_t small[SECURE_HELLO_BYTES + SECURE_HEADER_BYTES];   /* handshake bytes, frame length */
    size_t have, need;           /* bytes in small or frame, and how many are wanted */
    uint8_t *frame;              /* a sealed piece being received (need bytes) */
    uint8_t *msg;                /* a message being assembled from its pieces */
    size_t msg_len, msg_have;
    int sealing;                 /* a sender is sealing a message's pieces: no keepalive between */
    out_buf *head, *tail;
    size_t queued;
    char closing[160];           /* set: close at the next turn, with this reason */
    double close_by;             /* closing: what is queued goes out first, until then */
    netio_peer_stats st;
} peer;

struct netio_hub {
    netio_config cfg;
    pthread_mutex_t lock;
    pthread_mutex_t send_lock;   /* one message sealed at a time, its pieces in a row */
    pthread_t thread;
    int running, stop;
    int wake[2];
    int listen_fd[MAX_LISTEN], nlisten;
    peer **peers;                /* nslots: max_peers, and handshakes (admit) */
    int nslots;
    int next_id;
    uint8_t *opened;             /* one opened piece at a time (the hub thread's) */
};

static void wake(netio_hub *h)
{
    char c = 1;
    ssize_t rc = write(h->wake[1], &c, 1);   /* a full pipe already wakes the thread */
    (void)rc;
}

int netio_split_address(const char *addr, char *host, size_t hostlen, char *port,
                        size_t portlen, char *err, size_t errlen)
{
    const char *colon = strrchr(addr, ':');
    char *end;
    long p = colon ? strtol(colon + 1, &end, 10) : -1;
    size_t hl = colon ? (size_t)(colon - addr) : 0;
    if (!colon || !colon[1] || *end || p < 0 || p > 65535 || hl == 0 || hl >= hostlen) {
        snprintf(err, errlen, "'%s': not an address (HOST:PORT, e.g. 127.0.0.1:7070)", addr);
        return -1;
    }
    if (addr[0] == '[' && hl >= 2 && addr[hl - 1] == ']')   /* [v6]:port */
        addr++, hl -= 2;
    memcpy(host, addr, hl);
    host[hl] = 0;
    snprintf(port, portlen, "%ld", p);
    return 0;
}

static void describe(const struct sockaddr *sa, char *out, size_t n)
{
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const void *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
        snprintf(out, n, "%s:%d", host, port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in = (const void *)sa;
        inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof host);
        snprintf(out, n, "[%s]:%d", host, ntohs(in->sin6_port));
    } else {
        snprintf(out, n, "?");
    }
}

/* Non-blocking, no Nagle, and the kernel gives up on unacknowledged data after the timeout. */
static void tune_socket(netio_hub *h, int fd)
{
    int one = 1;
    unsigned ms = (unsigned)(h->cfg.timeout_s * 1000);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms);
}

/* ---- peers ---- */

static peer *find(netio_hub *h, int id)
{
    for (int i = 0; i < h->nslots; i++)
        if (h->peers[i] && h->peers[i]->id == id)
            return h->peers[i];
    return NULL;
}

/* "HOST:PORT" without its port. */
static void host_of(const char *addr, char *host, size_t n)
{
    const char *colon = strrchr(addr, ':');
    snprintf(host, n, "%.*s", (int)(colon ? colon - addr : (ptrdiff_t)strlen(addr)), addr);
}

/* Incoming connections still in their handshake: how many in all, how many from host, and
 * the oldest of them. */
static int count_handshakes(const netio_hub *h, const char *host, int *from_host, peer **oldest)
{
    int n = 0;
    *from_host = 0, *oldest = NULL;
    for (int i = 0; i < h->nslots; i++) {
        peer *p = h->peers[i];
        if (!p || p->ours || p->ph == OPEN || p->closing[0])
            continue;
        n++;
        *from_host += !strcmp(p->host, host);
        if (!*oldest || p->born < (*oldest)->born)
            *oldest = p;
    }
    return n;
}

/* Peers that hold one of max_peers places: ours, and theirs once authenticated. */
static int count_peers(const netio_hub *h)
{
    int n = 0;
    for (int i = 0; i < h->nslots; i++)
        n += h->peers[i] && (h->peers[i]->ours || h->peers[i]->ph == OPEN);
    return n;
}

/* When the handshake step in progress must be done: theirs are short, so that a silent
 * stranger soon gives its place back; ours may cross a slow network. */
static double step_deadline(const netio_hub *h, const peer *p)
{
    return clock_now_s() + (p->ours ? h->cfg.timeout_s : h->cfg.handshake_s);
}

static peer *add_peer(netio_hub *h, int fd, int ours, const char *addr)
{
    if (ours && count_peers(h) >= h->cfg.max_peers)
        return NULL;
    for (int i = 0; i < h->nslots; i++) {
        if (h->peers[i])
            continue;
        peer *p = calloc(1, sizeof *p);
        if (!p || secure_init(&p->sec, h->cfg.key, !ours, !h->cfg.no_aes)) {
            free(p);
            return NULL;
        }
        double now = clock_now_s();
        p->id = h->next_id++, p->fd = fd, p->ours = ours;
        p->ph = ours ? CONNECTING : AWAIT_HELLO;
        p->need = ours ? SECURE_HELLO_BYTES + SECURE_HEADER_BYTES : SECURE_HELLO_BYTES;
        p->deadline = step_deadline(h, p);
        p->last_rx = p->last_tx = p->born = now;
        snprintf(p->addr, sizeof p->addr, "%s", addr);
        host_of(addr, p->host, sizeof p->host);
        tune_socket(h, fd);
        h->peers[i] = p;
        return p;
    }
    return NULL;
}

static void free_peer(netio_hub *h, peer *p)
{
    for (int i = 0; i < h->nslots; i++)
        if (h->peers[i] == p)
            h->peers[i] = NULL;
    close(p->fd);
    for (out_buf *b = p->head, *n; b; b = n) {
        n = b->next;
        free(b);
    }
    free(p->frame);
    free(p->msg);
    secure_wipe(&p->sec);
    free(p);
}

/* Raw bytes (handshake) or a sealed frame (after it) at the end of p's queue. Locked. */
static int enqueue(netio_hub *h, peer *p, const void *bytes, size_t len, out_buf *sealed)
{
    out_buf *b = sealed ? sealed : malloc(sizeof *b + len);
    if (!b)
        return -1;
    if (!sealed) {
        memcpy(b->data, bytes, len);
        b->len = len;
    }
    b->off = 0, b->next = NULL;
    if (p->queued + b->len > h->cfg.max_queued) {
        free(b);
        snprintf(p->closing, sizeof p->closing, "more than %zu bytes waiting to be sent to it "
                 "(it does not keep up)", h->cfg.max_queued);
        return -1;
    }
    p->queued += b->len;
    if (p->tail)
        p->tail->next = b;
    else
        p->head = b;
    p->tail = b;
    return 0;
}

/* Piece `at` of a message (header, head, body as one stream of bytes) into out: its length. */
static size_t gather_piece(const uint8_t header[FRAME_HEADER], const uint8_t *head, size_t headlen,
                           const uint8_t *body, size_t bodylen, size_t at, uint8_t *out)
{
    const uint8_t *part[3] = {header, head, body};
    size_t len[3] = {FRAME_HEADER, headlen, bodylen}, n = 0, start = 0;
    for (int i = 0; i < 3 && n < FRAME_PIECE; start += len[i++]) {
        if (at + n >= start + len[i])
            continue;
        size_t off = at + n - start, take = len[i] - off;
        take = take < FRAME_PIECE - n ? take : FRAME_PIECE - n;
        memcpy(out + n, part[i] + off, take);
        n += take;
    }
    return n;
}

/* Seals `plain` into a wire buffer: length, then the sealed piece. */
static out_buf *seal_piece(secure_stream *push, const uint8_t *plain, size_t len)
{
    uint32_t sealed = (uint32_t)(len + SECURE_OVERHEAD);
    out_buf *b = malloc(sizeof *b + 4 + sealed);
    if (!b)
        return NULL;
    b->data[0] = (uint8_t)(sealed >> 24), b->data[1] = (uint8_t)(sealed >> 16);
    b->data[2] = (uint8_t)(sealed >> 8), b->data[3] = (uint8_t)sealed;
    secure_seal(push, plain, len, b->data + 4);
    b->len = 4 + (size_t)sealed;
    return b;
}

/* The transport's keepalive, sealed and queued. Locked. */
static int send_ping(netio_hub *h, peer *p)
{
    uint8_t header[FRAME_HEADER];
    frame_header(header, FRAME_PING, 0);
    out_buf *b = seal_piece(&p->sec.push, header, sizeof header);
    p->last_tx = clock_now_s();
    return b ? enqueue(h, p, NULL, 0, b) : -1;
}

/* Each piece is sealed outside the hub's lock, with a copy of the peer's stream state stored
 * back as the piece is queued, so the hub thread sends (and the peer opens) the first pieces
 * while the next ones are sealed. The peer may be dropped meanwhile: it is found again by id. */
int netio_hub_send(netio_hub *h, int id, uint16_t type, const void *head, size_t headlen,
                   const void *body, size_t bodylen)
{
    size_t total = FRAME_HEADER + headlen + bodylen;
    uint8_t header[FRAME_HEADER], *plain = malloc(FRAME_PIECE);
    if (!plain || total - FRAME_HEADER > UINT32_MAX) {
        free(plain);
        return -1;
    }
    frame_header(header, type, (uint32_t)(headlen + bodylen));
    secure_stream push;
    int rc = 0;
    pthread_mutex_lock(&h->send_lock);
    for (size_t at = 0; at < total && !rc;) {
        pthread_mutex_lock(&h->lock);
        peer *p = find(h, id);
        rc = !p || p->ph != OPEN || p->closing[0] ? -1 : 0;
        if (!rc)
            push = p->sec.push, p->sealing = 1;
        pthread_mutex_unlock(&h->lock);
        if (rc)
            break;
        size_t len = gather_piece(header, head, headlen, body, bodylen, at, plain);
        out_buf *b = seal_piece(&push, plain, len);
        at += len;
        pthread_mutex_lock(&h->lock);
        if ((p = find(h, id))) {
            p->sec.push = push, p->sealing = at < total;
            p->last_tx = clock_now_s();
            rc = b ? enqueue(h, p, NULL, 0, b) : -1;
            if (rc && !p->closing[0])   /* half a message sent: the connection cannot go on */
                snprintf(p->closing, sizeof p->closing, "out of memory for a message to it");
        } else {
            free(b);
            rc = -1;
        }
        pthread_mutex_unlock(&h->lock);
        wake(h);
    }
    pthread_mutex_unlock(&h->send_lock);
    sodium_memzero(&push, sizeof push);
    free(plain);
    return rc;
}

void netio_hub_close(netio_hub *h, int id, const char *why)
{
    pthread_mutex_lock(&h->lock);
    peer *p = find(h, id);
    if (p && !p->closing[0]) {
        snprintf(p->closing, sizeof p->closing, "%s", why);
        p->close_by = clock_now_s() + CLOSE_FLUSH_S;
    }
    pthread_mutex_unlock(&h->lock);
    wake(h);
}

size_t netio_wire_bytes(size_t payload)
{
    size_t total = FRAME_HEADER + payload, pieces = (total + FRAME_PIECE - 1) / FRAME_PIECE;
    return total + pieces * (4 + SECURE_OVERHEAD);
}

int netio_hub_peer_stats(netio_hub *h, int id, netio_peer_stats *out)
{
    pthread_mutex_lock(&h->lock);
    peer *p = find(h, id);
    if (p)
        *out = p->st;
    pthread_mutex_unlock(&h->lock);
    return p ? 0 : -1;
}

int netio_hub_peer_binding(netio_hub *h, int id, uint8_t out[NETIO_BINDING_BYTES])
{
    pthread_mutex_lock(&h->lock);
    peer *p = find(h, id);
    int ok = p && p->ph == OPEN;
    if (ok)
        secure_binding(&p->sec, out);
    pthread_mutex_unlock(&h->lock);
    return ok ? 0 : -1;
}

void netio_hub_set_limits(netio_hub *h, const frame_limits *l)
{
    pthread_mutex_lock(&h->lock);
    h->cfg.limits = *l;
    pthread_mutex_unlock(&h->lock);
}

/* ---- the thread: events are collected under the lock and delivered without it ---- */

typedef struct pending_event {
    netio_event e;
    char addr[64], why[200];
    void *block;                 /* owned (holding e.payload) until a callback keeps it */
} pending_event;

typedef struct event_list {
    pending_event *ev;
    int n, cap;
} event_list;

/* An event for the callback; its payload lies in `block` (NULL for none), which is taken over.
 * 0, or -1 when out of memory (the event is lost, block freed). */
static int post(event_list *l, netio_event_kind kind, const peer *p, const char *addr,
                const char *why, uint16_t type, const uint8_t *payload, size_t len, void *block)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        pending_event *ev = realloc(l->ev, sizeof *ev * (size_t)cap);
        if (!ev) {
            free(block);
            return -1;
        }
        l->ev = ev, l->cap = cap;
    }
    pending_event *pe = &l->ev[l->n++];
    memset(pe, 0, sizeof *pe);
    snprintf(pe->addr, sizeof pe->addr, "%s", p ? p->addr : addr);
    snprintf(pe->why, sizeof pe->why, "%s", why ? why : "");
    pe->block = block;
    pe->e = (netio_event){kind, p ? p->id : -1, pe->addr, type, payload, len, pe->why, NULL};
    return 0;
}

static void deliver(netio_hub *h, event_list *l)
{
    for (int i = 0; i < l->n; i++) {
        pending_event *pe = &l->ev[i];   /* the list no longer moves: pointers into it hold */
        pe->e.addr = pe->addr, pe->e.why = pe->why, pe->e.block_ = &pe->block;
        h->cfg.on_event(h->cfg.ctx, &pe->e);
        free(pe->block);
    }
    l->n = 0;
}

void *netio_event_keep(const netio_event *e)
{
    void *block = e->block_ ? *e->block_ : NULL;
    if (e->block_)
        *e->block_ = NULL;
    return block;
}

/* Ends a connection: DOWN for a peer that was up, REFUSED for one still in its handshake. */
static void drop(netio_hub *h, peer *p, const char *why, event_list *ev)
{
    int was_up = p->ph == OPEN;
    post(ev, was_up ? NETIO_DOWN : NETIO_REFUSED, p, NULL, why, 0, NULL, 0, NULL);
    free_peer(h, p);
}

/* Authenticated: a peer, if one of max_peers places is free. 0, or -1 with why. */
static int became_open(netio_hub *h, peer *p, event_list *ev, char *why, size_t whylen)
{
    if (!p->ours && count_peers(h) >= h->cfg.max_peers) {
        snprintf(why, whylen, "too many peers (at most %d)", h->cfg.max_peers);
        return -1;
    }
    snprintf(p->st.cipher, sizeof p->st.cipher, "%s", secure_cipher(&p->sec));
    p->ph = OPEN;
    post(ev, NETIO_UP, p, NULL, NULL, 0, NULL, 0, NULL);
    return 0;
}

/* A whole handshake step arrived in p->small. 0, or -1 with why. */
static int handshake_step(netio_hub *h, peer *p, event_list *ev, const char **why)
{
    uint8_t out[SECURE_HELLO_BYTES + SECURE_HEADER_BYTES];
    p->have = 0;
    p->deadline = step_deadline(h, p);
    if (p->ph == AWAIT_HELLO && !p->ours) {   /* theirs: the client's hello */
        if (secure_check_hello(&p->sec, p->small, why))
            return -1;
        secure_hello(&p->sec, out);
        secure_push_header(&p->sec, out + SECURE_HELLO_BYTES);
        p->ph = AWAIT_HEADER, p->need = SECURE_HEADER_BYTES;
        return enqueue(h, p, out, sizeof out, NULL);
    }
    if (p->ph == AWAIT_HELLO) {               /* ours: the server's hello and header */
        if (secure_check_hello(&p->sec, p->small, why) ||
            secure_pull_header(&p->sec, p->small + SECURE_HELLO_BYTES)) {
            if (!**why)
                *why = "bad stream header";
            return -1;
        }
        secure_push_header(&p->sec, out);
        if (enqueue(h, p, out, SECURE_HEADER_BYTES, NULL))
            return -1;
        p->need = 4;
        became_open(h, p, ev, NULL, 0);   /* ours: always a place (add_peer) */
        return send_ping(h, p);   /* proof that we are live */
    }
    if (secure_pull_header(&p->sec, p->small)) {   /* theirs: the client's stream header */
        *why = "bad stream header";
        return -1;
    }
    p->ph = AWAIT_PROOF, p->need = 4;
    return 0;
}

/* A message whole: checked (its bounds are those of now), then delivered. block: msg's own
 * allocation, taken over (NULL: msg, one piece in the hub's buffer, is copied). 0, or -1 with
 * why: a message that cannot be delivered ends the connection, it is not skipped. */
static int message_arrived(netio_hub *h, peer *p, const uint8_t *msg, size_t len, void *block,
                           event_list *ev, char *why, size_t whylen)
{
    uint16_t type;
    const uint8_t *payload;
    size_t plen;
    if (frame_check(msg, len, &h->cfg.limits, &type, &payload, &plen, why, whylen)) {
        free(block);
        return -1;
    }
    if (p->ph == AWAIT_PROOF && became_open(h, p, ev, why, whylen)) {
        free(block);
        return -1;
    }
    if (type == FRAME_PING) {
        free(block);
        return 0;
    }
    if (!block && plen && (block = malloc(plen)))
        payload = memcpy(block, payload, plen);
    if ((plen && !block) || post(ev, NETIO_MESSAGE, p, NULL, NULL, type, payload, plen, block)) {
        snprintf(why, whylen, "out of memory for a message of %zu bytes from it", plen);
        return -1;
    }
    return 0;
}

/* ---- the hub thread's system calls and decryption, run without the lock ----
 * A sender takes the lock for each piece it seals, and would otherwise wait while the hub thread
 * decrypts a long message or copies bytes in and out of the kernel (on a coordinator, every
 * node's gradients). This is safe because only the hub thread frees a peer or touches what these
 * use: its socket, the piece being received, the message it completes, the pull stream and the
 * buffer at the head of its queue (senders append at the tail). */

static ssize_t recv_unlocked(netio_hub *h, int fd, void *buf, size_t len)
{
    pthread_mutex_unlock(&h->lock);
    ssize_t r = recv(fd, buf, len, 0);
    int e = errno;
    pthread_mutex_lock(&h->lock);
    errno = e;
    return r;
}

static ssize_t send_unlocked(netio_hub *h, int fd, const void *buf, size_t len)
{
    pthread_mutex_unlock(&h->lock);
    ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);
    int e = errno;
    pthread_mutex_lock(&h->lock);
    errno = e;
    return w;
}

static int open_unlocked(netio_hub *h, peer *p, uint8_t *out)
{
    pthread_mutex_unlock(&h->lock);
    int rc = secure_open(&p->sec, p->frame, p->need, out);
    pthread_mutex_lock(&h->lock);
    return rc;
}

/* A message's first piece (opened): the message whole, or the start of a longer one (its
 * header checked before the rest is stored). 0, or -1 with why. */
static int first_piece(netio_hub *h, peer *p, size_t len, event_list *ev, char *why,
                       size_t whylen)
{
    uint16_t type;
    uint32_t plen;
    if (len < FRAME_HEADER)
        return message_arrived(h, p, h->opened, len, NULL, ev, why, whylen);   /* says why */
    if (frame_check_header(h->opened, &h->cfg.limits, &type, &plen, why, whylen))
        return -1;
    if (len >= FRAME_HEADER + (size_t)plen)
        return message_arrived(h, p, h->opened, len, NULL, ev, why, whylen);
    if (len < FRAME_PIECE) {
        snprintf(why, whylen, "a message of %u bytes whose first piece holds %zu", plen,
                 len - FRAME_HEADER);
        return -1;
    }
    if (!(p->msg = malloc(FRAME_HEADER + (size_t)plen))) {
        snprintf(why, whylen, "out of memory for a message of %u bytes", plen);
        return -1;
    }
    memcpy(p->msg, h->opened, len);
    p->msg_len = FRAME_HEADER + (size_t)plen, p->msg_have = len;
    return 0;
}

/* A whole sealed piece arrived: opened, a first piece into the hub's buffer, a further one
 * straight into its message, which then goes to the callback without a copy. 0, or -1 with
 * why. */
static int piece_arrived(netio_hub *h, peer *p, event_list *ev, char *why, size_t whylen)
{
    size_t len = p->need - SECURE_OVERHEAD;
    int further = p->msg != NULL;
    if (further && len > p->msg_len - p->msg_have) {
        snprintf(why, whylen, "a piece beyond the end of its message");
        return -1;
    }
    int rc = open_unlocked(h, p, further ? p->msg + p->msg_have : h->opened);
    free(p->frame);
    p->frame = NULL;
    p->have = 0, p->need = 4;
    if (rc) {
        snprintf(why, whylen, "a message that fails authentication (corrupted, forged or replayed)");
        return -1;
    }
    if (!further)
        return first_piece(h, p, len, ev, why, whylen);
    p->msg_have += len;
    if (p->msg_have < p->msg_len)
        return 0;
    uint8_t *msg = p->msg;
    p->msg = NULL;
    return message_arrived(h, p, msg, p->msg_len, msg, ev, why, whylen);
}

/* Reads what p has sent, step by step. 0, or -1 with why (then p is to be dropped). */
static int read_peer(netio_hub *h, peer *p, event_list *ev, char *why, size_t whylen)
{
    size_t budget = READ_BUDGET;
    while (budget > 0) {
        int in_frame = p->frame != NULL;
        uint8_t *dst = in_frame ? p->frame : p->small;
        ssize_t r = recv_unlocked(h, p->fd, dst + p->have, p->need - p->have);
        if (r == 0) {   /* ours, in the handshake: the other end refused it */
            snprintf(why, whylen, "%s", p->ours && p->ph != OPEN
                     ? "the other end closed the connection during the handshake (a wrong key is "
                       "the likely cause)" : "connection closed by the peer");
            return -1;
        }
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return 0;
            snprintf(why, whylen, "%s", strerror(errno));
            return -1;
        }
        p->have += (size_t)r, p->st.received += (uint64_t)r, budget -= (size_t)r < budget ? (size_t)r : budget;
        p->last_rx = clock_now_s();
        if (p->have < p->need)
            continue;
        const char *hw = "";
        if (p->ph == AWAIT_HELLO || p->ph == AWAIT_HEADER) {
            if (handshake_step(h, p, ev, &hw)) {
                snprintf(why, whylen, "handshake: %s", hw[0] ? hw : "out of memory");
                return -1;
            }
        } else if (in_frame) {
            if (piece_arrived(h, p, ev, why, whylen))
                return -1;
        } else {   /* a frame's length */
            size_t n = (size_t)p->small[0] << 24 | (size_t)p->small[1] << 16 |
                       (size_t)p->small[2] << 8 | p->small[3];
            if (n <= SECURE_OVERHEAD || n > FRAME_PIECE + SECURE_OVERHEAD) {
                snprintf(why, whylen, "a frame of %zu bytes (at most %u)", n,
                         FRAME_PIECE + SECURE_OVERHEAD);
                return -1;
            }
            if (!(p->frame = malloc(n))) {
                snprintf(why, whylen, "out of memory for a frame of %zu bytes", n);
                return -1;
            }
            p->have = 0, p->need = n;
        }
    }
    return 0;
}

static int write_peer(netio_hub *h, peer *p, char *why, size_t whylen)
{
    while (p->head) {
        out_buf *b = p->head;
        ssize_t w = send_unlocked(h, p->fd, b->data + b->off, b->len - b->off);
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return 0;
            snprintf(why, whylen, "%s", strerror(errno));
            return -1;
        }
        b->off += (size_t)w, p->st.sent += (uint64_t)w;
        if (b->off < b->len)
            continue;
        p->queued -= b->len;
        p->head = b->next;
        if (!p->head)
            p->tail = NULL;
        free(b);
    }
    return 0;
}

/* A connection we started became writable: connected, or failed. */
static int connected(netio_hub *h, peer *p, char *why, size_t whylen)
{
    int e = 0;
    socklen_t len = sizeof e;
    if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &e, &len) || e) {
        snprintf(why, whylen, "cannot connect: %s", strerror(e ? e : errno));
        return -1;
    }
    uint8_t hello[SECURE_HELLO_BYTES];
    secure_hello(&p->sec, hello);
    p->ph = AWAIT_HELLO;
    p->deadline = step_deadline(h, p);
    return enqueue(h, p, hello, sizeof hello, NULL);
}

/* Whether a connection from addr may start its handshake: NULL, or why not. With every
 * handshake place taken, the oldest gives way (a real peer needs a round trip or two; a
 * stranger who holds places must keep opening connections, and loses the oldest). */
static const char *admit(netio_hub *h, const char *addr)
{
    static _Thread_local char why[96];
    char host[56];
    host_of(addr, host, sizeof host);
    int from_host;
    peer *oldest;
    int n = count_handshakes(h, host, &from_host, &oldest);
    if (from_host >= h->cfg.max_per_address) {
        snprintf(why, sizeof why, "more than %d handshakes at once from %s",
                 h->cfg.max_per_address, host);
        return why;
    }
    if (n >= h->cfg.max_handshakes && oldest)   /* closed at the next turn (still polled now) */
        snprintf(oldest->closing, sizeof oldest->closing,
                 "handshake given up for a newer connection (%d at once)", n);
    return NULL;
}

/* At most max_handshakes a turn (the rest wait in the kernel's queue), so that the places of
 * those that gave way, freed at the next turn, are enough. */
static void accept_all(netio_hub *h, int lfd, event_list *ev)
{
    for (int turn = 0; turn < h->cfg.max_handshakes; turn++) {
        struct sockaddr_storage sa;
        socklen_t len = sizeof sa;
        int fd = accept(lfd, (struct sockaddr *)&sa, &len);
        if (fd < 0)
            return;
        char addr[64];
        describe((struct sockaddr *)&sa, addr, sizeof addr);
        const char *why = admit(h, addr);
        if (why || !add_peer(h, fd, 0, addr)) {
            close(fd);
            post(ev, NETIO_REFUSED, NULL, addr, why ? why : "too many connections", 0, NULL, 0, NULL);
        }
    }
}

/* Deadlines and keepalives; returns how long poll may sleep (ms). A keepalive goes out after a
 * quarter of the timeout in silence, and at least every second, so that a peer configured with
 * a shorter timeout than ours (down to about 1.5 s) still hears from us. */
static int check_times(netio_hub *h, event_list *ev)
{
    double now = clock_now_s(), t = h->cfg.timeout_s, ka = t / 4 < 1 ? t / 4 : 1, next = now + ka;
    char why[160];
    for (int i = 0; i < h->nslots; i++) {
        peer *p = h->peers[i];
        if (!p)
            continue;
        if (p->closing[0] && !(p->head && now < p->close_by)) {
            drop(h, p, p->closing, ev);
            continue;
        }
        if (p->closing[0])
            continue;   /* its last messages are going out (netio_hub_close) */
        if (p->ph != OPEN && now > p->deadline) {
            snprintf(why, sizeof why, "%s not done within %.1f s",
                     p->ph == CONNECTING ? "connecting" : "handshake",
                     p->ours ? t : h->cfg.handshake_s);
            drop(h, p, why, ev);
            continue;
        }
        if (p->ph == OPEN && now - p->last_rx > t) {
            snprintf(why, sizeof why, "nothing received for %.1f s (timeout)", now - p->last_rx);
            drop(h, p, why, ev);
            continue;
        }
        if (p->ph == OPEN && now - p->last_tx > ka && !p->sealing)
            send_ping(h, p);
        double due = p->ph == OPEN ? p->last_rx + t : p->deadline;
        if (p->ph == OPEN && p->last_tx + ka < due)
            due = p->last_tx + ka;
        if (due < next)
            next = due;
    }
    double ms = (next - now) * 1000 + 1;
    return ms < 1 ? 1 : ms > 1000 ? 1000 : (int)ms;
}

static void *hub_main(void *arg)
{
    netio_hub *h = arg;
    int cap = 1 + MAX_LISTEN + h->nslots;
    struct pollfd *fds = calloc((size_t)cap, sizeof *fds);
    peer **who = calloc((size_t)cap, sizeof *who);
    event_list ev = {0};
    char why[200];
    pthread_mutex_lock(&h->lock);
    while (!h->stop && fds && who) {
        int timeout = check_times(h, &ev), n = 0;
        fds[n++] = (struct pollfd){h->wake[0], POLLIN, 0};
        for (int i = 0; i < h->nlisten; i++)
            who[n] = NULL, fds[n++] = (struct pollfd){h->listen_fd[i], POLLIN, 0};
        for (int i = 0; i < h->nslots; i++) {
            peer *p = h->peers[i];
            if (!p)
                continue;
            short want = p->ph == CONNECTING ? POLLOUT : (short)(POLLIN | (p->head ? POLLOUT : 0));
            who[n] = p, fds[n++] = (struct pollfd){p->fd, want, 0};
        }
        pthread_mutex_unlock(&h->lock);
        deliver(h, &ev);
        poll(fds, (nfds_t)n, ev.n ? 0 : timeout);
        pthread_mutex_lock(&h->lock);
        if (fds[0].revents) {
            char drain[64];
            while (read(h->wake[0], drain, sizeof drain) > 0) {
            }
        }
        for (int i = 1; i < n; i++) {
            if (!fds[i].revents)
                continue;
            peer *p = who[i];
            if (!p) {
                accept_all(h, fds[i].fd, &ev);
                continue;
            }
            why[0] = 0;
            int bad = 0;
            if (p->ph == CONNECTING)
                bad = connected(h, p, why, sizeof why);
            else if (fds[i].revents & (POLLIN | POLLHUP | POLLERR))
                bad = read_peer(h, p, &ev, why, sizeof why);
            if (!bad && p->head)
                bad = write_peer(h, p, why, sizeof why);
            if (bad)
                drop(h, p, why[0] ? why : p->closing[0] ? p->closing : "out of memory", &ev);
        }
    }
    for (int i = 0; i < h->nslots; i++)
        if (h->peers[i])
            free_peer(h, h->peers[i]);
    pthread_mutex_unlock(&h->lock);
    for (int i = 0; i < ev.n; i++)
        free(ev.ev[i].block);
    free(ev.ev);
    free(fds);
    free(who);
    return NULL;
}

/* ---- starting, listening, connecting ---- */

netio_hub *netio_hub_start(const netio_config *cfg, char *err, size_t errlen)
{
    netio_hub *h = calloc(1, sizeof *h);
    if (!h || sodium_init() < 0) {
        snprintf(err, errlen, h ? "libsodium cannot start" : "out of memory");
        free(h);
        return NULL;
    }
    h->cfg = *cfg;
    if (h->cfg.timeout_s <= 0)
        h->cfg.timeout_s = 10;
    if (!h->cfg.max_queued)
        h->cfg.max_queued = 64u << 20;
    if (h->cfg.max_peers <= 0)
        h->cfg.max_peers = 64;
    if (h->cfg.max_handshakes <= 0)
        h->cfg.max_handshakes = 64;
    if (h->cfg.max_per_address <= 0)
        h->cfg.max_per_address = 8;
    if (h->cfg.handshake_s <= 0)
        h->cfg.handshake_s = h->cfg.timeout_s < 5 ? h->cfg.timeout_s : 5;
    h->nslots = h->cfg.max_peers + 2 * h->cfg.max_handshakes;   /* those giving way, too */
    h->wake[0] = h->wake[1] = -1;
    pthread_mutex_init(&h->lock, NULL);
    pthread_mutex_init(&h->send_lock, NULL);
    h->peers = calloc((size_t)h->nslots, sizeof *h->peers);
    h->opened = malloc(FRAME_PIECE);
    if (!h->peers || !h->opened || pipe2(h->wake, O_NONBLOCK | O_CLOEXEC) ||
        pthread_create(&h->thread, NULL, hub_main, h)) {
        snprintf(err, errlen, "cannot start the network thread: %s", strerror(errno));
        h->running = 0;
        netio_hub_stop(h);
        return NULL;
    }
    h->running = 1;
    return h;
}

void netio_hub_stop(netio_hub *h)
{
    if (!h)
        return;
    if (h->running) {
        pthread_mutex_lock(&h->lock);
        h->stop = 1;
        pthread_mutex_unlock(&h->lock);
        wake(h);
        pthread_join(h->thread, NULL);
    }
    for (int i = 0; i < h->nlisten; i++)
        close(h->listen_fd[i]);
    if (h->wake[0] >= 0)
        close(h->wake[0]), close(h->wake[1]);
    pthread_mutex_destroy(&h->lock);
    pthread_mutex_destroy(&h->send_lock);
    sodium_memzero(h->cfg.key, sizeof h->cfg.key);
    free(h->peers);
    free(h->opened);
    free(h);
}

static struct addrinfo *resolve(const char *addr, int passive, char *err, size_t errlen)
{
    char host[256], port[8];
    if (netio_split_address(addr, host, sizeof host, port, sizeof port, err, errlen))
        return NULL;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = passive ? AI_PASSIVE : 0}, *res = NULL;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc) {
        snprintf(err, errlen, "%s: %s", addr, gai_strerror(rc));
        return NULL;
    }
    return res;
}

int netio_hub_listen(netio_hub *h, const char *addr, char *bound, size_t boundlen, char *err,
                     size_t errlen)
{
    struct addrinfo *res = resolve(addr, 1, err, errlen);
    if (!res)
        return -1;
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) || listen(fd, 16)) {
        snprintf(err, errlen, "cannot listen on %s: %s", addr, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &len);
    describe((struct sockaddr *)&sa, bound, boundlen);
    pthread_mutex_lock(&h->lock);
    int ok = h->nlisten < MAX_LISTEN;
    if (ok)
        h->listen_fd[h->nlisten++] = fd;
    pthread_mutex_unlock(&h->lock);
    if (!ok) {
        close(fd);
        snprintf(err, errlen, "cannot listen on %s: at most %d addresses", addr, MAX_LISTEN);
        return -1;
    }
    wake(h);
    return 0;
}

int netio_hub_connect(netio_hub *h, const char *addr, char *err, size_t errlen)
{
    struct addrinfo *res = resolve(addr, 0, err, errlen);
    if (!res)
        return -1;
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || (connect(fd, res->ai_addr, res->ai_addrlen) && errno != EINPROGRESS)) {
        snprintf(err, errlen, "cannot connect to %s: %s", addr, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    pthread_mutex_lock(&h->lock);
    peer *p = add_peer(h, fd, 1, addr);
    int id = p ? p->id : -1;
    pthread_mutex_unlock(&h->lock);
    if (!p) {
        close(fd);
        snprintf(err, errlen, "cannot connect to %s: too many connections", addr);
        return -1;
    }
    wake(h);
    return id;
}
