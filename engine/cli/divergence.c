#include "engine/cli/divergence.h"

#include <math.h>
#include <stdio.h>

double divergence_chance(const unsigned char *labels, long n, int classes)
{
    long count[256] = {0}, most = 0;
    for (long i = 0; i < n; i++)
        if (labels[i] < classes && ++count[labels[i]] > most)
            most = count[labels[i]];
    return n ? (double)most / (double)n : 1.0 / classes;
}

int divergence_check(int epoch, double first_loss, double loss, double accuracy, int classes,
                     double chance, double lr, char *msg, size_t n)
{
    double uniform = log((double)classes);   /* the loss of predicting all classes alike */
    char why[160];
    if (epoch > 1 && loss > 10 * fmax(first_loss, uniform))
        snprintf(why, sizeof why, "the loss grew from %.4g (epoch 1) to %.4g", first_loss, loss);
    else if (accuracy <= 1.5 * chance && loss > 3 * uniform)
        snprintf(why, sizeof why, "accuracy is at chance (%.1f%%) with a loss of %.4g, far above "
                 "ln(%d) = %.2f", 100 * accuracy, loss, classes, uniform);
    else
        return 0;
    snprintf(msg, n, "warning: training looks diverged at epoch %d: %s; the learning rate "
             "(optimizer.lr = %g) is the likely cause: try %g", epoch, why, lr, lr / 10);
    return 1;
}
