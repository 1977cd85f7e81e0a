/* netproxy: a fault-injecting TCP proxy for testing and benchmarking frugal's cluster on one
 * machine (this kernel has no netem). It forwards every connection made to LISTEN to TARGET, and
 * can emulate a link and break it:
 *
 *   netproxy LISTEN_ADDR:PORT TARGET_ADDR:PORT [options]
 *     --delay MS          one-way latency added in each direction
 *     --rate MBIT         bandwidth cap in each direction, per connection (megabits per second)
 *     --stall C:BYTE:S    connection C stops moving bytes (both ways, closes included) for S
 *                         seconds once BYTE bytes went from client to server
 *     --drop C:BYTE       connection C is closed both ways once BYTE bytes went client to server
 *     --flip C:BYTE       connection C: one bit of client-to-server byte BYTE is flipped
 *     --replay C:FRAME    connection C: client-to-server frame FRAME (counted from 1 after the
 *                         handshake) is sent a second time
 *     --oversize C:FRAME  connection C: client-to-server frame FRAME's length field is replaced
 *                         by 2^31-1
 *     --duration S        exit after S seconds (default 600), so a forgotten proxy dies
 *
 * Connections are counted from 1 in the order they are accepted, so a test can break the first
 * connection and let the peer's reconnection through. FRAME knows netio's framing: each side's
 * first 96 bytes are handshake (a 72-byte hello and a 24-byte stream header), then every frame is
 * a 4-byte big-endian length and that many bytes. Each fault is logged to stderr. */
#include "common/clock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 64
#define HANDSHAKE_BYTES 96
#define READ_CHUNK 65536

enum fault_kind { STALL, DROP, FLIP, REPLAY, OVERSIZE, NFAULTS };
static const char *fault_names[NFAULTS] = {"stall", "drop", "flip", "replay", "oversize"};

typedef struct fault {
    enum fault_kind kind;
    int conn;                  /* which connection, from 1 */
    uint64_t at;               /* byte or frame */
    double seconds;            /* stall */
} fault;

typedef struct chunk {
    struct chunk *next;
    double due;                /* when it may leave */
    size_t len, off;
    uint8_t data[];
} chunk;

typedef struct direction {
    int from, to;
    chunk *head, *tail;
    double link_free_at;       /* the rate limit: when the emulated link is idle again */
    uint64_t offset;           /* bytes read so far */
    int eof;                   /* `from` closed: close `to`'s sending side once drained */
    int dead;                  /* `to` reset the connection: nothing more goes this way */
    /* netio framing, client to server only */
    uint64_t frame;            /* the frame being read, from 1 */
    uint8_t head_bytes[4];
    uint32_t have_head, frame_left;
    uint8_t *copy;             /* the frame to replay, as it passes */
    size_t copy_len, copy_cap;
} direction;

typedef struct conn {
    int id, open;
    direction up, down;        /* client to server, server to client */
    double stalled_until;
} conn;

static double delay_s, rate_bps;
static fault faults[32];
static int nfaults;

static int parse_addr(const char *text, struct sockaddr_in *sa)
{
    char host[64];
    const char *colon = strrchr(text, ':');
    if (!colon || (size_t)(colon - text) >= sizeof host)
        return -1;
    memcpy(host, text, (size_t)(colon - text));
    host[colon - text] = 0;
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)atoi(colon + 1));
    return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

static const fault *fault_for(const conn *c, enum fault_kind kind, uint64_t at)
{
    for (int i = 0; i < nfaults; i++)
        if (faults[i].kind == kind && faults[i].conn == c->id && faults[i].at == at)
            return &faults[i];
    return NULL;
}

static void say(const conn *c, const char *what, uint64_t at)
{
    fprintf(stderr, "netproxy: connection %d: %s %llu\n", c->id, what, (unsigned long long)at);
}

/* Appends n bytes to out (grown as needed). */
static int append(uint8_t **out, size_t *len, size_t *cap, const uint8_t *p, size_t n)
{
    if (*len + n > *cap) {
        size_t want = (*len + n) * 2;
        uint8_t *grown = realloc(*out, want);
        if (!grown)
            return -1;
        *out = grown, *cap = want;
    }
    memcpy(*out + *len, p, n);
    *len += n;
    return 0;
}

