/* The power timeline a run keeps for its report and trace: at most HISTORY_POINTS points of
 * (time, joules so far) for the total and each sensor. Points are taken at least `interval`
 * apart; when the timeline is full every other point is dropped and the interval doubles, so
 * a run of any length fits, and the mean power between two kept points stays exact (it comes
 * from the cumulative joules, not from one instantaneous reading). */
#ifndef FRUGAL_ENERGY_HISTORY_H
#define FRUGAL_ENERGY_HISTORY_H

#include "energy/sensor.h"

#define HISTORY_POINTS 2048
#define HISTORY_FIRST_INTERVAL 0.05   /* seconds: every sample at 20 Hz */

typedef struct history_point {
    double t;                    /* seconds since the meter opened */
    double total_j;
    double joules[SENSOR_MAX];   /* each sensor's, in the meter's order */
} history_point;

typedef struct power_history {
    history_point *points;       /* HISTORY_POINTS of them; NULL: out of memory, none kept */
    int n, nsensors;
    double interval;
} power_history;

int history_init(power_history *h, int nsensors);
void history_free(power_history *h);
/* Offers a reading; kept when interval has passed since the last kept one. */
void history_offer(power_history *h, const history_point *p);

#endif
