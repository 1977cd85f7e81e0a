#include "engine/cluster/gossip_proto.h"

#include "netio/hub.h"
#include "netio/wire.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void gossip_limits(frame_limits *l, long nparams)
{
    memset(l, 0, sizeof *l);
    l->ntypes = GOSSIP_MSG_END;
    uint32_t floats = nparams > 0 ? (uint32_t)(4 * nparams) : 0;
    l->max_payload[GOSSIP_MSG_HELLO] = 4 + GOSSIP_JOB_HASH + 8 + 4 + GOSSIP_ADDR + 16;
    l->max_payload[GOSSIP_MSG_MEMBERS] = 4 + CONFIG_MAX_PEERS * (8 + 4 + GOSSIP_ADDR);
    l->max_payload[GOSSIP_MSG_PUSH] = floats ? GOSSIP_PUSH_HEAD + floats : 0;
    l->max_payload[GOSSIP_MSG_STATE_ASK] = 4;
    l->max_payload[GOSSIP_MSG_STATE] = floats ? GOSSIP_STATE_HEAD + floats : 0;
    l->max_payload[GOSSIP_MSG_FINAL] = floats ? GOSSIP_FINAL_HEAD + floats : 0;
    l->max_payload[GOSSIP_MSG_LEAVE] = GOSSIP_TEXT;
}

const char *gossip_msg_name(unsigned type)
{
    static const char *const names[] = {"HELLO", "MEMBERS", "PUSH", "STATE_ASK", "STATE",
                                        "FINAL", "LEAVE"};
    return type >= GOSSIP_MSG_HELLO && type < GOSSIP_MSG_END ? names[type - GOSSIP_MSG_HELLO] : "?";
}

static void put_addr(wire_writer *w, const char *addr)
{
    size_t n = strnlen(addr, GOSSIP_ADDR - 1);
    wire_u32(w, (uint32_t)n);
    wire_put(w, addr, n);
}

size_t gossip_hello_encode(const gossip_hello *m, uint8_t *out, size_t cap)
{
    wire_writer w = {out, 0, cap};
    wire_u32(&w, m->version);
    wire_put(&w, m->job, GOSSIP_JOB_HASH);
    wire_u64(&w, m->id);
    put_addr(&w, m->addr);
    wire_u32(&w, m->epoch);
    wire_u32(&w, m->finished);
    wire_u64(&w, m->round);
    return wire_length(&w);
}

size_t gossip_members_encode(const gossip_members *m, uint8_t *out, size_t cap)
{
    wire_writer w = {out, 0, cap};
    wire_u32(&w, m->n);
    for (uint32_t i = 0; i < m->n; i++) {
        wire_u64(&w, m->id[i]);
        put_addr(&w, m->addr[i]);
    }
    return wire_length(&w);
}

size_t gossip_model_head(unsigned type, const gossip_model_msg *m, uint8_t *out, size_t cap)
{
    wire_writer w = {out, 0, cap};
    wire_u64(&w, m->round);
    if (type == GOSSIP_MSG_FINAL) {
        wire_f64(&w, m->samples);
        wire_f64(&w, m->joules);
        wire_u32(&w, m->estimated);
        return wire_length(&w);
    }
    wire_u32(&w, m->epoch);
    wire_u32(&w, m->batch);
    if (type == GOSSIP_MSG_PUSH) {
        wire_f64(&w, m->mass);
        wire_f64(&w, m->round_s);
        wire_f64(&w, m->joules);
        wire_u32(&w, m->estimated);
    }
    return wire_length(&w);
}

/* ---- decoders ---- */

static int finish(const wire_reader *r, const char *msg, char *why, size_t whylen)
{
    if (r->bad)
        return snprintf(why, whylen, "a %s message cut short", msg), -1;
    if (r->at != r->len)
        return snprintf(why, whylen, "a %s message with %zu bytes too many", msg, r->len - r->at), -1;
    return 0;
}

