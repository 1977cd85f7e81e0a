/* Who a gossip peer sends its model to in a round, and whether it takes part at all: functions of
 * the members' ids, the round and the job's seed alone, so that every peer computes the same
 * graph from the same view, and knows which pushes to wait for (its in-neighbours) without a
 * message saying so.
 *
 *   ring         the k nearest in id order, alternately after and before (k = 2: both sides)
 *   exponential  SGP's time-varying graph (Assran et al. 2019): in round r, the peer 2^(r mod L)
 *                places on (L = ceil(log2 n)), and with k > 1 the next powers too, so that a
 *                model reaches every peer in L rounds with one message per peer
 *   random       k distinct peers drawn from (seed, round, sender)
 *   full         every other peer
 *
 * A sender keeps 1/(d + 1) of its push-sum weight and sends as much to each of its d targets. */
#ifndef FRUGAL_GOSSIP_TOPOLOGY_H
#define FRUGAL_GOSSIP_TOPOLOGY_H

#include <stdint.h>

/* Whether peer `id` exchanges in `round` ([gossip] participation p: a fraction of rounds drawn
 * from the seed, the same draw on every peer). */
int gossip_takes_part(uint64_t seed, uint64_t id, uint64_t round, double p);
/* The targets of member `from` (an index into ids, n members in increasing id order) in `round`:
 * their indexes in out (at most n - 1), and how many. */
int gossip_targets(int topology, int k, const uint64_t *ids, int n, int from, uint64_t round,
                   uint64_t seed, int *out);
/* Whether member `to` is among member `from`'s targets in `round`. */
int gossip_sends_to(int topology, int k, const uint64_t *ids, int n, int from, int to,
                    uint64_t round, uint64_t seed);
/* A 64-bit mix (splitmix64's finaliser): draws and ids. */
uint64_t gossip_mix(uint64_t x);

#endif
