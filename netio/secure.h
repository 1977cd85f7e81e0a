/* A connection's cryptography, all of it from libsodium: a handshake that authenticates both
 * ends with the shared key and agrees fresh session keys, then one stream per direction
 * (encryption, integrity, and no reordering or replay): AES-256-GCM with a counter for nonce
 * where both ends' CPUs have AES-NI (libsodium 1.0.18's measured 1.1x to 1.6x as fast as
 * XChaCha20-Poly1305 on the project's VM's hosts, `frugal info` says by how much here, and a
 * long message is sealed and opened on the critical path), else XChaCha20-Poly1305
 * secretstream. The choice is made in the authenticated hellos and neither end can be talked
 * out of it by a third party.
 *
 *   client -> server  hello:  "FRGL", version, AES flag, ephemeral X25519 key, MAC(key) over them
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
/* Both ciphers add 17 bytes to a piece: secretstream its tag byte and MAC, AES-256-GCM its MAC
 * and a zero byte it authenticates, so that pieces have one size on the wire. */
#define SECURE_OVERHEAD crypto_secretstream_xchacha20poly1305_ABYTES

/* One direction's stream state: a sender may seal with a copy and store it back, so that the
 * encryption of a long message runs outside the hub's lock. */
typedef struct secure_stream {
    int aes;                                       /* AES-256-GCM, else secretstream */
    crypto_secretstream_xchacha20poly1305_state chacha;
    crypto_aead_aes256gcm_state aes_key;           /* the session key, expanded once */
    uint8_t nonce[crypto_aead_aes256gcm_NPUBBYTES]; /* 4 bytes of the stream header, then a
                                                      64-bit counter of the pieces */
} secure_stream;

typedef struct secure {
    int server;
    uint8_t key[NETIO_KEY_BYTES];
    uint8_t pk[crypto_kx_PUBLICKEYBYTES], sk[crypto_kx_SECRETKEYBYTES];
    uint8_t peer_pk[crypto_kx_PUBLICKEYBYTES];
    uint8_t rx[crypto_kx_SESSIONKEYBYTES], tx[crypto_kx_SESSIONKEYBYTES];
    int aes_here, aes;           /* this end offers AES-256-GCM; both ends do: it is used */
    secure_stream push, pull;
} secure;

/* A fresh ephemeral key pair; offer_aes: AES-256-GCM is offered where the CPU has it. 0, or -1
 * when libsodium cannot start. */
int secure_init(secure *s, const uint8_t key[NETIO_KEY_BYTES], int server, int offer_aes);
void secure_wipe(secure *s);
/* This end's hello (a server's needs the client's checked first). */
void secure_hello(secure *s, uint8_t out[SECURE_HELLO_BYTES]);
/* Checks the other end's hello and derives the session keys. 0, or -1 with why. */
int secure_check_hello(secure *s, const uint8_t in[SECURE_HELLO_BYTES], const char **why);
/* After the hellos: this end's stream header, and the other end's. */
void secure_push_header(secure *s, uint8_t out[SECURE_HEADER_BYTES]);
int secure_pull_header(secure *s, const uint8_t in[SECURE_HEADER_BYTES]);
/* The session's binding, once the hellos are checked: both ends' ephemeral keys hashed with the
 * shared key, the same at both ends and in no other session (what an identity signs, key.h). */
void secure_binding(const secure *s, uint8_t out[NETIO_BINDING_BYTES]);
/* The streams' cipher, once the hellos are checked. */
const char *secure_cipher(const secure *s);
/* Seals len bytes into out (len + SECURE_OVERHEAD bytes) with the push stream; opens cipher
 * (clen bytes) into out (clen - SECURE_OVERHEAD bytes): 0, or -1 when it was forged, corrupted,
 * replayed or reordered. */
void secure_seal(secure_stream *push, const uint8_t *plain, size_t len, uint8_t *out);
int secure_open(secure *s, const uint8_t *cipher, size_t clen, uint8_t *out);

#endif
