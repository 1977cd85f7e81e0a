/* `frugal simulate --search`: how many machines, which ones, and which mode, for a policy. The
 * options: the coordinator's group alone, then with the next cheapest groups one by one (cheapest
 * by the policy's cost per sample: joules, grams, or seconds for `time`), each in every mode
 * (synchronous, averaging every 4 and 16 batches, gossip exponential every 1 and 10 steps); each
 * simulated; the best by the policy among those within the deadline (the fastest when none is). */
#ifndef FRUGAL_SIM_SEARCH_H
#define FRUGAL_SIM_SEARCH_H

#include "engine/sim/scenario.h"

#include <stdio.h>

/* Prints the options and the choice on f; 0, or -1 with err. */
int sim_search(const sim_scenario *s, FILE *f, char *err, size_t errlen);

#endif
