/* Frames: what travels on a connection once the handshake is done.
 *
 *   a message:    type (2) | version (2) | payload length (4) | payload
 *   on the wire:  the message cut into pieces of at most FRAME_PIECE bytes, each sealed
 *                 (secure.h) and sent as length (4 bytes, big endian) | sealed piece
 *
 * Pieces let a long message be encrypted, carried and decrypted at the same time, a piece at a
 * time, instead of one step after the other. The wire length is checked against the largest
 * sealed piece before a byte of it is stored; the first piece's header is checked against the
 * payload bound of its type before the rest of the message is stored. Type 0 is the
 * transport's own keepalive. */
#ifndef FRUGAL_NETIO_FRAME_H
#define FRUGAL_NETIO_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define FRAME_HEADER 8
#define FRAME_VERSION 1
#define FRAME_PING 0
#define FRAME_MAX_TYPES 64
#define FRAME_PIECE (64u << 10)

/* The payload bounds a receiver accepts, per type (0: a type it does not accept). */
typedef struct frame_limits {
    int ntypes;
    uint32_t max_payload[FRAME_MAX_TYPES];
} frame_limits;

void frame_header(uint8_t out[FRAME_HEADER], uint16_t type, uint32_t len);
/* Checks a message's header: its type, version and payload length. 0 with the type and the
 * payload length, or -1 with why. */
int frame_check_header(const uint8_t head[FRAME_HEADER], const frame_limits *l, uint16_t *type,
                       uint32_t *plen, char *why, size_t whylen);
/* Checks a whole message of len bytes: its type, version and length. 0 with the type and the
 * payload, or -1 with why. */
int frame_check(const uint8_t *frame, size_t len, const frame_limits *l, uint16_t *type,
                const uint8_t **payload, size_t *plen, char *why, size_t whylen);

#endif
