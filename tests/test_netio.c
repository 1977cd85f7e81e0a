/* netio's hub on its own, hubs in this process over loopback: messages longer than a piece
 * (frame.h) are sealed, carried and opened piece by piece, and arrive whole and in order even
 * when two threads send long messages to the same peer at once, and stay whole where the
 * callback keeps them; a message over its type's bound closes the connection with the reason;
 * three hubs, each listening and connecting, talk pairwise. */
#include "test.h"

#include "netio/hub.h"
#include "netio/key.h"
#include "netio/secure_speed.h"

#include <pthread.h>
#include <sys/stat.h>
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { LONG = 1, SHORT = 2, SENDERS = 2, PER_SENDER = 12 };

typedef struct inbox {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int up, down, received, wrong;
    int crowded;                 /* refusals for too many handshakes from one address */
    int peers[4];                /* the first peers up, in order */
    int nheard;
    char heard[4];               /* the first one-byte SHORTs: who sent them */
    int next[SENDERS];           /* the index each sender's next message must have */
    char why[200];
    int nkept;                   /* the odd messages, kept past their callback */
    struct {
        void *block;
        const uint8_t *payload;
        size_t len;
    } kept[SENDERS * PER_SENDER];
} inbox;

/* A message's bytes: sender, index and length first, then a pattern of all three. */
static size_t message_size(int index)
{
    static const size_t sizes[] = {1 + 12, 65536 - 8, 65536, 65537, 300001, (1u << 20) + 3};
    return sizes[index % 6];
}

static uint8_t pattern(int sender, int index, size_t i)
{
    return (uint8_t)(i * 131 + (size_t)sender * 17 + (size_t)index * 7);
}

static void fill(uint8_t *m, int sender, int index, size_t len)
{
    uint32_t head[3] = {(uint32_t)sender, (uint32_t)index, (uint32_t)len};
    memcpy(m, head, sizeof head);
    for (size_t i = sizeof head; i < len; i++)
        m[i] = pattern(sender, index, i);
}

static int intact(const uint8_t *m, size_t len, int *sender, int *index)
{
    uint32_t head[3];
    if (len < sizeof head)
        return 0;
    memcpy(head, m, sizeof head);
    *sender = (int)head[0], *index = (int)head[1];
    if (head[0] >= SENDERS || head[2] != len || len != message_size(*index))
        return 0;
    for (size_t i = sizeof head; i < len; i++)
        if (m[i] != pattern(*sender, *index, i))
            return 0;
    return 1;
}

static void on_event(void *ctx, const netio_event *e)
{
    inbox *in = ctx;
    pthread_mutex_lock(&in->lock);
    int sender, index;
    if (e->kind == NETIO_UP)
        in->peers[in->up < 4 ? in->up : 3] = e->peer, in->up++;
    else if (e->type == SHORT && e->len == 1 && in->nheard < 4)
        in->heard[in->nheard++] = (char)e->payload[0];
    else if (e->kind == NETIO_DOWN || e->kind == NETIO_REFUSED)
        in->down++, snprintf(in->why, sizeof in->why, "%s", e->why),
        in->crowded += strstr(e->why, "handshakes at once from 127.0.0.2") != NULL;
    else if (e->type == LONG && intact(e->payload, e->len, &sender, &index) &&
             index == in->next[sender]) {
        in->next[sender]++, in->received++;
        if (index % 2 && in->nkept < SENDERS * PER_SENDER)   /* every size, one piece or more */
            in->kept[in->nkept].payload = e->payload, in->kept[in->nkept].len = e->len,
            in->kept[in->nkept++].block = netio_event_keep(e);
    } else if (e->type != SHORT)
        in->wrong++;
    pthread_cond_broadcast(&in->changed);
    pthread_mutex_unlock(&in->lock);
}

/* Waits (at most 20 s) until *what reaches want; returns it. */
static int wait_for(inbox *in, const int *what, int want)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    pthread_mutex_lock(&in->lock);
    while (*what < want && pthread_cond_timedwait(&in->changed, &in->lock, &until) == 0) {
    }
    int got = *what;
    pthread_mutex_unlock(&in->lock);
    return got;
}

typedef struct sender_args {
    netio_hub *hub;
    int peer, sender, failed;
} sender_args;