/* An address: HOST:PORT, printable, shorter than GOSSIP_ADDR. */
static int get_addr(wire_reader *r, char out[GOSSIP_ADDR], char *why, size_t whylen)
{
    uint32_t n = wire_get_u32(r);
    const uint8_t *s = n < GOSSIP_ADDR ? wire_take(r, n) : NULL;
    if (!s || !n)
        return snprintf(why, whylen, "an address of %u bytes (1 to %d)", n, GOSSIP_ADDR - 1), -1;
    for (uint32_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~')
            return snprintf(why, whylen, "an address with byte 0x%02x", s[i]), -1;
    memcpy(out, s, n);
    out[n] = 0;
    char host[GOSSIP_ADDR], port[16], err[128];
    if (netio_split_address(out, host, sizeof host, port, sizeof port, err, sizeof err))
        return snprintf(why, whylen, "address '%s': %s", out, err), -1;
    return 0;
}

int gossip_hello_decode(gossip_hello *m, const uint8_t *p, size_t len, char *why, size_t whylen)
{
    wire_reader r = {p, len, 0, 0};
    memset(m, 0, sizeof *m);
    m->version = wire_get_u32(&r);
    const uint8_t *job = wire_take(&r, GOSSIP_JOB_HASH);
    if (job)
        memcpy(m->job, job, GOSSIP_JOB_HASH);
    m->id = wire_get_u64(&r);
    if (r.bad || get_addr(&r, m->addr, why, whylen))
        return r.bad ? finish(&r, "HELLO", why, whylen) : -1;
    m->epoch = wire_get_u32(&r);
    m->finished = wire_get_u32(&r);
    m->round = wire_get_u64(&r);
    if (finish(&r, "HELLO", why, whylen))
        return -1;
    if (m->version != GOSSIP_VERSION)
        return snprintf(why, whylen, "gossip protocol version %u (this peer speaks %u: use the "
                        "same frugal everywhere)", m->version, GOSSIP_VERSION), -1;
    if (!m->id || m->finished > 1 || m->epoch > 1000000)
        return snprintf(why, whylen, "a HELLO with id %llu, epoch %u, finished %u",
                        (unsigned long long)m->id, m->epoch, m->finished), -1;
    return 0;
}

int gossip_members_decode(gossip_members *m, const uint8_t *p, size_t len, char *why,
                          size_t whylen)
{
    wire_reader r = {p, len, 0, 0};
    m->n = wire_get_u32(&r);
    if (m->n > CONFIG_MAX_PEERS)
        return snprintf(why, whylen, "a MEMBERS message of %u peers (at most %d)", m->n,
                        CONFIG_MAX_PEERS), -1;
    for (uint32_t i = 0; i < m->n; i++) {
        m->id[i] = wire_get_u64(&r);
        if (r.bad)
            break;
        if (!m->id[i])
            return snprintf(why, whylen, "a MEMBERS message with peer id 0"), -1;
        if (get_addr(&r, m->addr[i], why, whylen))
            return r.bad ? finish(&r, "MEMBERS", why, whylen) : -1;
    }
    return finish(&r, "MEMBERS", why, whylen);
}

static int figure_ok(double v, double hi) { return isfinite(v) && v >= 0 && v <= hi; }

int gossip_model_decode(unsigned type, gossip_model_msg *m, const uint8_t *p, size_t len,
                        long nparams, char *why, size_t whylen)
{
    const char *name = gossip_msg_name(type);
    size_t head = type == GOSSIP_MSG_PUSH ? GOSSIP_PUSH_HEAD
                  : type == GOSSIP_MSG_STATE ? GOSSIP_STATE_HEAD : GOSSIP_FINAL_HEAD;
    if (nparams <= 0 || len != head + 4 * (size_t)nparams)
        return snprintf(why, whylen, "a %s message of %zu bytes for %ld parameters", name, len,
                        nparams), -1;
    memset(m, 0, sizeof *m);
    wire_reader r = {p, head, 0, 0};
    m->round = wire_get_u64(&r);
    if (type == GOSSIP_MSG_FINAL) {
        m->samples = wire_get_f64(&r);
        m->joules = wire_get_f64(&r);
        m->estimated = wire_get_u32(&r);
    } else {
        m->epoch = wire_get_u32(&r);
        m->batch = wire_get_u32(&r);
    }
    if (type == GOSSIP_MSG_PUSH) {
        m->mass = wire_get_f64(&r);
        m->round_s = wire_get_f64(&r);
        m->joules = wire_get_f64(&r);
        m->estimated = wire_get_u32(&r);
        if (!(m->mass >= 0) || !figure_ok(m->mass, GOSSIP_MAX_MASS))
            return snprintf(why, whylen, "a PUSH with weight %g (0 to %g)", m->mass,
                            GOSSIP_MAX_MASS), -1;
    }
    if (finish(&r, name, why, whylen))
        return -1;
    if (!figure_ok(m->round_s, GOSSIP_MAX_FIGURE) || !figure_ok(m->joules, GOSSIP_MAX_FIGURE) ||
        !figure_ok(m->samples, GOSSIP_MAX_FIGURE) || m->estimated > 1 || m->epoch > 1000000)
        return snprintf(why, whylen, "a %s message with figures out of range", name), -1;
    m->values = p + head;
    for (long i = 0; i < nparams; i++) {   /* maybe unaligned: bytes */
        uint32_t bits;
        memcpy(&bits, m->values + 4 * i, 4);
        if ((bits & 0x7f800000u) == 0x7f800000u)   /* every exponent bit: inf or nan */
            return snprintf(why, whylen, "a %s message with a non-finite parameter (number %ld)",
                            name, i), -1;
    }
    return 0;
}

int gossip_text_decode(char *out, size_t outlen, const uint8_t *p, size_t len, char *why,
                       size_t whylen)
{
    if (len >= outlen || len > GOSSIP_TEXT)
        return snprintf(why, whylen, "a text of %zu bytes", len), -1;
    for (size_t i = 0; i < len; i++)
        if (p[i] < ' ' || p[i] > '~')
            return snprintf(why, whylen, "a text with byte 0x%02x", p[i]), -1;
    memcpy(out, p, len);
    out[len] = 0;
    return 0;
}
