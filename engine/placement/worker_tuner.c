#include "engine/placement/worker_tuner.h"

#include <math.h>
#include <string.h>

#define EXPLOIT_WEIGHT 0.2       /* of a new window in the figures of the count in use */

void worker_tuner_init(worker_tuner *t, const policy_limits *l, int max_workers)
{
    memset(t, 0, sizeof *t);
    t->limits = *l;
    t->max_workers = max_workers < 1 ? 1 : max_workers > TUNER_MAX_WORKERS ? TUNER_MAX_WORKERS
                                                                           : max_workers;
    t->current = t->max_workers;
    t->exploring = 1;
    t->explorations = 1;
}

static int measured(const worker_tuner *t, int k) { return k >= 1 && k <= t->max_workers && t->opt[k - 1].samples; }

int worker_tuner_best(const worker_tuner *t)
{
    int i = policy_choose(&t->limits, t->opt, t->max_workers);
    return i < 0 ? t->current : i + 1;
}

/* The next count to explore, or 0 when exploring is over: the halving sequence from the top
 * first, then the untried neighbours of the best. */
static int next_to_explore(const worker_tuner *t)
{
    for (int k = t->max_workers;; k /= 2) {
        if (!measured(t, k))
            return k;
        if (k == 1)
            break;
    }
    int best = worker_tuner_best(t);
    if (!measured(t, best - 1) && best > 1)
        return best - 1;
    if (!measured(t, best + 1) && best < t->max_workers)
        return best + 1;
    return 0;
}

void worker_tuner_forget(worker_tuner *t)
{
    memset(t->opt, 0, sizeof t->opt);
    t->exploring = 1;
    t->explorations++;
    t->drifted = 0;
}

static int far(double now, double learned) { return fabs(now - learned) > TUNER_DRIFT * learned; }

int worker_tuner_observe(worker_tuner *t, double seconds, double joules, long samples, char *why,
                  size_t whylen)
{
    why[0] = 0;
    if (samples <= 0 || seconds <= 0)
        return t->current;
    double sps = seconds / (double)samples, watts = joules / seconds;
    option_figures *o = &t->opt[t->current - 1];
    if (t->exploring) {
        policy_record(o, sps, watts, samples, 0.5);
    } else {
        t->drifted = o->samples && (far(sps, o->s_per_sample) || far(watts, o->watts))
                         ? t->drifted + 1 : 0;
        policy_record(o, sps, watts, samples, EXPLOIT_WEIGHT);
        if (t->drifted >= TUNER_DRIFT_WINDOWS) {   /* forget everything but the count in use */
            option_figures keep = *o;
            worker_tuner_forget(t);
            t->opt[t->current - 1] = keep;
            snprintf(why, whylen, "%d workers now measure %.3g ms/sample at %.1f W, away from "
                     "what was learned: exploring again", t->current, 1e3 * sps, watts);
        }
    }
    int was = t->current;
    if (t->exploring) {
        int next = next_to_explore(t);
        if (next) {
            t->current = next;
            if (next != was && !why[0])
                snprintf(why, whylen, "exploring: %d workers measured %.3g ms/sample at %.1f W; "
                         "trying %d", was, 1e3 * sps, watts, next);
            return t->current;
        }
        t->exploring = 0;
        was = 0;   /* say what exploring found, even the count in use */
    }
    t->current = worker_tuner_best(t);
    if (t->current != was && !why[0]) {
        const option_figures *b = &t->opt[t->current - 1];
        snprintf(why, whylen, "policy %s: %d workers (%.3g ms/sample, %.1f W, %.3g J/sample)",
                 policy_name(t->limits.policy), t->current, 1e3 * b->s_per_sample, b->watts,
                 b->watts * b->s_per_sample);
    }
    return t->current;
}

int worker_tuner_save(const worker_tuner *t, const char *key, FILE *in, FILE *out)
{
    char line[512], k[256];
    while (in && fgets(line, sizeof line, in))   /* other workloads' lines stay */
        if (sscanf(line, "%255s", k) != 1 || strcmp(k, key))
            fputs(line, out);
    for (int i = 0; i < t->max_workers; i++)
        if (t->opt[i].samples)
            fprintf(out, "%s %d %.9g %.9g %ld\n", key, i + 1, t->opt[i].s_per_sample,
                    t->opt[i].watts, t->opt[i].samples);
    return ferror(out) ? -1 : 0;
}

int worker_tuner_load(worker_tuner *t, const char *key, FILE *in)
{
    char line[512], k[256];
    int used = 0, workers;
    double sps, watts;
    long samples;
    while (fgets(line, sizeof line, in))
        if (sscanf(line, "%255s %d %lf %lf %ld", k, &workers, &sps, &watts, &samples) == 5 &&
            !strcmp(k, key) && workers >= 1 && workers <= t->max_workers && isfinite(sps) &&
            sps > 0 && isfinite(watts) && watts >= 0 && samples > 0) {
            t->opt[workers - 1] = (option_figures){sps, watts, samples, 0};
            used++;
        }
    if (used && !next_to_explore(t)) {
        t->exploring = 0;
        t->current = worker_tuner_best(t);
    } else if (used) {
        t->current = next_to_explore(t);
    }
    return used;
}
