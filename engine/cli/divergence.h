/* Telling a diverging run from a slow one after each epoch: a loss that has grown far above where
 * it started, or accuracy at chance with a loss far above ln(classes) (what predicting every
 * class alike costs), gets a warning naming the likely cause, the learning rate. Losses that are not finite
 * end the run elsewhere (the loss task). */
#ifndef FRUGAL_DIVERGENCE_H
#define FRUGAL_DIVERGENCE_H

#include <stddef.h>

/* 1 and a warning in msg if the epoch looks diverged; first_loss is the first epoch's, chance
 * the accuracy of always predicting the most frequent class. */
int divergence_check(int epoch, double first_loss, double loss, double accuracy, int classes,
                     double chance, double lr, char *msg, size_t n);
/* The share of the most frequent label: what a model that learned nothing scores. */
double divergence_chance(const unsigned char *labels, long n, int classes);

#endif
