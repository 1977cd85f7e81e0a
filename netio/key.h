/* The shared key that admits a machine to a training cluster: 32 random bytes in a text file
 * ("frugal-key-1 " and 64 hex digits), made by `frugal keygen`, copied to every machine, readable
 * by its owner only. */
#ifndef FRUGAL_NETIO_KEY_H
#define FRUGAL_NETIO_KEY_H

#include <stddef.h>
#include <stdint.h>

#define NETIO_KEY_BYTES 32

/* Writes a new key to path (which must not exist), mode 0600. 0, or -1 with err. */
int netio_key_generate(const char *path, char *err, size_t errlen);
/* Reads a key; refuses a malformed file or one that others can read. 0, or -1 with err. */
int netio_key_load(const char *path, uint8_t key[NETIO_KEY_BYTES], char *err, size_t errlen);

#endif
