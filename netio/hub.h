/* A hub: one thread that owns every connection of a process (listening, connecting, the
 * handshake, sealed frames, keepalives, deadlines) and hands complete, checked messages to a
 * callback. Any two processes holding the key can talk: a coordinator and its nodes today,
 * nodes among themselves later.
 *
 * Every step has a deadline: connecting (timeout_s), the handshake (handshake_s), and an open
 * connection on which nothing arrives for timeout_s is closed (each end sends a keepalive after
 * a quarter of that in silence, and at least every second), so a dead or stalled peer is noticed even when TCP still holds
 * its connection. Sockets are non-blocking, so a slow or silent peer never blocks another; what
 * waits to be sent to a peer is bounded (max_queued), and so is what it may send (frame_limits).
 * Callbacks run on the hub's thread without its lock held: they may call netio_hub_send. */
#ifndef FRUGAL_NETIO_HUB_H
#define FRUGAL_NETIO_HUB_H

#include "netio/frame.h"
#include "netio/key.h"

#include <stddef.h>
#include <stdint.h>

typedef struct netio_hub netio_hub;

typedef enum netio_event_kind {
    NETIO_UP,        /* a peer passed the handshake (and, connecting to us, sent a live frame) */
    NETIO_MESSAGE,   /* a checked message from it */
    NETIO_DOWN,      /* it is gone (why); its id is not used again */
    NETIO_REFUSED,   /* a connection refused before it became a peer (why) */
} netio_event_kind;

typedef struct netio_event {
    netio_event_kind kind;
    int peer;
    const char *addr;                 /* "127.0.0.1:4321" */
    uint16_t type;
    const uint8_t *payload;           /* valid during the callback (netio_event_keep: after) */
    size_t len;
    const char *why;
    void **block_;                    /* the hub's: the allocation holding payload */
} netio_event;

/* In the callback: the payload is the caller's from now on, valid until it frees the pointer
 * returned (the allocation holding it; NULL when the event has no payload). A long message then
 * reaches its reader without a copy. */
void *netio_event_keep(const netio_event *e);

typedef struct netio_config {
    uint8_t key[NETIO_KEY_BYTES];
    double timeout_s;                 /* 0: 10 s */
    size_t max_queued;                /* bytes waiting for one peer; 0: 64 MiB */
    int max_peers;                    /* authenticated peers at once; 0: 64 */
    /* Connections still in their handshake are held apart from peers, so that strangers cannot
     * take the peers' places: at most max_handshakes at once (0: 64; when full, the oldest
     * gives way to a newcomer), at most max_per_address from one address (0: 8; several nodes
     * may sit behind one NAT), each done within handshake_s (0: timeout_s, at most 5 s). */
    int max_handshakes, max_per_address;
    double handshake_s;
    frame_limits limits;              /* what peers may send */
    int no_aes;                       /* offer XChaCha20-Poly1305 only (secure.h) */
    void (*on_event)(void *ctx, const netio_event *e);
    void *ctx;
} netio_config;

typedef struct netio_peer_stats {
    uint64_t sent, received;          /* bytes on the wire, both ways */
    char cipher[24];                  /* the streams' (secure.h), once the handshake is done */
} netio_peer_stats;

netio_hub *netio_hub_start(const netio_config *cfg, char *err, size_t errlen);
/* Stops the thread and closes every connection (no more callbacks after it returns). */
void netio_hub_stop(netio_hub *h);
/* Listens on "ADDR:PORT" (port 0: any); the address bound, with its port, goes to bound.
 * 0, or -1 with err. */
int netio_hub_listen(netio_hub *h, const char *addr, char *bound, size_t boundlen, char *err,
                     size_t errlen);
/* Connects to "HOST:PORT": the peer's id (NETIO_UP or NETIO_DOWN follows), or -1 with err. */
int netio_hub_connect(netio_hub *h, const char *addr, char *err, size_t errlen);
/* Queues a message (head then body, either may be empty) for a peer, sealing it piece by piece
 * on the calling thread while the hub sends the pieces already sealed (messages from several
 * threads go whole, one after another). 0, or -1 when the peer is gone or its queue is full (it
 * is then closed: a peer that cannot keep up is dead). */
int netio_hub_send(netio_hub *h, int peer, uint16_t type, const void *head, size_t headlen,
                   const void *body, size_t bodylen);
/* Closes a peer (NETIO_DOWN follows with why), once what was queued for it went out (at most
 * a second later). */
void netio_hub_close(netio_hub *h, int peer, const char *why);
int netio_hub_peer_stats(netio_hub *h, int peer, netio_peer_stats *out);
/* The bytes a message of `payload` bytes (head and body) takes on the wire: its frame header,
 * and each piece's length and seal. What netio_peer_stats counts for it. */
size_t netio_wire_bytes(size_t payload);
/* The session's binding with an authenticated peer (secure.h): 0, or -1 when it is gone. */
int netio_hub_peer_binding(netio_hub *h, int peer, uint8_t out[NETIO_BINDING_BYTES]);
/* What peers may send from now on (e.g. once the size of a model is known). */
void netio_hub_set_limits(netio_hub *h, const frame_limits *l);

/* "HOST:PORT" split and checked (the port 0-65535). 0, or -1 with err. */
int netio_split_address(const char *addr, char *host, size_t hostlen, char *port,
                        size_t portlen, char *err, size_t errlen);

#endif
