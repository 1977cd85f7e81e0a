/* The training files a coordinator shares travel by content: BLAKE2b-256 (libsodium) and size.
 * Only regular files are read, and never past what is expected, so that a path naming a device,
 * a FIFO or a directory (or a file that grows) cannot hold the reader. */
#ifndef FRUGAL_CLUSTER_FILE_HASH_H
#define FRUGAL_CLUSTER_FILE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define FILE_HASH_BYTES 32

/* The hash and size of the regular file at path, if it is at most max bytes. 0; -1 with why
 * (cannot open or read it, not a regular file, larger than max). */
int file_hash(const char *path, uint64_t max, uint8_t hash[FILE_HASH_BYTES], uint64_t *size,
              char *why, size_t whylen);
/* Whether path is a regular file of exactly `size` bytes with that hash. */
int file_hash_matches(const char *path, uint64_t size, const uint8_t hash[FILE_HASH_BYTES]);

#endif
