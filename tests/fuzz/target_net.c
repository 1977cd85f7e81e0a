/* Fuzz targets of what a peer sends on the network: a hello on its own, and a whole stream into
 * a real hub after a real handshake (the targets that need sockets and a thread). */
#include "targets.h"

#include "engine/cluster/proto.h"
#include "netio/hub.h"
#include "netio/secure.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const uint8_t fuzz_key[NETIO_KEY_BYTES] = {1, 2, 3, 4, 5, 6, 7, 8};

/* A hello as a server checks it (first byte even) or as a client does (odd), then, checked,
 * the stream header after it. */
int fuzz_hello(const uint8_t *data, size_t size)
{
    if (size < 1 + SECURE_HELLO_BYTES)
        return 0;
    secure s;
    const char *why = "";
    if (secure_init(&s, fuzz_key, !(data[0] & 1), data[0] & 2))
        return 0;
    if (!(data[0] & 1)) {   /* a server has checked the client's hello before it says its own */
        uint8_t out[SECURE_HELLO_BYTES];
        secure_hello(&s, out);
    }
    if (secure_check_hello(&s, data + 1, &why) == 0 && size >= 1 + SECURE_HELLO_BYTES + SECURE_HEADER_BYTES)
        secure_pull_header(&s, data + 1 + SECURE_HELLO_BYTES);
    secure_wipe(&s);
    return 0;
}

/* ---- a stream into a hub ---- */

typedef struct hub_under_test {
    netio_hub *hub;
    int port;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    long ended;                  /* connections that ended (DOWN or REFUSED) */
} hub_under_test;

static void on_event(void *ctx, const netio_event *e)
{
    hub_under_test *t = ctx;
    if (e->kind == NETIO_MESSAGE && e->type == MSG_JOIN) {   /* what the message meets next */
        msg_join j;
        char why[200];
        proto_join_decode(&j, e->payload, e->len, why, sizeof why);
    }
    pthread_mutex_lock(&t->lock);
    t->ended += e->kind == NETIO_DOWN || e->kind == NETIO_REFUSED;
    pthread_cond_broadcast(&t->changed);
    pthread_mutex_unlock(&t->lock);
}

/* The hub, started once for the process: a coordinator's limits, for a model of 16 parameters. */
static hub_under_test *hub_once(void)
{
    static hub_under_test t;
    if (t.hub)
        return &t;
    netio_config c = {.timeout_s = 5, .on_event = on_event, .ctx = &t};
    memcpy(c.key, fuzz_key, sizeof c.key);
    proto_limits(&c.limits, 1, 16, 10);
    char err[200], bound[80];
    pthread_mutex_init(&t.lock, NULL);
    pthread_cond_init(&t.changed, NULL);
    if (!(t.hub = netio_hub_start(&c, err, sizeof err)) ||
        netio_hub_listen(t.hub, "127.0.0.1:0", bound, sizeof bound, err, sizeof err)) {
        fprintf(stderr, "fuzz hub_stream: %s\n", err);
        abort();
    }
    t.port = atoi(strrchr(bound, ':') + 1);
    return &t;
}

static int send_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        p += w, n -= (size_t)w;
    }
    return 0;
}

static int recv_all(int fd, uint8_t *p, size_t n)
{
    while (n) {
        ssize_t r = recv(fd, p, n, 0);
        if (r <= 0)
            return -1;
        p += r, n -= (size_t)r;
    }
    return 0;
}

/* The client's half of the handshake (secure.h) on fd. 0, or -1. */
static int handshake(int fd, secure *s)
{
    uint8_t hello[SECURE_HELLO_BYTES], in[SECURE_HELLO_BYTES + SECURE_HEADER_BYTES];
    uint8_t header[SECURE_HEADER_BYTES];
    const char *why = "";
    secure_hello(s, hello);
    if (send_all(fd, hello, sizeof hello) || recv_all(fd, in, sizeof in) ||
        secure_check_hello(s, in, &why) || secure_pull_header(s, in + SECURE_HELLO_BYTES))
        return -1;
    secure_push_header(s, header);
    return send_all(fd, header, sizeof header);
}

/* The input as records: a flag byte, a 2-byte length, that many bytes. Flag bit 0 set: the
 * bytes go raw (a broken stream); clear: sealed as one piece (the hub opens exactly them: frame
 * headers and messages the fuzzer shapes). The wire bytes go out in writes of (flag >> 1) + 1
 * bytes, so that pieces arrive cut anywhere. */
static void send_records(int fd, secure *s, const uint8_t *data, size_t size)
{
    uint8_t *wire = malloc(4 + 65535 + SECURE_OVERHEAD);
    for (size_t at = 0; wire && at + 3 <= size;) {
        int flag = data[at];
        size_t len = (size_t)data[at + 1] | (size_t)data[at + 2] << 8, n;
        at += 3;
        len = len < size - at ? len : size - at;
        if (flag & 1) {
            memcpy(wire, data + at, len), n = len;
        } else if (len == 0 || len > FRAME_PIECE) {
            n = 0;
        } else {
            uint32_t sealed = (uint32_t)(len + SECURE_OVERHEAD);
            wire[0] = (uint8_t)(sealed >> 24), wire[1] = (uint8_t)(sealed >> 16);
            wire[2] = (uint8_t)(sealed >> 8), wire[3] = (uint8_t)sealed;
            secure_seal(&s->push, data + at, len, wire + 4);
            n = 4 + sealed;
        }
        at += len;
        size_t step = (size_t)(flag >> 1) + 1;
        for (size_t w = 0; w < n; w += step)
            if (send_all(fd, wire + w, n - w < step ? n - w : step))
                break;
    }
    free(wire);
}

/* One connection: the handshake, the input, then its end, waited for (5 s at most): what the
 * hub did with the input is done before the next one comes. */
int fuzz_hub_stream(const uint8_t *data, size_t size)
{
    hub_under_test *t = hub_once();
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)t->port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    pthread_mutex_lock(&t->lock);
    long ended = t->ended;
    pthread_mutex_unlock(&t->lock);
    secure s;
    int up = fd >= 0 && !connect(fd, (struct sockaddr *)&sa, sizeof sa) &&
             !secure_init(&s, fuzz_key, 0, 1);
    if (up && !handshake(fd, &s))
        send_records(fd, &s, data, size);
    if (up)
        secure_wipe(&s);
    if (fd >= 0) {
        shutdown(fd, SHUT_WR);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 5;
        pthread_mutex_lock(&t->lock);
        while (t->ended == ended && pthread_cond_timedwait(&t->changed, &t->lock, &until) == 0) {
        }
        pthread_mutex_unlock(&t->lock);
        close(fd);
    }
    return 0;
}
