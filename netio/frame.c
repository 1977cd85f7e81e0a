#include "netio/frame.h"

#include <stdio.h>

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void frame_header(uint8_t out[FRAME_HEADER], uint16_t type, uint32_t len)
{
    out[0] = (uint8_t)(type >> 8), out[1] = (uint8_t)type;
    out[2] = 0, out[3] = FRAME_VERSION;
    out[4] = (uint8_t)(len >> 24), out[5] = (uint8_t)(len >> 16);
    out[6] = (uint8_t)(len >> 8), out[7] = (uint8_t)len;
}

int frame_check_header(const uint8_t head[FRAME_HEADER], const frame_limits *l, uint16_t *type,
                       uint32_t *plen, char *why, size_t whylen)
{
    unsigned t = (unsigned)head[0] << 8 | head[1], version = (unsigned)head[2] << 8 | head[3];
    uint32_t n = get32(head + 4);
    if (version != FRAME_VERSION) {
        snprintf(why, whylen, "a frame of version %u (this frugal speaks %d)", version, FRAME_VERSION);
        return -1;
    }
    if (t != FRAME_PING && (t >= (unsigned)l->ntypes || t >= FRAME_MAX_TYPES || !l->max_payload[t])) {
        snprintf(why, whylen, "a message of unknown type %u", t);
        return -1;
    }
    if (t == FRAME_PING ? n != 0 : n > l->max_payload[t]) {
        snprintf(why, whylen, "a message of type %u of %u bytes (at most %u)", t, n,
                 t == FRAME_PING ? 0 : l->max_payload[t]);
        return -1;
    }
    *type = (uint16_t)t;
    *plen = n;
    return 0;
}

int frame_check(const uint8_t *frame, size_t len, const frame_limits *l, uint16_t *type,
                const uint8_t **payload, size_t *plen, char *why, size_t whylen)
{
    uint32_t n;
    if (len < FRAME_HEADER) {
        snprintf(why, whylen, "a frame of %zu bytes (shorter than its header)", len);
        return -1;
    }
    if (frame_check_header(frame, l, type, &n, why, whylen))
        return -1;
    if (n != len - FRAME_HEADER) {
        snprintf(why, whylen, "a message of type %u whose length says %u bytes, not %zu", *type,
                 n, len - FRAME_HEADER);
        return -1;
    }
    *payload = frame + FRAME_HEADER;
    *plen = n;
    return 0;
}
