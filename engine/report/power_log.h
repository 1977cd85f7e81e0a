/* OUTPUT/power.csv: the run's power over time, from the meter's timeline (energy/history.h).
 * One row per kept point: the wall-clock time, the seconds since this process's meter opened,
 * and the mean watts since the previous point, for the total and for each readable sensor.
 * Rewritten whole (atomically) after each epoch; a resumed run keeps the rows the earlier
 * processes wrote, when they name the same sensors. */
#ifndef FRUGAL_POWER_LOG_H
#define FRUGAL_POWER_LOG_H

#include "energy/meter.h"
#include "runtime/runtime.h"

#include <stddef.h>
#include <stdio.h>

typedef struct power_log {
    char *earlier;        /* the earlier processes' rows (a resumed run), or NULL */
    size_t earlier_len;
} power_log;

/* On a resume, reads path's rows to keep them; says on out why when they cannot be kept. */
void power_log_begin(power_log *pl, const char *path, int resumed, energy_meter *m, FILE *out);
int power_log_write(const power_log *pl, const char *path, energy_meter *m, char *err, size_t errlen);
void power_log_free(power_log *pl);
/* The timeline as counter tracks of the runtime's trace: the total and each sensor, in watts. */
void power_log_trace(energy_meter *m, rt_runtime *rt);

#endif
