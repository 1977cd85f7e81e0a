#include "netio/key.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY_PREFIX "frugal-key-1 "
#define IDENTITY_PREFIX "frugal-identity-1 "

/* n secret bytes as "PREFIX" and hex digits, in a new file of mode 0600 (never overwritten). */
static int write_secret(const char *path, const char *prefix, const uint8_t *bytes, size_t n,
                        char *err, size_t errlen)
{
    char text[256];
    snprintf(text, sizeof text, "%s", prefix);
    sodium_bin2hex(text + strlen(prefix), sizeof text - strlen(prefix) - 1, bytes, n);
    strcat(text, "\n");
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s%s", path, strerror(errno),
                 errno == EEXIST ? " (a key is never overwritten: remove it first)" : "");
        sodium_memzero(text, sizeof text);
        return -1;
    }
    size_t len = strlen(text);
    int ok = write(fd, text, len) == (ssize_t)len && fsync(fd) == 0;
    int saved = errno;
    sodium_memzero(text, sizeof text);
    if (close(fd) || !ok) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(ok ? errno : saved));
        unlink(path);
        return -1;
    }
    return 0;
}

/* Reads what write_secret wrote; refuses a malformed file (`what`, made by `make_with`) or one
 * that others can read. */
static int read_secret(const char *path, const char *prefix, uint8_t *out, size_t n,
                       const char *what, const char *make_with, char *err, size_t errlen)
{
    if (sodium_init() < 0) {
        snprintf(err, errlen, "libsodium cannot start (no random source?)");
        return -1;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    size_t want = strlen(prefix) + 2 * n + 1;   /* with its newline */
    char text[256] = "";
    ssize_t got = S_ISREG(st.st_mode) ? read(fd, text, sizeof text - 1) : -1;
    close(fd);
    size_t hexlen = 0;
    int ok = got == (ssize_t)want && !strncmp(text, prefix, strlen(prefix)) &&
             text[want - 1] == '\n' &&
             sodium_hex2bin(out, n, text + strlen(prefix), 2 * n, NULL, &hexlen, NULL) == 0 &&
             hexlen == n;
    sodium_memzero(text, sizeof text);
    if (!ok) {
        snprintf(err, errlen, "%s %s: not a frugal %s (make one with: %s)", what, path, what,
                 make_with);
        return -1;
    }
    if (st.st_mode & 077) {
        sodium_memzero(out, n);
        snprintf(err, errlen, "%s %s: readable by others (mode %03o): chmod 600 %s", what, path,
                 (unsigned)(st.st_mode & 0777), path);
        return -1;
    }
    return 0;
}

int netio_key_generate(const char *path, char *err, size_t errlen)
{
    if (sodium_init() < 0) {
        snprintf(err, errlen, "libsodium cannot start (no random source?)");
        return -1;
    }
    uint8_t key[NETIO_KEY_BYTES];
    randombytes_buf(key, sizeof key);
    int rc = write_secret(path, KEY_PREFIX, key, sizeof key, err, errlen);
    sodium_memzero(key, sizeof key);
    return rc;
}

int netio_key_load(const char *path, uint8_t key[NETIO_KEY_BYTES], char *err, size_t errlen)
{
    return read_secret(path, KEY_PREFIX, key, NETIO_KEY_BYTES, "key", "frugal keygen FILE", err,
                       errlen);
}

/* ---- a machine's identity ---- */

int netio_identity_generate(const char *path, char *pub_line, size_t publen, char *err,
                            size_t errlen)
{
    if (sodium_init() < 0) {
        snprintf(err, errlen, "libsodium cannot start (no random source?)");
        return -1;
    }
    netio_identity id;
    crypto_sign_keypair(id.pk, id.sk);
    int rc = write_secret(path, IDENTITY_PREFIX, id.sk, sizeof id.sk, err, errlen);
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    for (char *c = host; *c; c++)   /* a name is one word */
        *c = *c == ' ' || *c == '\t' ? '-' : *c;
    char hex[2 * NETIO_ID_PUBLIC_BYTES + 1];
    sodium_bin2hex(hex, sizeof hex, id.pk, sizeof id.pk);
    snprintf(pub_line, publen, "%s%s %s", IDENTITY_PUBLIC_PREFIX, hex, host[0] ? host : "machine");
    sodium_memzero(&id, sizeof id);
    return rc;
}

int netio_identity_load(const char *path, netio_identity *id, char *err, size_t errlen)
{
    if (read_secret(path, IDENTITY_PREFIX, id->sk, sizeof id->sk, "identity",
                    "frugal keygen --identity FILE", err, errlen))
        return -1;
    crypto_sign_ed25519_sk_to_pk(id->pk, id->sk);
    return 0;
}

/* What an identity signs: its session's binding (secure.h), under a name of its own. */
static void signed_text(const uint8_t binding[NETIO_BINDING_BYTES], uint8_t out[64])
{
    static const char what[] = "frugal identity for session ";   /* 28 bytes */
    memcpy(out, what, 28);
    memcpy(out + 28, binding, NETIO_BINDING_BYTES);
}

void netio_identity_sign(const netio_identity *id, const uint8_t binding[NETIO_BINDING_BYTES],
                         uint8_t sig[NETIO_ID_SIG_BYTES])
{
    uint8_t text[64];
    signed_text(binding, text);
    crypto_sign_detached(sig, NULL, text, 28 + NETIO_BINDING_BYTES, id->sk);
}

int netio_identity_verify(const uint8_t pk[NETIO_ID_PUBLIC_BYTES],
                          const uint8_t binding[NETIO_BINDING_BYTES],
                          const uint8_t sig[NETIO_ID_SIG_BYTES])
{
    uint8_t text[64];
    signed_text(binding, text);
    return crypto_sign_verify_detached(sig, text, 28 + NETIO_BINDING_BYTES, pk);
}