static void *send_all(void *arg)
{
    sender_args *a = arg;
    uint8_t *m = malloc(message_size(5));
    for (int i = 0; m && i < PER_SENDER; i++) {
        size_t len = message_size(i);
        fill(m, a->sender, i, len);
        a->failed |= netio_hub_send(a->hub, a->peer, LONG, m, 12, m + 12, len - 12) != 0;
        a->failed |= netio_hub_send(a->hub, a->peer, SHORT, "hi", 2, NULL, 0) != 0;
    }
    a->failed |= !m;
    free(m);
    return NULL;
}

static netio_hub *start(inbox *in, const uint8_t key[NETIO_KEY_BYTES], int no_aes, char *err,
                        size_t errlen)
{
    netio_config c = {.timeout_s = 10, .on_event = on_event, .ctx = in, .no_aes = no_aes};
    memcpy(c.key, key, NETIO_KEY_BYTES);
    c.limits.ntypes = 3;
    c.limits.max_payload[LONG] = 2u << 20;
    c.limits.max_payload[SHORT] = 100;
    pthread_mutex_init(&in->lock, NULL);
    pthread_cond_init(&in->changed, NULL);
    return netio_hub_start(&c, err, errlen);
}

/* Messages of every size from concurrent senders, with the cipher both ends agree on:
 * AES-256-GCM where this CPU has it, unless the client offers XChaCha20-Poly1305 only. */
static void long_messages(int client_no_aes)
{
    uint8_t key[NETIO_KEY_BYTES];
    for (int i = 0; i < NETIO_KEY_BYTES; i++)
        key[i] = (uint8_t)(i * 37 + 1);
    inbox server = {0}, client = {0};
    char err[300] = "", addr[80];
    netio_hub *a = start(&server, key, 0, err, sizeof err);
    netio_hub *b = a ? start(&client, key, client_no_aes, err, sizeof err) : NULL;
    CHECKF(a && b && netio_hub_listen(a, "127.0.0.1:0", addr, sizeof addr, err, sizeof err) == 0, "%s", err);
    int peer = b ? netio_hub_connect(b, addr, err, sizeof err) : -1;
    CHECKF(peer >= 0 && wait_for(&server, &server.up, 1) == 1 && wait_for(&client, &client.up, 1) == 1,
           "%s", err);
    const char *cipher = !client_no_aes && crypto_aead_aes256gcm_is_available()
                             ? "aes256gcm" : "xchacha20poly1305";
    netio_peer_stats st = {0};
    CHECKF(peer >= 0 && netio_hub_peer_stats(b, peer, &st) == 0 && !strcmp(st.cipher, cipher),
           "the client's cipher: %s, expected %s", st.cipher, cipher);
    sender_args s[SENDERS];
    pthread_t th[SENDERS];
    for (int i = 0; i < SENDERS; i++) {
        s[i] = (sender_args){b, peer, i, 0};
        pthread_create(&th[i], NULL, send_all, &s[i]);
    }
    for (int i = 0; i < SENDERS; i++) {
        pthread_join(th[i], NULL);
        CHECKF(!s[i].failed, "sender %d could not queue a message", i);
    }
    int got = wait_for(&server, &server.received, SENDERS * PER_SENDER);
    pthread_mutex_lock(&server.lock);   /* the closing below writes `down` and `why` */
    CHECKF(got == SENDERS * PER_SENDER && !server.wrong && !server.down,
           "%d of %d messages whole and in order, %d wrong, %d down (%s)", got,
           SENDERS * PER_SENDER, server.wrong, server.down, server.why);
    pthread_mutex_unlock(&server.lock);
    /* the messages kept are still whole after their callbacks (the hub freed none of them:
     * ASan would say so), and are the caller's to free */
    int sender, index, whole = 0;
    for (int i = 0; i < server.nkept; i++) {
        whole += server.kept[i].block && intact(server.kept[i].payload, server.kept[i].len,
                                                &sender, &index);
        free(server.kept[i].block);
    }
    CHECKF(server.nkept == SENDERS * PER_SENDER / 2 && whole == server.nkept,
           "%d of %d messages kept were whole", whole, server.nkept);

    char big[101] = {0};   /* over SHORT's bound: the receiver closes the connection */
    CHECK(netio_hub_send(b, peer, SHORT, big, sizeof big, NULL, 0) == 0);
    CHECKF(wait_for(&server, &server.down, 1) == 1 && strstr(server.why, "at most 100"), "%s",
           server.why);
    netio_hub_stop(a);
    netio_hub_stop(b);
}

