#include "engine/cluster/aggregate.h"

#include <math.h>
#include <string.h>

#define CLIP_ITERATIONS 3

void aggregate_mean(const model_share *s, int n, long nparams, float *out)
{
    double total = 0;
    for (int k = 0; k < n; k++)
        total += s[k].weight;
    if (total <= 0)
        return;
    for (long i = 0; i < nparams; i++) {
        double sum = 0;
        for (int k = 0; k < n; k++)
            sum += s[k].weight * (double)s[k].params[i];
        out[i] = (float)(sum / total);
    }
}

/* |x - v| (v NULL: zeros). */
static double distance(const float *x, const float *v, long nparams)
{
    double d = 0;
    for (long i = 0; i < nparams; i++) {
        double e = (double)x[i] - (v ? v[i] : 0);
        d += e * e;
    }
    return sqrt(d);
}

/* The lower median of n values (sorted in place). */
static double lower_median(double *x, int n)
{
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && x[b] < x[b - 1]; b--) {
            double t = x[b];
            x[b] = x[b - 1], x[b - 1] = t;
        }
    return x[(n - 1) / 2];
}

int aggregate_centered_clip(const model_share *s, int n, long nparams, const float *center, float *out)
{
    double total = 0, dist[AGGREGATE_MAX_SHARES], scale[AGGREGATE_MAX_SHARES];
    n = n < AGGREGATE_MAX_SHARES ? n : AGGREGATE_MAX_SHARES;
    for (int k = 0; k < n; k++)
        total += s[k].weight, dist[k] = distance(s[k].params, center, nparams);
    if (total <= 0)
        return 0;
    double tau = lower_median(dist, n);
    if (center)
        memmove(out, center, sizeof(float) * (size_t)nparams);
    else
        memset(out, 0, sizeof(float) * (size_t)nparams);
    int far_off = 0;
    for (int k = 0; k < n; k++)
        far_off += dist[k] > tau;
    for (int it = 0; it < CLIP_ITERATIONS; it++) {
        for (int k = 0; k < n; k++) {
            double d = distance(s[k].params, out, nparams);
            scale[k] = s[k].weight / total * (d > tau && d > 0 ? tau / d : 1);
        }
        for (long i = 0; i < nparams; i++) {
            double step = 0, v = out[i];
            for (int k = 0; k < n; k++)
                step += scale[k] * ((double)s[k].params[i] - v);
            out[i] = (float)(v + step);
        }
    }
    return far_off;
}