/* Follows netio's frames through the client-to-server bytes p[0..n) (at stream offset base),
 * applying frame faults: the length of an oversized frame is rewritten in place, and a replayed
 * frame is appended to extra once it has passed whole. */
static int follow_frames(conn *c, direction *d, uint8_t *p, size_t n, uint64_t base,
                         uint8_t **extra, size_t *extra_len, size_t *extra_cap)
{
    for (size_t i = 0; i < n; i++) {
        if (base + i < HANDSHAKE_BYTES)
            continue;
        if (d->frame_left > 1 && !fault_for(c, REPLAY, d->frame)) {
            /* the body of a frame no fault follows: skipped whole, not byte by byte (the
             * benchmark's megabytes per batch go through here) */
            size_t skip = d->frame_left - 1 < n - i ? d->frame_left - 1 : n - i;
            d->frame_left -= (uint32_t)skip;
            i += skip - 1;
            continue;
        }
        if (d->frame_left == 0) {   /* a length byte */
            static const uint8_t huge[4] = {0x7f, 0xff, 0xff, 0xff};
            if (d->have_head == 0)
                d->frame++;
            if (fault_for(c, OVERSIZE, d->frame)) {
                if (d->have_head == 0)
                    say(c, "oversized the length of frame", d->frame);
                p[i] = huge[d->have_head];
            }
            d->head_bytes[d->have_head++] = p[i];
            if (d->have_head == 4) {
                d->frame_left = (uint32_t)d->head_bytes[0] << 24 | (uint32_t)d->head_bytes[1] << 16 |
                                (uint32_t)d->head_bytes[2] << 8 | d->head_bytes[3];
                d->have_head = 0, d->copy_len = 0;
                if (fault_for(c, REPLAY, d->frame) &&
                    append(&d->copy, &d->copy_len, &d->copy_cap, d->head_bytes, 4))
                    return -1;
            }
            continue;
        }
        if (fault_for(c, REPLAY, d->frame) && append(&d->copy, &d->copy_len, &d->copy_cap, p + i, 1))
            return -1;
        if (--d->frame_left == 0 && fault_for(c, REPLAY, d->frame)) {
            say(c, "replayed frame", d->frame);
            if (append(extra, extra_len, extra_cap, d->copy, d->copy_len))
                return -1;
        }
    }
    return 0;
}

/* Byte faults on the client-to-server bytes p[0..n) at stream offset base. -1: drop the
 * connection now. */
static int byte_faults(conn *c, uint8_t *p, size_t n, uint64_t base)
{
    for (int i = 0; i < nfaults; i++) {
        const fault *f = &faults[i];
        if (f->conn != c->id || f->at < base || f->at >= base + n)
            continue;
        if (f->kind == FLIP) {
            p[f->at - base] ^= 0x10;
            say(c, "flipped a bit of byte", f->at);
        } else if (f->kind == STALL) {
            c->stalled_until = clock_now_s() + f->seconds;
            say(c, "stalled (no bytes either way) at byte", f->at);
        } else if (f->kind == DROP) {
            say(c, "dropped at byte", f->at);
            return -1;
        }
    }
    return 0;
}

/* 0, or -1 when out of memory (the connection is then closed, never silently shortened). */
static int queue(direction *d, const uint8_t *p, size_t n)
{
    chunk *k = malloc(sizeof *k + n);
    if (!k) {
        fprintf(stderr, "netproxy: out of memory for %zu bytes: closing the connection\n", n);
        return -1;
    }
    double t = clock_now_s() + delay_s;
    if (rate_bps > 0) {
        double start = d->link_free_at > t ? d->link_free_at : t;
        d->link_free_at = start + 8.0 * (double)n / rate_bps;
        t = d->link_free_at;
    }
    *k = (chunk){NULL, t, n, 0};
    memcpy(k->data, p, n);
    if (d->tail)
        d->tail->next = k;
    else
        d->head = k;
    d->tail = k;
    return 0;
}

