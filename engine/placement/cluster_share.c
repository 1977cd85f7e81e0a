#include "engine/placement/cluster_share.h"

#include <math.h>

#define MAX_MEMBERS 128

static int measured(const member_figures *m)
{
    return m->img_per_s > 0 && m->watts > 0;
}

double cluster_share_member_cost(const policy_limits *l, const member_figures *m)
{
    option_figures o = {1 / m->img_per_s, m->watts, 1, m->carbon_g_per_kwh};
    return policy_cost(l, &o);
}

/* Parking order: joules per sample, or grams for `carbon` (never seconds: a budget parks the
 * members that spend the most per sample first, whatever the policy). */
static double parking_cost(const policy_limits *l, const member_figures *m)
{
    policy_limits by = *l;
    by.policy = l->policy == POLICY_CARBON ? POLICY_CARBON : POLICY_ENERGY;
    return cluster_share_member_cost(&by, m);
}

/* Measured members other than the coordinator, cheapest first (ties: the lower index). */
static int ordered(const policy_limits *l, const member_figures *m, int n, int *order)
{
    int k = 0;
    for (int i = 1; i < n; i++) {
        if (!measured(&m[i]))
            continue;
        int at = k++;
        double c = parking_cost(l, &m[i]);
        for (; at > 0 && parking_cost(l, &m[order[at - 1]]) > c; at--)
            order[at] = order[at - 1];
        order[at] = i;
    }
    return k;
}

static double carbon_of(const policy_limits *l, const member_figures *m)
{
    return m->carbon_g_per_kwh > 0 ? m->carbon_g_per_kwh : l->carbon_g_per_kwh;
}

/* The coordinator and the first k of order, splitting work in proportion to speed; its carbon
 * intensity is its members' weighted by their power. */
static option_figures option_of(const policy_limits *l, const member_figures *m, const int *order,
                                int k)
{
    double speed = m[0].img_per_s, watts = m[0].watts, carbon_w = carbon_of(l, &m[0]) * m[0].watts;
    for (int i = 0; i < k; i++) {
        const member_figures *x = &m[order[i]];
        speed += x->img_per_s, watts += x->watts, carbon_w += carbon_of(l, x) * x->watts;
    }
    return (option_figures){1 / speed, watts, 1, carbon_w / watts};
}

int cluster_choose(const policy_limits *l, const member_figures *m, int n, int *in)
{
    int order[MAX_MEMBERS], taking = 0;
    if (n > MAX_MEMBERS)
        n = MAX_MEMBERS;
    for (int i = 0; i < n; i++)
        in[i] = 1;
    int k = n > 0 && measured(&m[0]) ? ordered(l, m, n, order) : 0;
    if (k > 0 && (l->policy != POLICY_TIME || l->budget_w > 0)) {
        option_figures opts[MAX_MEMBERS];
        for (int i = 0; i <= k; i++)
            opts[i] = option_of(l, m, order, i);
        int best = policy_choose(l, opts, k + 1);
        for (int i = best; i >= 0 && i < k; i++)
            in[order[i]] = 0;
    }
    for (int i = 0; i < n; i++)
        taking += in[i];
    return taking;
}

static double finishes(const deal_member *m, int chunks)
{
    return m->lag + ceil((double)chunks / m->workers) * m->cost;
}

int cluster_share_deal(const deal_member *m, int n, int nchunks, int *quota)
{
    int remote = 0;
    for (int i = 0; i < n; i++)
        quota[i] = 0;
    quota[0] = 1;
    for (int k = 1; k < nchunks; k++) {
        int to = 0;
        double best = finishes(&m[0], quota[0] + 1);
        for (int i = 1; i < n; i++) {
            if (m[i].workers <= 0)
                continue;
            double t = finishes(&m[i], quota[i] + 1);
            if (t < best)
                best = t, to = i;
        }
        quota[to]++;
        remote += to != 0;
    }
    return remote;
}

void cluster_share_balance(const share_cost *m, int n, double units, double *u)
{
    for (int j = 0; j < n; j++)   /* u[j] < 0 marks a member dropped until the end */
        u[j] = 0;
    for (int dropped = 1; dropped;) {
        double a = units, b = 0;
        for (int j = 0; j < n; j++)
            if (u[j] >= 0)
                a += m[j].lag / m[j].per_unit, b += 1 / m[j].per_unit;
        double t = a / b;
        dropped = 0;
        for (int j = 0; j < n; j++) {
            if (u[j] >= 0 && m[j].lag >= t)
                u[j] = -1, dropped = 1;
            if (u[j] >= 0)
                u[j] = (t - m[j].lag) / m[j].per_unit;
        }
    }
    for (int j = 0; j < n; j++)
        u[j] = u[j] > 0 ? u[j] : 0;
}
