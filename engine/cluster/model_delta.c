#include "engine/cluster/model_delta.h"

#include "ops/cpu.h"

#include <float.h>
#include <math.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

size_t model_delta_bytes(const long *layer_params, int nlayers)
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

/* The passes 8 at a time where the CPU has F16C (every AVX2 one), bit for bit what the loops
 * below make of the same floats; each returns how many it did (a multiple of 8). */
#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) static long encode_f16c(const float *base, const float *now,
                                                           long n, float inverse, uint8_t *out)
{
    const __m256 inv = _mm256_set1_ps(inverse), largest = _mm256_set1_ps(FLT_MAX);
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 d = _mm256_sub_ps(_mm256_loadu_ps(now + i),
                                 base ? _mm256_loadu_ps(base + i) : _mm256_setzero_ps());
        __m256 finite = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), d), largest, _CMP_LE_OQ);
        __m256 v = _mm256_blendv_ps(d, _mm256_mul_ps(d, inv), finite);
        _mm_storeu_si128((__m128i *)(out + 2 * i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    return i;
}

/* The largest finite |now - base| of the first (multiple of 8) values into *top, which it
 * raises only: a maximum, so the same whatever the order. */
__attribute__((target("avx"))) static long largest_avx(const float *base, const float *now, long n,
                                                       float *top)
{
    const __m256 largest = _mm256_set1_ps(FLT_MAX), sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_setzero_ps();
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 d = _mm256_sub_ps(_mm256_loadu_ps(now + i),
                                 base ? _mm256_loadu_ps(base + i) : _mm256_setzero_ps());
        __m256 a = _mm256_andnot_ps(sign, d);
        m = _mm256_max_ps(m, _mm256_and_ps(a, _mm256_cmp_ps(a, largest, _CMP_LE_OQ)));
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, m);
    for (int k = 0; k < 8; k++)
        *top = lanes[k] > *top ? lanes[k] : *top;
    return i;
}

__attribute__((target("avx,f16c"))) static long apply_f16c(const float *base, const uint8_t *in,
                                                          long n, float scale, float *out)
{
    const __m256 s = _mm256_set1_ps(scale);
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 h = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(in + 2 * i)));
        _mm256_storeu_ps(out + i, _mm256_add_ps(base ? _mm256_loadu_ps(base + i) : _mm256_setzero_ps(),
                                                _mm256_mul_ps(s, h)));
    }
    return i;
}

static int have_f16c(void) { return ops_isa_active() >= OPS_ISA_AVX2; }
#else
static long encode_f16c(const float *base, const float *now, long n, float inverse, uint8_t *out)
{
    (void)base, (void)now, (void)n, (void)inverse, (void)out;
    return 0;
}

static long apply_f16c(const float *base, const uint8_t *in, long n, float scale, float *out)
{
    (void)base, (void)in, (void)n, (void)scale, (void)out;
    return 0;
}

static long largest_avx(const float *base, const float *now, long n, float *top)
{
    (void)base, (void)now, (void)n, (void)top;
    return 0;
}

static int have_f16c(void) { return 0; }
#endif

void model_delta_encode(const float *base, const float *now, const long *layer_params, int nlayers,
                  uint8_t *out)
{
    for (int l = 0; l < nlayers; l++) {
        long n = layer_params[l];
        if (n <= 0)
            continue;
        float top = 0;
        for (long i = have_f16c() ? largest_avx(base, now, n, &top) : 0; i < n; i++) {
            float d = fabsf(now[i] - at(base, i));
            if (isfinite(d) && d > top)
                top = d;
        }
        float scale = top / DELTA_TOP, inverse = scale > 0 ? 1.0f / scale : 0;
        uint32_t bits;
        memcpy(&bits, &scale, sizeof bits);
        put_le(out, bits, 4);
        out += 4;
        for (long i = have_f16c() ? encode_f16c(base, now, n, inverse, out) : 0; i < n; i++) {
            float d = now[i] - at(base, i);   /* a non-finite one stays so: nothing is hidden */
            put_le(out + 2 * i, half_from(isfinite(d) ? d * inverse : d), 2);
        }
        out += 2 * n, now += n, base = base ? base + n : NULL;
    }
}

int model_delta_apply(const float *base, const uint8_t *in, const long *layer_params, int nlayers,
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
        for (long i = have_f16c() ? apply_f16c(base, in, n, scale, out) : 0; i < n; i++)
            out[i] = at(base, i) + scale * half_to((uint16_t)get_le(in + 2 * i, 2));
        in += 2 * n, out += n, base = base ? base + n : NULL;
    }
    return 0;
}