TEST(netio_long_messages_arrive_whole_from_concurrent_senders)
{
    long_messages(0);
}

TEST(netio_long_messages_arrive_whole_with_xchacha20poly1305_too)
{
    long_messages(1);
}

/* The cipher speeds `frugal info` prints come through the streams themselves: every piece
 * sealed is opened (a figure, not -1), AES-256-GCM only where the CPU has AES-NI. */
TEST(netio_cipher_speeds_are_measured_through_the_streams)
{
    double chacha = secure_speed(0, 0.02), aes = secure_speed(1, 0.02);
    CHECKF(chacha > 1e6, "xchacha20poly1305: %.0f bytes/s", chacha);
    if (crypto_aead_aes256gcm_is_available())
        CHECKF(aes > 1e6, "aes256gcm: %.0f bytes/s", aes);
    else
        CHECKF(aes == 0, "aes256gcm without AES-NI: %.0f bytes/s", aes);
}

/* Any two processes with the key talk, not only a coordinator and its nodes: three hubs, each
 * listening and connecting, every one saying its name to each peer it has, hear each other. */
TEST(netio_any_two_hubs_talk_in_a_mesh_of_three)
{
    uint8_t key[NETIO_KEY_BYTES];
    randombytes_buf(key, sizeof key);
    inbox in[3] = {0};
    netio_hub *h[3] = {0};
    char err[300] = "", addr[3][80];
    for (int i = 0; i < 3; i++) {
        h[i] = start(&in[i], key, 0, err, sizeof err);
        CHECKF(h[i] && netio_hub_listen(h[i], "127.0.0.1:0", addr[i], sizeof addr[i], err,
                                        sizeof err) == 0, "%s", err);
    }
    for (int from = 0; from < 3; from++)   /* 0 -> 1, 0 -> 2, 1 -> 2 */
        for (int to = from + 1; to < 3; to++)
            CHECKF(h[from] && h[to] && netio_hub_connect(h[from], addr[to], err, sizeof err) >= 0,
                   "%s", err);
    for (int i = 0; i < 3; i++) {
        CHECKF(wait_for(&in[i], &in[i].up, 2) == 2, "hub %d has %d peers up", i, in[i].up);
        char name = (char)('0' + i);
        for (int p = 0; p < 2 && in[i].up == 2; p++)
            CHECK(netio_hub_send(h[i], in[i].peers[p], SHORT, &name, 1, NULL, 0) == 0);
    }
    for (int i = 0; i < 3; i++) {
        int heard = wait_for(&in[i], &in[i].nheard, 2);
        char a = (char)('0' + (i + 1) % 3), b = (char)('0' + (i + 2) % 3);
        pthread_mutex_lock(&in[i].lock);   /* a peer's hub stopped below writes `down` */
        CHECKF(heard == 2 && memchr(in[i].heard, a, 2) && memchr(in[i].heard, b, 2) &&
               !in[i].down, "hub %d heard %.*s", i, heard, in[i].heard);
        pthread_mutex_unlock(&in[i].lock);
    }
    for (int i = 0; i < 3; i++)
        if (h[i])
            netio_hub_stop(h[i]);
}

/* Strangers who open connections and say nothing cannot keep a peer out: 40 from one address
 * get 8 handshakes (the rest are refused at once, each naming the address), 70 from as many
 * addresses overflow the 64 handshake places (the oldest give way), and a peer with the key,
 * arriving last, gets in while all of them still hold their connections. */
