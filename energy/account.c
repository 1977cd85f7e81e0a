#include "energy/account.h"

#include <math.h>

void energy_figures_between(const energy_reading *from, const energy_reading *to, long images,
                            double baseline_w, double carbon_g_per_kwh, energy_figures *out)
{
    out->seconds = to->t - from->t;
    out->joules = to->total_j - from->total_j;
    out->watts = out->seconds > 0 ? out->joules / out->seconds : 0;
    out->joules_per_image = images > 0 ? out->joules / (double)images : NAN;
    out->edp = out->joules * out->seconds;
    out->app_joules = out->joules - baseline_w * out->seconds;
    out->baseline_too_high = out->app_joules < 0;   /* energy is never negative: said instead */
    if (out->baseline_too_high)
        out->app_joules = 0;
    out->gco2e = out->joules / 3.6e6 * carbon_g_per_kwh;
    out->ndevices = to->n;
    for (int i = 0; i < to->n; i++)
        out->device_j[i] = to->joules[i] - (i < from->n ? from->joules[i] : 0);
}

int energy_split_by_busy(double joules, const double *busy_s, int n, double *out)
{
    double busy = 0;
    for (int i = 0; i < n; i++)
        busy += busy_s[i] > 0 ? busy_s[i] : 0;
    for (int i = 0; i < n; i++)
        out[i] = busy > 0 && busy_s[i] > 0 ? joules * (busy_s[i] / busy) : 0;
    return busy > 0 ? 0 : -1;
}
