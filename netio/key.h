/* Key files. The shared key that admits a machine to a training cluster: 32 random bytes in a
 * text file ("frugal-key-1 " and 64 hex digits), made by `frugal keygen`, copied to every machine,
 * readable by its owner only.
 *
 * A machine's identity, beside it: an Ed25519 key pair of its own (`frugal keygen --identity
 * FILE`: the secret key in FILE, mode 0600, never copied; its public line, "frugal-id-1 ", 64 hex
 * digits and a name, for the coordinator's allow file). In each session it signs the session's
 * binding (secure.h), which no other session has, so a signature cannot be replayed elsewhere. */
#ifndef FRUGAL_NETIO_KEY_H
#define FRUGAL_NETIO_KEY_H

#include <stddef.h>
#include <stdint.h>

#define NETIO_KEY_BYTES 32
#define NETIO_BINDING_BYTES 32
#define NETIO_ID_PUBLIC_BYTES 32
#define NETIO_ID_SIG_BYTES 64
#define IDENTITY_PUBLIC_PREFIX "frugal-id-1 "

typedef struct netio_identity {
    uint8_t pk[NETIO_ID_PUBLIC_BYTES];
    uint8_t sk[64];
} netio_identity;

/* Writes a new key to path (which must not exist), mode 0600. 0, or -1 with err. */
int netio_key_generate(const char *path, char *err, size_t errlen);
/* Reads a key; refuses a malformed file or one that others can read. 0, or -1 with err. */
int netio_key_load(const char *path, uint8_t key[NETIO_KEY_BYTES], char *err, size_t errlen);

/* A new identity: its secret key into path (which must not exist), mode 0600; its public line
 * into pub_line. 0, or -1 with err. */
int netio_identity_generate(const char *path, char *pub_line, size_t publen, char *err,
                            size_t errlen);
int netio_identity_load(const char *path, netio_identity *id, char *err, size_t errlen);
void netio_identity_sign(const netio_identity *id, const uint8_t binding[NETIO_BINDING_BYTES],
                         uint8_t sig[NETIO_ID_SIG_BYTES]);
/* 0 when sig is pk's over binding. */
int netio_identity_verify(const uint8_t pk[NETIO_ID_PUBLIC_BYTES],
                          const uint8_t binding[NETIO_BINDING_BYTES],
                          const uint8_t sig[NETIO_ID_SIG_BYTES]);

#endif
