#include "engine/cluster/file_hash.h"

#include "common/input_file.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int file_hash(const char *path, uint64_t max, uint8_t hash[FILE_HASH_BYTES], uint64_t *size,
              char *why, size_t whylen)
{
    struct stat st;
    int fd = input_open_fd(path, &st);   /* a FIFO does not hold it: refused below */
    if (fd < 0) {
        snprintf(why, whylen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
        snprintf(why, whylen, "%s: %s", path, S_ISREG(st.st_mode) ? "larger than expected"
                                                                  : "not a regular file");
        close(fd);
        return -1;
    }
    crypto_generichash_state hs;
    crypto_generichash_init(&hs, NULL, 0, FILE_HASH_BYTES);
    uint8_t buf[1 << 16];
    ssize_t r = 0;
    *size = 0;
    while (*size <= max && (r = read(fd, buf, sizeof buf)) > 0) {   /* it may grow meanwhile */
        crypto_generichash_update(&hs, buf, (size_t)r);
        *size += (uint64_t)r;
    }
    close(fd);
    crypto_generichash_final(&hs, hash, FILE_HASH_BYTES);
    if (r < 0 || *size > max) {
        snprintf(why, whylen, "%s: %s", path, r < 0 ? strerror(errno) : "larger than expected");
        return -1;
    }
    return 0;
}

int file_hash_matches(const char *path, uint64_t size, const uint8_t hash[FILE_HASH_BYTES])
{
    uint8_t h[FILE_HASH_BYTES];
    uint64_t got;
    char why[16];
    return !file_hash(path, size, h, &got, why, sizeof why) && got == size &&
           !memcmp(h, hash, FILE_HASH_BYTES);
}
