#include "netio/key.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY_PREFIX "frugal-key-1 "
#define KEY_TEXT (sizeof KEY_PREFIX - 1 + 2 * NETIO_KEY_BYTES + 1)   /* with its newline */

int netio_key_generate(const char *path, char *err, size_t errlen)
{
    if (sodium_init() < 0) {
        snprintf(err, errlen, "libsodium cannot start (no random source?)");
        return -1;
    }
    uint8_t key[NETIO_KEY_BYTES];
    char text[KEY_TEXT + 1] = KEY_PREFIX;
    randombytes_buf(key, sizeof key);
    sodium_bin2hex(text + strlen(KEY_PREFIX), 2 * NETIO_KEY_BYTES + 1, key, sizeof key);
    strcat(text, "\n");
    sodium_memzero(key, sizeof key);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s%s", path, strerror(errno),
                 errno == EEXIST ? " (a key is never overwritten: remove it first)" : "");
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

int netio_key_load(const char *path, uint8_t key[NETIO_KEY_BYTES], char *err, size_t errlen)
{
    if (sodium_init() < 0) {
        snprintf(err, errlen, "libsodium cannot start (no random source?)");
        return -1;
    }
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        snprintf(err, errlen, "key %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    char text[KEY_TEXT + 2] = "";
    ssize_t got = S_ISREG(st.st_mode) ? read(fd, text, sizeof text - 1) : -1;
    close(fd);
    size_t hexlen = 0;
    int ok = got == (ssize_t)KEY_TEXT && !strncmp(text, KEY_PREFIX, strlen(KEY_PREFIX)) &&
             text[KEY_TEXT - 1] == '\n' &&
             sodium_hex2bin(key, NETIO_KEY_BYTES, text + strlen(KEY_PREFIX), 2 * NETIO_KEY_BYTES,
                            NULL, &hexlen, NULL) == 0 && hexlen == NETIO_KEY_BYTES;
    sodium_memzero(text, sizeof text);
    if (!ok) {
        snprintf(err, errlen, "key %s: not a frugal key (make one with: frugal keygen FILE)", path);
        return -1;
    }
    if (st.st_mode & 077) {
        sodium_memzero(key, NETIO_KEY_BYTES);
        snprintf(err, errlen, "key %s: readable by others (mode %03o): chmod 600 %s", path,
                 (unsigned)(st.st_mode & 0777), path);
        return -1;
    }
    return 0;
}
