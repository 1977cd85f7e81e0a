#include "engine/sim/sim_search.h"

#include "engine/placement/policy.h"
#include "engine/sim/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct mode_option {
    int mode, every;
} mode_option;

static const mode_option MODES[] = {
    {CLUSTER_SYNC, 1}, {CLUSTER_AVERAGE, 4}, {CLUSTER_AVERAGE, 16}, {CLUSTER_GOSSIP, 1}, {CLUSTER_GOSSIP, 10}};
#define NMODES (int)(sizeof MODES / sizeof MODES[0])

/* A group's cost per sample under the policy, from its profile (one machine at its workers). */
static double group_cost(const sim_scenario *s, const sim_group *g)
{
    double img = profile_img_per_s(&g->profile, g->workers, g->profile.flops_per_sample);
    double w = g->profile.power[0] + (g->profile.power[2] - g->profile.power[0]) * g->workers / g->profile.cpus;
    double carbon = g->site >= 0 && s->sites[g->site].carbon >= 0 ? s->sites[g->site].carbon : s->carbon;
    option_figures o = {1 / (img / g->slowdown), w, 1, carbon};
    policy_limits l = {s->policy >= 0 ? (placement_policy)s->policy : POLICY_TIME, 0, -1, s->carbon};
    return policy_cost(&l, &o);
}

/* The option's cost under the policy: seconds, joules, J*s or grams, for the whole run. */
static double run_cost(int policy, const sim_result *r)
{
    switch (policy) {
    case POLICY_ENERGY: return r->joules;
    case POLICY_EDP: return r->joules * r->seconds;
    case POLICY_CARBON: return r->grams;
    default: return r->seconds;
    }
}

int sim_search(const sim_scenario *s, FILE *f, char *err, size_t errlen)
{
    sim_scenario *x = malloc(sizeof *x);
    int order[SCENARIO_MAX_GROUPS];
    if (!x)
        return snprintf(err, errlen, "out of memory"), -1;
    for (int i = 0; i < s->ngroups; i++) {   /* group 0 holds the coordinator: always first */
        int at = i;
        double c = group_cost(s, &s->groups[i]);
        for (; at > 1 && group_cost(s, &s->groups[order[at - 1]]) > c; at--)
            order[at] = order[at - 1];
        order[at] = i;
    }
    int policy = s->policy >= 0 ? s->policy : POLICY_TIME;
    double best = INFINITY, fastest = INFINITY;
    char best_line[400] = "", fastest_line[400] = "";
    fprintf(f, "search: %s policy%s%.0f s deadline\n", policy_name((placement_policy)policy),
            s->deadline_s > 0 ? ", " : ", no", s->deadline_s);
    fprintf(f, "%-32s %-28s %10s %10s %10s %12s\n", "machines", "mode", "seconds", "joules", "gCO2e", "J*s");
    for (int k = 1; k <= s->ngroups; k++) {
        *x = *s;
        x->machines = 0;
        char names[256] = "";
        for (int j = 0; j < k; j++) {
            x->groups[j] = s->groups[order[j]];
            x->machines += x->groups[j].count;
            size_t len = strlen(names);
            snprintf(names + len, sizeof names - len, "%s%s", j ? "+" : "", x->groups[j].name);
        }
        x->ngroups = k;
        for (int a = 0; a < k; a++)   /* the links follow their groups */
            for (int b = 0; b < k; b++)
                x->links[a][b] = s->links[order[a]][order[b]], x->linked[a][b] = s->linked[order[a]][order[b]];
        for (int m = 0; m < NMODES; m++) {
            x->mode = MODES[m].mode, x->every = MODES[m].every;
            sim_result r;
            if (sim_run(x, &r, err, errlen)) {
                free(x);
                return -1;
            }
            char mode[96], line[400];
            sim_mode_name(x, mode, sizeof mode);
            snprintf(line, sizeof line, "%-32.32s %-28s %10.4g %10.4g %10.4g %12.4g", names, mode, r.seconds,
                     r.joules, r.grams, r.joules * r.seconds);
            fprintf(f, "%s\n", line);
            double cost = run_cost(policy, &r);
            if ((s->deadline_s <= 0 || r.seconds <= s->deadline_s) && cost < best)
                best = cost, snprintf(best_line, sizeof best_line, "%s", line);
            if (r.seconds < fastest)
                fastest = r.seconds, snprintf(fastest_line, sizeof fastest_line, "%s", line);
            sim_result_free(&r);
        }
    }
    if (best_line[0])
        fprintf(f, "best by %s%s:\n%s\n", policy_name((placement_policy)policy),
                s->deadline_s > 0 ? " within the deadline" : "", best_line);
    else
        fprintf(f, "no option meets the %.0f s deadline; the fastest:\n%s\n", s->deadline_s, fastest_line);
    free(x);
    return 0;
}
