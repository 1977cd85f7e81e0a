#include "engine/placement/participation.h"

#include "energy/grid_trace.h"

#include <math.h>
#include <stdlib.h>

const char *participation_why_name(participation_why w)
{
    static const char *const names[] = {
        "always", "drawn", "green", "renewable surplus", "deadline", "within budget", "coordinator",
        "not drawn", "over the green threshold", "over the budget's pace", "budget spent"};
    return (unsigned)w < sizeof names / sizeof names[0] ? names[w] : "?";
}

double participation_grams_per_sample(const participant *m)
{
    if (!(m->img_per_s > 0) || !(m->watts > 0))
        return 0;
    double grid_share = m->renewable_w >= m->watts ? 0 : 1 - m->renewable_w / m->watts;
    return m->watts / m->img_per_s * grid_share * m->g_per_kwh / 3.6e6;
}

/* A draw in [0, 1) from the seed, round and member (splitmix64). */
static double draw(uint64_t seed, uint64_t round, int member)
{
    uint64_t z = seed * 0x9e3779b97f4a7c15ull ^ (round + 1) * 0xbf58476d1ce4e5b9ull ^ (uint64_t)(member + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
}

typedef struct ranked {
    double grams;
    int member;
} ranked;

static int by_grams(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    return x->grams < y->grams ? -1 : x->grams > y->grams ? 1 : x->member - y->member;
}

/* The members not taking part, fewest grams per sample first (malloc'd, NULL when out of
 * memory: then none is added); how many in *k. */
static ranked *cheapest_out(const participant *m, int n, const int *take, int *k)
{
    ranked *r = malloc(sizeof *r * (size_t)(n > 0 ? n : 1));
    *k = 0;
    for (int i = 0; r && i < n; i++)
        if (!take[i])
            r[(*k)++] = (ranked){participation_grams_per_sample(&m[i]), i};
    if (r)
        qsort(r, (size_t)*k, sizeof *r, by_grams);
    return r;
}

static double speed_of(const participant *m, int n, const int *take)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += take[i] ? m[i].img_per_s : 0;
    return s;
}

/* Whether a member that must run a share f of the time left runs now: its intensity within the
 * greenest f of its forecast until the deadline (no forecast: it runs). */
static int green_enough(const participant *m, double f)
{
    if (!m->forecast || f >= 1 || m->until <= m->at)
        return 1;
    return m->g_per_kwh <= grid_trace_quantile_ahead(m->forecast, m->at, m->until, f);
}

/* green: the green members, then others while the deadline would be missed. */
static void choose_green(const participation_input *in, const participant *m, int n, int *take,
                         participation_why *why)
{
    for (int i = 0; i < n; i++) {
        int surplus = m[i].watts > 0 && m[i].renewable_w >= m[i].watts;
        take[i] = m[i].g_per_kwh <= in->green_g_per_kwh || surplus;
        why[i] = !take[i] ? WHY_DIRTY : surplus && m[i].g_per_kwh > in->green_g_per_kwh ? WHY_SURPLUS : WHY_GREEN;
    }
    if (in->left_s < 0 || !(in->samples_left > 0))
        return;
    double missing = in->samples_left / fmax(in->left_s, 1e-9) - speed_of(m, n, take);
    int k;
    ranked *order = missing > 0 ? cheapest_out(m, n, take, &k) : NULL;
    for (int j = 0; order && j < k && missing > 0; j++) {
        const participant *p = &m[order[j].member];
        double f = p->img_per_s > 0 ? missing / p->img_per_s : 1;
        missing -= p->img_per_s;   /* its share of the pace, whether it runs now or later */
        if (green_enough(p, f))
            take[order[j].member] = 1, why[order[j].member] = WHY_DEADLINE;
    }
    free(order);
}

/* budget: fewest grams per sample first, while those taking part stay within the budget left
 * per sample left. */
static void choose_budget(const participation_input *in, const participant *m, int n, int *take,
                          participation_why *why)
{
    double left = in->budget_g - in->grams_spent;
    double allowed = in->samples_left > 0 ? left / in->samples_left : left;   /* grams a sample */
    for (int i = 0; i < n; i++)
        take[i] = 0, why[i] = left > 0 ? WHY_OVER_BUDGET : WHY_BUDGET_SPENT;
    int k;
    ranked *order = cheapest_out(m, n, take, &k);
    double grams_s = 0, speed = 0, round_s = in->round_s > 0 ? in->round_s : 0;
    for (int j = 0; order && j < k; j++) {
        const participant *p = &m[order[j].member];
        double g = order[j].grams * p->img_per_s;
        int first = j == 0;   /* the cheapest goes on if its round fits the budget */
        if ((!first && (grams_s + g) > allowed * (speed + p->img_per_s)) || (grams_s + g) * round_s > left)
            break;
        grams_s += g, speed += p->img_per_s;
        take[order[j].member] = 1, why[order[j].member] = WHY_WITHIN_BUDGET;
    }
    free(order);
}

int participation_choose(const participation_input *in, const participant *m, int n,
                         int keep_first, int *take, participation_why *why)
{
    switch (in->policy) {
    case PARTICIPATION_RANDOM:
        for (int i = 0; i < n; i++)
            take[i] = draw(in->seed, in->round, i) < in->random_share,
            why[i] = take[i] ? WHY_DRAWN : WHY_NOT_DRAWN;
        break;
    case PARTICIPATION_GREEN:
        choose_green(in, m, n, take, why);
        break;
    case PARTICIPATION_BUDGET:
        choose_budget(in, m, n, take, why);
        break;
    default:   /* always; backup's slowest are the caller's not to wait for */
        for (int i = 0; i < n; i++)
            take[i] = 1, why[i] = WHY_ALWAYS;
    }
    if (keep_first && n > 0 && !take[0])
        take[0] = 1, why[0] = WHY_KEPT;
    int count = 0;
    for (int i = 0; i < n; i++)
        count += take[i];
    return count;
}

double participation_resume_at(const grid_trace *forecast, double now, double threshold,
                               double deadline, double need_s)
{
    if (!forecast || !forecast->n || grid_trace_ahead(forecast, now) <= threshold)
        return now;
    double latest = deadline - need_s;
    if (latest <= now)
        return now;
    double green = grid_trace_next_at_most(forecast, now, threshold, latest);
    return green > now ? green : now;
}

int participation_backup_k(double *arrival_s, int m, double here_s)
{
    for (int i = 1; i < m; i++)   /* arrival order */
        for (int j = i; j > 0 && arrival_s[j - 1] > arrival_s[j]; j--) {
            double x = arrival_s[j];
            arrival_s[j] = arrival_s[j - 1], arrival_s[j - 1] = x;
        }
    int best = 0;
    double best_rate = 0;
    for (int k = 0; k <= m / 2; k++) {
        double end = m - k > 0 ? fmax(arrival_s[m - k - 1], here_s) : here_s;
        double rate = isfinite(end) && end > 0 ? (double)(m - k + 1) / end : 0;
        if (rate > best_rate * 1.05)   /* a model more is worth a little longer wait */
            best = k, best_rate = rate;
    }
    return best;
}
