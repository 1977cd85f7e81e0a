#include "netio/secure_speed.h"

#include "netio/frame.h"
#include "netio/secure.h"

#include <stdlib.h>
#include <time.h>

/* The process's CPU seconds: what the cipher costs, whatever else the machine runs. */
static double cpu_s(void) { return (double)clock() / CLOCKS_PER_SEC; }

/* Two ends of a connection, handshake done in memory: 0, or -1. */
static int connect_pair(secure *client, secure *server, int aes)
{
    uint8_t key[NETIO_KEY_BYTES], hello[SECURE_HELLO_BYTES], header[SECURE_HEADER_BYTES];
    const char *why;
    randombytes_buf(key, sizeof key);
    int rc = secure_init(client, key, 0, aes) || secure_init(server, key, 1, aes);
    sodium_memzero(key, sizeof key);
    if (rc)
        return -1;
    secure_hello(client, hello);
    if (secure_check_hello(server, hello, &why))
        return -1;
    secure_hello(server, hello);
    if (secure_check_hello(client, hello, &why))
        return -1;
    secure_push_header(client, header);
    return secure_pull_header(server, header);
}

double secure_speed(int aes, double seconds)
{
    if (sodium_init() < 0)
        return -1;
    if (aes && !crypto_aead_aes256gcm_is_available())
        return 0;
    secure client, server;
    uint8_t *plain = calloc(1, FRAME_PIECE), *sealed = malloc(FRAME_PIECE + SECURE_OVERHEAD);
    double bytes = 0, start = cpu_s(), took = 0;
    int ok = plain && sealed && connect_pair(&client, &server, aes) == 0;
    while (ok && took < seconds) {
        for (int i = 0; ok && i < 16; i++) {   /* the clock read once per 1 MiB */
            secure_seal(&client.push, plain, FRAME_PIECE, sealed);
            ok = secure_open(&server, sealed, FRAME_PIECE + SECURE_OVERHEAD, plain) == 0;
            bytes += FRAME_PIECE;
        }
        took = cpu_s() - start;
    }
    secure_wipe(&client);
    secure_wipe(&server);
    free(plain);
    free(sealed);
    return ok ? bytes / took : -1;
}
