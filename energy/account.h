/* Energy accounting over an interval (an epoch, a whole run): totals, per device, the share above
 * the idle baseline, carbon, and the split among task kinds by their busy time. */
#ifndef FRUGAL_ENERGY_ACCOUNT_H
#define FRUGAL_ENERGY_ACCOUNT_H

#include "energy/meter.h"

/* World average carbon intensity of electricity (g CO2e per kWh), used unless configured. */
#define CARBON_G_PER_KWH 475.0

typedef struct energy_figures {
    double seconds;
    double joules;            /* the machine total (meter.h) */
    double watts;             /* average power */
    double joules_per_image;  /* NaN without images */
    double edp;               /* energy-delay product, J*s */
    double app_joules;        /* joules above the idle baseline: joules - baseline_w * seconds,
                                 never below 0: */
    int baseline_too_high;    /* the baseline was above the mean power (measured under load) */
    double gco2e;
    int ndevices;
    double device_j[SENSOR_MAX];   /* each sensor's, in meter order */
} energy_figures;

void energy_figures_between(const energy_reading *from, const energy_reading *to, long images,
                            double baseline_w, double carbon_g_per_kwh, energy_figures *out);

/* Splits joules among n consumers (task kinds) in proportion to busy_s; the parts sum to joules.
 * Returns 0, or -1 (every part 0) when nothing was busy. */
int energy_split_by_busy(double joules, const double *busy_s, int n, double *out);

#endif
