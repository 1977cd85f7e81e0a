#include "ops/layers.h"

#include <math.h>

static uint32_t rotl(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }

void ops_rng_seed(ops_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) {   /* splitmix64 spreads any seed, 0 included, over the state */
        seed += 0x9e3779b97f4a7c15ULL;
        uint64_t z = seed;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        r->s[i] = (uint32_t)((z ^ (z >> 31)) >> 16);
    }
    if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3]))
        r->s[0] = 1;
}

uint32_t ops_rng_next(ops_rng *r)
{
    uint32_t *s = r->s;
    uint32_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return result;
}

float ops_rng_uniform(ops_rng *r)
{
    return (float)(ops_rng_next(r) >> 8) * (1.0f / 16777216.0f);
}

void init_kaiming_uniform(ops_rng *r, float *w, long n, int fan_in)
{
    /* kaiming_uniform_(a=sqrt(5)): gain sqrt(1/3), bound sqrt(3) * gain / sqrt(fan_in). */
    float bound = 1.0f / sqrtf((float)fan_in);
    for (long i = 0; i < n; i++)
        w[i] = (2.0f * ops_rng_uniform(r) - 1.0f) * bound;
}
