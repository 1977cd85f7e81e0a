#include "netio/secure.h"

#include <string.h>

#define MAGIC "FRGL"
#define VERSION 2u   /* 2: messages sealed in pieces (frame.h) */

int secure_init(secure *s, const uint8_t key[NETIO_KEY_BYTES], int server)
{
    memset(s, 0, sizeof *s);
    if (sodium_init() < 0)
        return -1;
    s->server = server;
    memcpy(s->key, key, NETIO_KEY_BYTES);
    crypto_kx_keypair(s->pk, s->sk);
    return 0;
}

void secure_wipe(secure *s) { sodium_memzero(s, sizeof *s); }

/* The MAC of a hello: over magic, version, role and the sender's ephemeral key, and for the
 * server's also the client's (so a server hello answers one client hello only). */
static void hello_mac(const secure *s, const uint8_t *head, int from_server,
                      const uint8_t *client_pk, uint8_t mac[crypto_auth_BYTES])
{
    crypto_auth_hmacsha512256_state st;
    uint8_t role = from_server ? 'S' : 'C';
    crypto_auth_hmacsha512256_init(&st, s->key, NETIO_KEY_BYTES);
    crypto_auth_hmacsha512256_update(&st, head, 8 + crypto_kx_PUBLICKEYBYTES);
    crypto_auth_hmacsha512256_update(&st, &role, 1);
    if (from_server)
        crypto_auth_hmacsha512256_update(&st, client_pk, crypto_kx_PUBLICKEYBYTES);
    crypto_auth_hmacsha512256_final(&st, mac);
}

void secure_hello(secure *s, uint8_t out[SECURE_HELLO_BYTES])
{
    memcpy(out, MAGIC, 4);
    out[4] = 0, out[5] = 0, out[6] = 0, out[7] = VERSION;
    memcpy(out + 8, s->pk, crypto_kx_PUBLICKEYBYTES);
    hello_mac(s, out, s->server, s->server ? s->peer_pk : s->pk, out + 40);
}

int secure_check_hello(secure *s, const uint8_t in[SECURE_HELLO_BYTES], const char **why)
{
    uint8_t mac[crypto_auth_BYTES];
    if (memcmp(in, MAGIC, 4)) {
        *why = "not a frugal peer";
        return -1;
    }
    if (in[4] || in[5] || in[6] || in[7] != VERSION) {
        *why = "another version of frugal's protocol";
        return -1;
    }
    hello_mac(s, in, !s->server, s->server ? in + 8 : s->pk, mac);
    if (sodium_memcmp(mac, in + 40, sizeof mac)) {
        *why = "wrong key";
        return -1;
    }
    memcpy(s->peer_pk, in + 8, crypto_kx_PUBLICKEYBYTES);
    int rc = s->server ? crypto_kx_server_session_keys(s->rx, s->tx, s->pk, s->sk, s->peer_pk)
                       : crypto_kx_client_session_keys(s->rx, s->tx, s->pk, s->sk, s->peer_pk);
    if (rc) {
        *why = "unusable ephemeral key";
        return -1;
    }
    /* bind the session keys to the shared key as well */
    crypto_generichash(s->rx, sizeof s->rx, s->rx, sizeof s->rx, s->key, NETIO_KEY_BYTES);
    crypto_generichash(s->tx, sizeof s->tx, s->tx, sizeof s->tx, s->key, NETIO_KEY_BYTES);
    sodium_memzero(s->sk, sizeof s->sk);
    return 0;
}

void secure_push_header(secure *s, uint8_t out[SECURE_HEADER_BYTES])
{
    crypto_secretstream_xchacha20poly1305_init_push(&s->push, out, s->tx);
}

int secure_pull_header(secure *s, const uint8_t in[SECURE_HEADER_BYTES])
{
    return crypto_secretstream_xchacha20poly1305_init_pull(&s->pull, in, s->rx) ? -1 : 0;
}

void secure_seal(secure_stream *push, const uint8_t *plain, size_t len, uint8_t *out)
{
    crypto_secretstream_xchacha20poly1305_push(push, out, NULL, plain, len, NULL, 0, 0);
}

int secure_open(secure *s, const uint8_t *cipher, size_t clen, uint8_t *out)
{
    unsigned char tag;
    if (clen < SECURE_OVERHEAD)
        return -1;
    return crypto_secretstream_xchacha20poly1305_pull(&s->pull, out, NULL, &tag, cipher, clen,
                                                      NULL, 0) ? -1 : 0;
}
