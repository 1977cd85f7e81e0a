/* NVIDIA GPUs through NVML, the library that comes with NVIDIA's driver, loaded at run time
 * (dlopen of libnvidia-ml.so.1; FRUGAL_NVML_LIBRARY names another file, as the tests do): each
 * GPU's energy counter (millijoules since the driver loaded; Volta and later) where it has one,
 * else its power gauge (milliwatts). A machine without the driver has no such sensor and is told
 * nothing; a library that loads but fails is a sensor marked unreadable, with NVML's reason. */
#ifndef FRUGAL_ENERGY_NVML_H
#define FRUGAL_ENERGY_NVML_H

#include "energy/sensor.h"

void nvml_probe(sensor *s, int *n, int max);
/* Microjoules (counter) or microwatts (gauge), as sensor_read. Returns 0 or an errno value. */
int nvml_read(const sensor *s, double *value);

#endif
