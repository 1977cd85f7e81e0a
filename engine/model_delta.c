#include "engine/model_delta.h"

#include <math.h>
#include <string.h>

#define DELTA_TOP 32768.0f   /* the largest difference of a layer, scaled: a half holds 65504 */

/* IEEE half from float, rounded to nearest even (past the half range: infinity). */
static uint16_t half_from(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u)                                   /* infinity, NaN (kept a NaN) */
        return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
    if (ax >= 0x477ff000u)                                   /* 65520 and up round past 65504 */
        return (uint16_t)(sign | 0x7c00);
    if (ax < 0x38800000u) {                                  /* below 2^-14: a subnormal half */
        float a;
        memcpy(&a, &ax, sizeof a);
        return (uint16_t)(sign | (uint16_t)nearbyintf(a * 16777216.0f));   /* units of 2^-24 */
    }
    uint32_t r = ax - 0x38000000u;                           /* exponent rebiased, 127 -> 15 */
    return (uint16_t)(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
}

static float half_to(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        float f = (float)m * 5.9604644775390625e-8f;         /* 2^-24 */
        return sign ? -f : f;
    }
    uint32_t x = sign | (e == 31 ? 0x7f800000u : (e + 112) << 23) | m << 13;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

size_t delta_bytes(const long *layer_params, int nlayers)
{
    size_t n = 0;
    for (int l = 0; l < nlayers; l++)
        n += layer_params[l] > 0 ? 4 + 2 * (size_t)layer_params[l] : 0;
    return n;
}

static void put_le(uint8_t *out, uint32_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        out[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le(const uint8_t *in, int bytes)
{
    uint32_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint32_t)in[i] << (8 * i);
    return v;
}

/* A base's value, none being zeros. */
static float at(const float *base, long i) { return base ? base[i] : 0; }

void delta_encode(const float *base, const float *now, const long *layer_params, int nlayers,
                  uint8_t *out)
{
    for (int l = 0; l < nlayers; l++) {
        long n = layer_params[l];
        if (n <= 0)
            continue;
        float top = 0;
        for (long i = 0; i < n; i++) {
            float d = fabsf(now[i] - at(base, i));
            if (isfinite(d) && d > top)
                top = d;
        }
        float scale = top / DELTA_TOP, inverse = scale > 0 ? 1.0f / scale : 0;
        uint32_t bits;
        memcpy(&bits, &scale, sizeof bits);
        put_le(out, bits, 4);
        out += 4;
        for (long i = 0; i < n; i++) {
            float d = now[i] - at(base, i);   /* a non-finite one stays so: nothing is hidden */
            put_le(out + 2 * i, half_from(isfinite(d) ? d * inverse : d), 2);
        }
        out += 2 * n, now += n, base = base ? base + n : NULL;
    }
}

int delta_apply(const float *base, const uint8_t *in, const long *layer_params, int nlayers,
                float *out)
{
    for (int l = 0; l < nlayers; l++) {
        long n = layer_params[l];
        if (n <= 0)
            continue;
        uint32_t bits = get_le(in, 4);
        float scale;
        memcpy(&scale, &bits, sizeof scale);
        if (!(scale >= 0) || !isfinite(scale))
            return -1;
        in += 4;
        for (long i = 0; i < n; i++)
            out[i] = at(base, i) + scale * half_to((uint16_t)get_le(in + 2 * i, 2));
        in += 2 * n, out += n, base = base ? base + n : NULL;
    }
    return 0;
}
