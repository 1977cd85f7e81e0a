#include "ops/layers.h"

#include <math.h>

double ops_softmax_xent(int classes, const float *logits, const uint8_t *labels, float *dlogits,
                    float scale, int n0, int n1, int *correct)
{
    double total = 0;
    for (int n = n0; n < n1; n++) {
        const float *z = logits + (size_t)n * classes;
        int label = labels[n];
        if (label >= classes)
            return NAN;
        int arg = 0;
        for (int k = 1; k < classes; k++)
            if (z[k] > z[arg])
                arg = k;
        double zmax = z[arg], sum = 0;
        for (int k = 0; k < classes; k++)
            sum += exp((double)z[k] - zmax);
        double log_sum = log(sum);
        total += log_sum - ((double)z[label] - zmax);
        if (correct && arg == label)
            (*correct)++;
        if (dlogits) {
            float *d = dlogits + (size_t)n * classes;
            for (int k = 0; k < classes; k++) {
                double p = exp((double)z[k] - zmax - log_sum);
                d[k] = (float)((p - (k == label)) * scale);
            }
        }
    }
    return total;
}