static void drop_queue(direction *d)
{
    while (d->head) {
        chunk *k = d->head;
        d->head = k->next;
        free(k);
    }
    d->tail = NULL;
}

static void close_conn(conn *c)
{
    for (direction *d = &c->up; d; d = d == &c->up ? &c->down : NULL) {
        drop_queue(d);
        free(d->copy);
        d->copy = NULL;
    }
    close(c->up.from);
    close(c->up.to);
    c->open = 0;
}

/* The peer that `from_it` reads from reset the connection (a read from it or a write to it
 * failed). As on a real link, what it sent before still arrives, and then the close; what was
 * on its way to it is lost. */
static void peer_reset(conn *c, direction *from_it)
{
    direction *to_it = from_it == &c->up ? &c->down : &c->up;
    drop_queue(to_it);
    to_it->dead = to_it->eof = 1;   /* the other peer is not read any more either */
    from_it->eof = 1;
}

/* Reads what is there from d->from. -1: the connection is to be closed (a fault). */
static int read_side(conn *c, direction *d)
{
    uint8_t buf[READ_CHUNK];
    ssize_t r = recv(d->from, buf, sizeof buf, 0);
    if (r == 0) {
        d->eof = 1;
        return 0;
    }
    if (r < 0) {
        if (errno != EAGAIN && errno != EINTR)
            peer_reset(c, d);
        return 0;
    }
    uint64_t base = d->offset;
    d->offset += (uint64_t)r;
    uint8_t *extra = NULL;
    size_t extra_len = 0, extra_cap = 0;
    int rc = 0;
    if (d == &c->up)
        rc = byte_faults(c, buf, (size_t)r, base) ||
             follow_frames(c, d, buf, (size_t)r, base, &extra, &extra_len, &extra_cap);
    if (!rc)
        rc = queue(d, buf, (size_t)r) || (extra_len && queue(d, extra, extra_len));
    free(extra);
    return rc ? -1 : 0;
}

/* Sends what is due. -1: the connection is to be closed. */
static int write_side(conn *c, direction *d, double now)
{
    direction *back = d == &c->up ? &c->down : &c->up;
    if (d->dead)
        return back->dead ? -1 : 0;   /* both ends reset: nothing left to carry */
    while (d->head && d->head->due <= now) {
        chunk *k = d->head;
        ssize_t w = send(d->to, k->data + k->off, k->len - k->off, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno != EAGAIN && errno != EINTR)
                peer_reset(c, back);
            return 0;
        }
        k->off += (size_t)w;
        if (k->off < k->len)
            return 0;
        d->head = k->next;
        if (!d->head)
            d->tail = NULL;
        free(k);
    }
    if (d->eof && !d->head)
        return -1;   /* one side closed and all it sent is through: close both */
    return 0;
}

static int parse_fault(enum fault_kind kind, const char *text)
{
    fault f = {.kind = kind};
    unsigned long long at;
    int got = kind == STALL ? sscanf(text, "%d:%llu:%lf", &f.conn, &at, &f.seconds)
                            : sscanf(text, "%d:%llu", &f.conn, &at);
    if (got != (kind == STALL ? 3 : 2) || f.conn < 1 || nfaults == 32)
        return -1;
    f.at = at;
    faults[nfaults++] = f;
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: netproxy LISTEN_ADDR:PORT TARGET_ADDR:PORT [--delay MS] [--rate MBIT] "
                    "[--stall C:BYTE:S] [--drop C:BYTE] [--flip C:BYTE] [--replay C:FRAME] "
                    "[--oversize C:FRAME] [--duration S]\n");
    return 2;
}

static int listen_on(const struct sockaddr_in *sa)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (const struct sockaddr *)sa, sizeof *sa) || listen(fd, 16)) {
        perror("netproxy: listen");
        return -1;
    }
    return fd;
}

