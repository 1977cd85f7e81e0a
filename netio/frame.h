/* Frames: what travels on a connection once the handshake is done.
 *
 *   on the wire:  length (4 bytes, big endian) | sealed frame (length bytes)
 *   sealed frame: type (2) | version (2) | payload length (4) | payload
 *
 * The wire length is checked against the largest frame the receiver accepts before a byte of
 * the frame is stored; once opened (secure.h), the header is checked against the payload bound
 * of its type. Type 0 is the transport's own keepalive. */
#ifndef FRUGAL_NETIO_FRAME_H
#define FRUGAL_NETIO_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define FRAME_HEADER 8
#define FRAME_VERSION 1
#define FRAME_PING 0
#define FRAME_MAX_TYPES 64

/* The payload bounds a receiver accepts, per type (0: a type it does not accept). */
typedef struct frame_limits {
    int ntypes;
    uint32_t max_payload[FRAME_MAX_TYPES];
} frame_limits;

/* The largest sealed frame under these limits. */
size_t frame_max_sealed(const frame_limits *l);
void frame_header(uint8_t out[FRAME_HEADER], uint16_t type, uint32_t len);
/* Checks an opened frame of len bytes: its type, version and length. 0 with the type and the
 * payload, or -1 with why. */
int frame_check(const uint8_t *frame, size_t len, const frame_limits *l, uint16_t *type,
                const uint8_t **payload, size_t *plen, char *why, size_t whylen);

#endif
