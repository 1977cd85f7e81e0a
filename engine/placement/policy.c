#include "engine/placement/policy.h"

double policy_cost(const policy_limits *l, const option_figures *o)
{
    double joules = o->watts * o->s_per_sample;
    switch (l->policy) {
    case POLICY_TIME: return o->s_per_sample;
    case POLICY_ENERGY: return joules;
    case POLICY_EDP: return joules * o->s_per_sample;
    case POLICY_CARBON:
        return joules / 3.6e6 * (o->carbon_g_per_kwh > 0 ? o->carbon_g_per_kwh : l->carbon_g_per_kwh);
    }
    return o->s_per_sample;
}

/* Within the budget, or the least power when nothing is; within the slowdown cap. */
static int allowed(const policy_limits *l, const option_figures *o, double least_w, double fastest_s)
{
    if (l->budget_w > 0 && o->watts > (least_w > l->budget_w ? least_w : l->budget_w))
        return 0;
    return l->policy == POLICY_TIME || l->max_slowdown < 0 ||
           o->s_per_sample <= fastest_s * (1 + l->max_slowdown);
}

int policy_choose(const policy_limits *l, const option_figures *opts, int n)
{
    double least_w = 0, fastest_s = 0;
    int any = 0;
    for (int i = 0; i < n; i++) {
        if (!opts[i].samples)
            continue;
        if (!any || opts[i].watts < least_w)
            least_w = opts[i].watts;
        if (!any || opts[i].s_per_sample < fastest_s)
            fastest_s = opts[i].s_per_sample;
        any = 1;
    }
    /* The slowdown cap counts among what the budget allows: the fastest within it. */
    if (l->budget_w > 0) {
        double cap_w = least_w > l->budget_w ? least_w : l->budget_w;
        int first = 1;
        for (int i = 0; i < n; i++)
            if (opts[i].samples && opts[i].watts <= cap_w &&
                (first || opts[i].s_per_sample < fastest_s))
                fastest_s = opts[i].s_per_sample, first = 0;
    }
    int best = -1;
    double best_cost = 0;
    for (int i = 0; i < n; i++) {
        if (!opts[i].samples || !allowed(l, &opts[i], least_w, fastest_s))
            continue;
        double c = policy_cost(l, &opts[i]);
        if (best < 0 || c < best_cost)
            best = i, best_cost = c;
    }
    return best;
}

void policy_record(option_figures *o, double s_per_sample, double watts, long samples, double weight)
{
    if (!o->samples) {
        *o = (option_figures){s_per_sample, watts, samples, 0};
        return;
    }
    o->s_per_sample += weight * (s_per_sample - o->s_per_sample);
    o->watts += weight * (watts - o->watts);
    o->samples += samples;
}
