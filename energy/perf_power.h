/* perf's power PMU: the same RAPL counters through perf_event_open, for machines where the
 * powercap files are root-only (Linux 5.10 and later) but perf is allowed
 * (kernel.perf_event_paranoid <= 0, or CAP_PERFMON). The meter looks here only when no RAPL
 * file is readable. Events energy-pkg, energy-ram and energy-psys, opened on the CPUs of the
 * PMU's cpumask (one per package), found under /sys/bus/event_source/devices/power (through
 * FRUGAL_SYSFS_ROOT, like every sysfs path). */
#ifndef FRUGAL_ENERGY_PERF_POWER_H
#define FRUGAL_ENERGY_PERF_POWER_H

#include "energy/sensor.h"

void perf_power_probe(sensor *s, int *n, int max);
/* Microjoules since the counter was opened. Returns 0 or an errno value. */
int perf_power_read(const sensor *s, double *value);
/* Closes the sensor's perf descriptor (sensors of other sources are left alone). */
void perf_power_close(sensor *s);

#endif
