#include "netio/secure.h"

#include <string.h>

#define MAGIC "FRGL"
#define VERSION 3u   /* 2: messages sealed in pieces (frame.h); 3: AES-256-GCM offered */
#define OFFERS_AES 1u   /* byte 6 of a hello */

_Static_assert(crypto_aead_aes256gcm_ABYTES + 1 == SECURE_OVERHEAD,
               "both ciphers' pieces have one size on the wire");

int secure_init(secure *s, const uint8_t key[NETIO_KEY_BYTES], int server, int offer_aes)
{
    memset(s, 0, sizeof *s);
    if (sodium_init() < 0)
        return -1;
    s->server = server;
    s->aes_here = offer_aes && crypto_aead_aes256gcm_is_available();
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
    out[4] = 0, out[5] = 0, out[6] = s->aes_here ? OFFERS_AES : 0, out[7] = VERSION;
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
    if (in[4] || in[5] || (in[6] & ~OFFERS_AES) || in[7] != VERSION) {
        *why = "another version of frugal's protocol";
        return -1;
    }
    hello_mac(s, in, !s->server, s->server ? in + 8 : s->pk, mac);
    if (sodium_memcmp(mac, in + 40, sizeof mac)) {
        *why = "wrong key";
        return -1;
    }
    memcpy(s->peer_pk, in + 8, crypto_kx_PUBLICKEYBYTES);
    s->aes = s->aes_here && (in[6] & OFFERS_AES);
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

/* AES-256-GCM's nonce: the first 4 bytes of the stream's header (random), then its count of
 * pieces; the session key is fresh for each connection, so no nonce repeats under a key. */
static void aes_start(secure_stream *st, const uint8_t header[SECURE_HEADER_BYTES],
                      const uint8_t key[crypto_kx_SESSIONKEYBYTES])
{
    st->aes = 1;
    crypto_aead_aes256gcm_beforenm(&st->aes_key, key);
    memset(st->nonce, 0, sizeof st->nonce);
    memcpy(st->nonce, header, 4);
}

static void aes_next_nonce(secure_stream *st)
{
    sodium_increment(st->nonce + 4, sizeof st->nonce - 4);
}

void secure_push_header(secure *s, uint8_t out[SECURE_HEADER_BYTES])
{
    if (!s->aes) {
        crypto_secretstream_xchacha20poly1305_init_push(&s->push.chacha, out, s->tx);
        return;
    }
    randombytes_buf(out, SECURE_HEADER_BYTES);
    aes_start(&s->push, out, s->tx);
}

int secure_pull_header(secure *s, const uint8_t in[SECURE_HEADER_BYTES])
{
    if (s->aes) {
        aes_start(&s->pull, in, s->rx);
        return 0;
    }
    return crypto_secretstream_xchacha20poly1305_init_pull(&s->pull.chacha, in, s->rx) ? -1 : 0;
}

void secure_binding(const secure *s, uint8_t out[NETIO_BINDING_BYTES])
{
    crypto_generichash_state st;
    crypto_generichash_init(&st, s->key, NETIO_KEY_BYTES, NETIO_BINDING_BYTES);
    crypto_generichash_update(&st, (const uint8_t *)"frugal session binding", 22);
    crypto_generichash_update(&st, s->server ? s->peer_pk : s->pk, crypto_kx_PUBLICKEYBYTES);
    crypto_generichash_update(&st, s->server ? s->pk : s->peer_pk, crypto_kx_PUBLICKEYBYTES);
    crypto_generichash_final(&st, out, NETIO_BINDING_BYTES);
}

const char *secure_cipher(const secure *s)
{
    return s->aes ? "aes256gcm" : "xchacha20poly1305";
}

void secure_seal(secure_stream *push, const uint8_t *plain, size_t len, uint8_t *out)
{
    if (!push->aes) {
        crypto_secretstream_xchacha20poly1305_push(&push->chacha, out, NULL, plain, len, NULL, 0, 0);
        return;
    }
    out[0] = 0;
    crypto_aead_aes256gcm_encrypt_afternm(out + 1, NULL, plain, len, out, 1, NULL, push->nonce,
                                          &push->aes_key);
    aes_next_nonce(push);
}

int secure_open(secure *s, const uint8_t *cipher, size_t clen, uint8_t *out)
{
    unsigned char tag;
    if (clen < SECURE_OVERHEAD)
        return -1;
    if (!s->pull.aes)
        return crypto_secretstream_xchacha20poly1305_pull(&s->pull.chacha, out, NULL, &tag, cipher,
                                                          clen, NULL, 0) ? -1 : 0;
    if (cipher[0] || crypto_aead_aes256gcm_decrypt_afternm(out, NULL, NULL, cipher + 1, clen - 1,
                                                           cipher, 1, s->pull.nonce,
                                                           &s->pull.aes_key))
        return -1;
    aes_next_nonce(&s->pull);
    return 0;
}
