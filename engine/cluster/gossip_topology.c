#include "engine/cluster/gossip_topology.h"

#include "engine/job/config.h"

uint64_t gossip_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

int gossip_takes_part(uint64_t seed, uint64_t id, uint64_t round, double p)
{
    if (p >= 1)
        return 1;
    uint64_t draw = gossip_mix(gossip_mix(seed ^ 0x676f73736970ULL) ^ gossip_mix(id) ^ round);
    return (double)(draw >> 11) * 0x1.0p-53 < p;
}

/* Adds target t to out unless it is the sender or there already. */
static int add(int *out, int count, int t, int from)
{
    if (t == from)
        return count;
    for (int i = 0; i < count; i++)
        if (out[i] == t)
            return count;
    out[count] = t;
    return count + 1;
}

static int ceil_log2(int n)
{
    int l = 0;
    while ((1 << l) < n)
        l++;
    return l ? l : 1;
}

int gossip_targets(int topology, int k, const uint64_t *ids, int n, int from, uint64_t round,
                   uint64_t seed, int *out)
{
    int count = 0, want = k < n - 1 ? k : n - 1;
    if (n < 2)
        return 0;
    switch (topology) {
    case GOSSIP_RING:
        for (int step = 1; count < want; step++) {
            count = add(out, count, (from + step) % n, from);
            if (count < want)
                count = add(out, count, ((from - step) % n + n) % n, from);
        }
        return count;
    case GOSSIP_EXPONENTIAL: {
        int l = ceil_log2(n);
        for (int j = 0; j < l && count < want; j++)
            count = add(out, count, (int)((from + (1L << ((round + (uint64_t)j) % (uint64_t)l))) % n),
                        from);
        return count;
    }
    case GOSSIP_RANDOM: {
        uint64_t s = gossip_mix(seed ^ gossip_mix(ids[from]) ^ gossip_mix(round + 0x72616e64ULL));
        while (count < want) {
            s = gossip_mix(s);
            count = add(out, count, (int)(s % (uint64_t)n), from);
        }
        return count;
    }
    default:
        for (int t = 0; t < n; t++)
            count = add(out, count, t, from);
        return count;
    }
}

int gossip_sends_to(int topology, int k, const uint64_t *ids, int n, int from, int to,
                    uint64_t round, uint64_t seed)
{
    int out[CONFIG_MAX_PEERS];
    int count = gossip_targets(topology, k, ids, n, from, round, seed, out);
    for (int i = 0; i < count; i++)
        if (out[i] == to)
            return 1;
    return 0;
}
