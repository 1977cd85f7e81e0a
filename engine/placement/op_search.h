/* Which operating point to keep, learned while training: a search over caps (a power limit or a
 * clock limit, as fractions of the value the part had) under the job's policy.
 *
 * The search measures a coarse ladder from the part's own value down to 40% of it, then the
 * untried neighbours of the best rung (half a step either side), and keeps what the policy
 * prefers among all it measured (policy.h: energy, edp, carbon, or time; max_slowdown against
 * the fastest). Each rung gets OP_SEARCH_WINDOWS windows. On a cost that falls then rises with
 * the cap, it keeps what measuring every rung of the fine ladder would. Once kept, the figures
 * stay those it was kept on; windows far from them (other work, another batch) search again. */
#ifndef FRUGAL_OP_SEARCH_H
#define FRUGAL_OP_SEARCH_H

#include "engine/placement/policy.h"

#include <stddef.h>

#define OP_SEARCH_RUNGS 16
#define OP_SEARCH_WINDOWS 2
#define OP_SEARCH_STEP 0.15      /* the coarse ladder's step, as a fraction of the top */
#define OP_SEARCH_LOWEST 0.4     /* the lowest rung, as a fraction of the top */

typedef struct op_search {
    policy_limits limits;
    double top, floor;           /* the part's own value; the lowest it accepts */
    int n;
    double value[OP_SEARCH_RUNGS];
    option_figures fig[OP_SEARCH_RUNGS];
    int windows[OP_SEARCH_RUNGS];
    int current;                 /* the rung measured or kept */
    int searching, drifted, searches;
} op_search;

/* Starts searching from top (the rung of the part's own value). */
void op_search_start(op_search *s, const policy_limits *l, double top, double floor);
/* The value to apply now. */
double op_search_value(const op_search *s);
/* A window measured at the current value. Returns 1 when the value to apply changed; why says
 * what was measured and what comes next or was kept. */
int op_search_observe(op_search *s, double seconds, double joules, long samples, char *why, size_t n);
/* The rung the policy prefers among those measured (the current one when none is). */
int op_search_best(const op_search *s);
/* The ladder a brute force would measure: every half step from top down to the lowest rung
 * (values[] of at least OP_SEARCH_RUNGS). Returns how many. */
int op_search_fine_ladder(double top, double floor, double *values);

#endif