TEST(netio_strangers_holding_connections_cannot_keep_a_peer_out)
{
    uint8_t key[NETIO_KEY_BYTES];
    randombytes_buf(key, sizeof key);
    inbox server = {0}, client = {0};
    char err[300] = "", addr[80];
    netio_hub *a = start(&server, key, 0, err, sizeof err);
    netio_hub *b = a ? start(&client, key, 0, err, sizeof err) : NULL;
    CHECKF(a && b && netio_hub_listen(a, "127.0.0.1:0", addr, sizeof addr, err, sizeof err) == 0,
           "%s", err);
    int port = atoi(strrchr(addr, ':') + 1), fds[110], held = 0;
    for (int i = 0; i < 110; i++) {
        char from[32] = "127.0.0.2";
        if (i >= 40)
            snprintf(from, sizeof from, "127.0.1.%d", i - 39);
        held += (fds[i] = test_silent_connection(from, port)) >= 0;
    }
    CHECKF(held == 110, "%d of 110 strangers connected", held);
    CHECKF(wait_for(&server, &server.crowded, 32) == 32, "%d refused for their address (%s)",
           server.crowded, server.why);
    CHECKF(b && netio_hub_connect(b, addr, err, sizeof err) >= 0, "%s", err);
    CHECKF(wait_for(&client, &client.up, 1) == 1 && wait_for(&server, &server.up, 1) == 1,
           "the peer did not get in: %s / %s", client.why, server.why);
    for (int i = 0; i < 110; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    netio_hub_stop(b);
    netio_hub_stop(a);
}

/* An identity signs its session's binding, which both ends compute alike and no other session
 * has: a signature verifies there, and neither in another session nor under another key (a
 * JOIN's identity cannot be replayed or borrowed). */
TEST(netio_identity_signatures_are_bound_to_their_session)
{
    uint8_t key[NETIO_KEY_BYTES];
    randombytes_buf(key, sizeof key);
    inbox server = {0}, client = {0};
    char err[300] = "", addr[80], path[760], line[200];
    netio_hub *a = start(&server, key, 0, err, sizeof err);
    netio_hub *b = a ? start(&client, key, 0, err, sizeof err) : NULL;
    CHECKF(a && b && netio_hub_listen(a, "127.0.0.1:0", addr, sizeof addr, err, sizeof err) == 0,
           "%s", err);
    int first = b ? netio_hub_connect(b, addr, err, sizeof err) : -1;
    int second = b ? netio_hub_connect(b, addr, err, sizeof err) : -1;
    CHECKF(first >= 0 && second >= 0 && wait_for(&server, &server.up, 2) == 2 &&
           wait_for(&client, &client.up, 2) == 2, "%s", err);
    uint8_t mine[2][NETIO_BINDING_BYTES], theirs[2][NETIO_BINDING_BYTES];
    int ok = b && !netio_hub_peer_binding(b, first, mine[0]) &&
             !netio_hub_peer_binding(b, second, mine[1]) &&
             !netio_hub_peer_binding(a, server.peers[0], theirs[0]) &&
             !netio_hub_peer_binding(a, server.peers[1], theirs[1]);
    /* the server's peers came up in either order: each of its bindings is one of ours */
    int agree = ok && ((!memcmp(mine[0], theirs[0], 32) && !memcmp(mine[1], theirs[1], 32)) ||
                       (!memcmp(mine[0], theirs[1], 32) && !memcmp(mine[1], theirs[0], 32)));
    CHECKF(agree && memcmp(mine[0], mine[1], 32), "the ends' bindings differ, or two sessions' agree");
    netio_identity id, other;
    snprintf(path, sizeof path, "%s/machine.id", test_tmpdir());
    CHECKF(netio_identity_generate(path, line, sizeof line, err, sizeof err) == 0 &&
           netio_identity_load(path, &id, err, sizeof err) == 0, "%s", err);
    CHECK(!strncmp(line, IDENTITY_PUBLIC_PREFIX, strlen(IDENTITY_PUBLIC_PREFIX)));
    crypto_sign_keypair(other.pk, other.sk);
    uint8_t sig[NETIO_ID_SIG_BYTES];
    netio_identity_sign(&id, mine[0], sig);
    CHECK(netio_identity_verify(id.pk, mine[0], sig) == 0);
    CHECK(netio_identity_verify(id.pk, mine[1], sig) != 0);
    CHECK(netio_identity_verify(other.pk, mine[0], sig) != 0);
    chmod(path, 0644);   /* readable by others: refused */
    CHECKF(netio_identity_load(path, &id, err, sizeof err) != 0 && strstr(err, "chmod 600"), "%s", err);
    netio_hub_stop(b);
    netio_hub_stop(a);
}
