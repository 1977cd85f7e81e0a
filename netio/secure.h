/* A connection's cryptography, all of it from libsodium: a handshake that authenticates both
 * ends with the shared key and agrees fresh session keys, then one secretstream per direction
 * (XChaCha20-Poly1305: encryption, integrity, and no reordering, truncation or replay).
 *
 *   client -> server  hello:  "FRGL", version, ephemeral X25519 key, MAC(key) over them
 *   server -> client  hello:  the same, with its MAC also over the client's ephemeral key,
 *                             then its stream header
 *   client -> server  its stream header; from then on, only sealed frames
 *
 * Session keys come from crypto_kx over the two ephemeral keys, hashed with the shared key, so
 * only holders of the key can read or write the streams, and a recorded session replayed later
 * fails (the other end's ephemeral key differs). A hello is a fixed 72 bytes checked by its MAC
 * (constant time) before anything else is read; no decoder sees a byte from an unauthenticated
 * peer. The client's first frame proves it is live (its hello alone could be a replay). */
#ifndef FRUGAL_NETIO_SECURE_H
#define FRUGAL_NETIO_SECURE_H

#include "netio/key.h"

#include <sodium.h>
#include <stddef.h>
#include <stdint.h>

#define SECURE_HELLO_BYTES 72
#define SECURE_HEADER_BYTES crypto_secretstream_xchacha20poly1305_HEADERBYTES
#define SECURE_OVERHEAD crypto_secretstream_xchacha20poly1305_ABYTES

/* One direction's stream state: a sender may seal with a copy and store it back, so that the
 * encryption of a long message runs outside the hub's lock. */
typedef crypto_secretstream_xchacha20poly1305_state secure_stream;

typedef struct secure {
    int server;
    uint8_t key[NETIO_KEY_BYTES];
    uint8_t pk[crypto_kx_PUBLICKEYBYTES], sk[crypto_kx_SECRETKEYBYTES];
    uint8_t peer_pk[crypto_kx_PUBLICKEYBYTES];
    uint8_t rx[crypto_kx_SESSIONKEYBYTES], tx[crypto_kx_SESSIONKEYBYTES];
    secure_stream push, pull;
} secure;

/* A fresh ephemeral key pair. 0, or -1 when libsodium cannot start. */
int secure_init(secure *s, const uint8_t key[NETIO_KEY_BYTES], int server);
void secure_wipe(secure *s);
/* This end's hello (a server's needs the client's checked first). */
void secure_hello(secure *s, uint8_t out[SECURE_HELLO_BYTES]);
/* Checks the other end's hello and derives the session keys. 0, or -1 with why. */
int secure_check_hello(secure *s, const uint8_t in[SECURE_HELLO_BYTES], const char **why);
/* After the hellos: this end's stream header, and the other end's. */
void secure_push_header(secure *s, uint8_t out[SECURE_HEADER_BYTES]);
int secure_pull_header(secure *s, const uint8_t in[SECURE_HEADER_BYTES]);
/* Seals len bytes into out (len + SECURE_OVERHEAD bytes) with the push stream; opens cipher
 * (clen bytes) into out (clen - SECURE_OVERHEAD bytes): 0, or -1 when it was forged, corrupted,
 * replayed or reordered. */
void secure_seal(secure_stream *push, const uint8_t *plain, size_t len, uint8_t *out);
int secure_open(secure *s, const uint8_t *cipher, size_t clen, uint8_t *out);

#endif
