/* Little-endian fields in and out of a message payload. A reader never reads past its end: a
 * short payload sets `bad`, and every later read yields zeros, so a decoder checks once. */
#ifndef FRUGAL_NETIO_WIRE_H
#define FRUGAL_NETIO_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct wire_writer {
    uint8_t *p;
    size_t len, cap;
} wire_writer;

typedef struct wire_reader {
    const uint8_t *p;
    size_t len, at;
    int bad;
} wire_reader;

static inline void wire_put(wire_writer *w, const void *bytes, size_t n)
{
    if (w->len + n <= w->cap)
        memcpy(w->p + w->len, bytes, n);
    w->len += n;   /* beyond cap: nothing written, and wire_length says so */
}

/* The bytes written, or 0 when they did not fit: a message of nothing, which every decoder
 * refuses, rather than a length that would send bytes from past the buffer. */
static inline size_t wire_length(const wire_writer *w)
{
    return w->len <= w->cap ? w->len : 0;
}

static inline void wire_u64(wire_writer *w, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    wire_put(w, b, 8);
}

static inline void wire_u32(wire_writer *w, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    wire_put(w, b, 4);
}

static inline void wire_f64(wire_writer *w, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    wire_u64(w, u);
}

static inline const uint8_t *wire_take(wire_reader *r, size_t n)
{
    if (r->bad || n > r->len - r->at) {
        r->bad = 1;
        return NULL;
    }
    r->at += n;
    return r->p + r->at - n;
}

static inline uint64_t wire_get_u64(wire_reader *r)
{
    const uint8_t *b = wire_take(r, 8);
    uint64_t v = 0;
    for (int i = 0; b && i < 8; i++)
        v |= (uint64_t)b[i] << (8 * i);
    return v;
}

static inline uint32_t wire_get_u32(wire_reader *r)
{
    const uint8_t *b = wire_take(r, 4);
    return b ? (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24
             : 0;
}

static inline double wire_get_f64(wire_reader *r)
{
    uint64_t u = wire_get_u64(r);
    double v;
    memcpy(&v, &u, 8);
    return v;
}

#endif