/* A new client: its server connection, both non-blocking. */
static void accept_one(int lfd, const struct sockaddr_in *target, conn *conns, int *next_id)
{
    int cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
    if (cfd < 0)
        return;
    int sfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (sfd < 0 || connect(sfd, (const struct sockaddr *)target, sizeof *target)) {
        /* reset, not closed: the client sees what it would see without the proxy, a
         * connection it may retry; and the attempt is not counted */
        fprintf(stderr, "netproxy: target: %s\n", strerror(errno));
        struct linger reset = {1, 0};
        setsockopt(cfd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
        close(cfd);
        if (sfd >= 0)
            close(sfd);
        return;
    }
    fcntl(sfd, F_SETFL, O_NONBLOCK);
    setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    for (int i = 0; i < MAX_CONNS; i++)
        if (!conns[i].open) {
            conns[i] = (conn){.id = (*next_id)++, .open = 1};
            conns[i].up = (direction){.from = cfd, .to = sfd};
            conns[i].down = (direction){.from = sfd, .to = cfd};
            return;
        }
    close(cfd);
    close(sfd);
}

int main(int argc, char **argv)
{
    struct sockaddr_in listen_sa, target;
    double duration = 600;
    if (argc < 3 || parse_addr(argv[1], &listen_sa) || parse_addr(argv[2], &target))
        return usage();
    for (int i = 3; i < argc; i++) {
        const char *opt = argv[i], *v = i + 1 < argc ? argv[++i] : NULL;
        int bad = !v;
        if (bad || !strcmp(opt, "--delay"))
            delay_s = v ? atof(v) / 1e3 : 0;
        else if (!strcmp(opt, "--rate"))
            rate_bps = atof(v) * 1e6;
        else if (!strcmp(opt, "--duration"))
            duration = atof(v);
        else {
            bad = 1;
            for (int k = 0; k < NFAULTS && bad; k++)
                if (!strncmp(opt, "--", 2) && !strcmp(opt + 2, fault_names[k]))
                    bad = parse_fault((enum fault_kind)k, v) != 0;
        }
        if (bad)
            return usage();
    }
    signal(SIGPIPE, SIG_IGN);
    int lfd = listen_on(&listen_sa);
    if (lfd < 0)
        return 1;
    static conn conns[MAX_CONNS];
    int next_id = 1;
    double end = clock_now_s() + duration;
    while (clock_now_s() < end) {
        /* two entries per connection: its client socket, then its server socket */
        struct pollfd pf[1 + 2 * MAX_CONNS] = {{lfd, POLLIN, 0}};
        conn *owner[1 + 2 * MAX_CONNS] = {NULL};
        int np = 1;
        double now = clock_now_s(), wake = now + 0.1;
        for (int i = 0; i < MAX_CONNS; i++) {
            conn *c = &conns[i];
            if (c->open && c->stalled_until > now && c->stalled_until < wake)
                wake = c->stalled_until;
            if (!c->open || c->stalled_until > now)
                continue;
            for (direction *d = &c->up; d; d = d == &c->up ? &c->down : NULL) {
                direction *back = d == &c->up ? &c->down : &c->up;   /* what goes to d->from */
                short ev = d->eof ? 0 : POLLIN;
                if (back->head && back->head->due <= now)
                    ev |= POLLOUT;
                else if (back->head && back->head->due < wake)
                    wake = back->head->due;
                if (ev) {   /* a socket reset reports POLLERR for ever: poll it for nothing */
                    pf[np] = (struct pollfd){d->from, ev, 0};
                    owner[np++] = c;
                }
            }
        }
        /* ppoll: the emulated delays are tenths of a millisecond, below poll's resolution */
        double wait = wake > now ? wake - now : 0;
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        ppoll(pf, (nfds_t)np, &ts, NULL);
        if (pf[0].revents & POLLIN)
            accept_one(lfd, &target, conns, &next_id);
        for (int k = 1; k < np; k++) {
            conn *c = owner[k];
            direction *d = pf[k].fd == c->up.from ? &c->up : &c->down;
            if (c->open && (pf[k].revents & (POLLIN | POLLHUP | POLLERR)) && !d->eof &&
                read_side(c, d))
                close_conn(c);
        }
        now = clock_now_s();
        for (int i = 0; i < MAX_CONNS; i++) {
            conn *c = &conns[i];
            if (c->open && c->stalled_until <= now &&
                (write_side(c, &c->up, now) || write_side(c, &c->down, now)))
                close_conn(c);
        }
    }
    return 0;
}
