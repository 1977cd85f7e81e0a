/* The energy meter: every sensor found, which of them make up the machine's total without
 * counting anything twice, and a sampler thread that accumulates their joules.
 *
 *   energy_meter *m = energy_meter_open(&opts);   probes the sensors
 *   energy_meter_start(m);                        samples at opts.rate_hz
 *   energy_meter_read(m, &before); ... energy_meter_read(m, &after);
 *   energy_meter_close(m);
 *
 * The total is psys when there is one (it contains the packages), else the CPU packages plus
 * DRAM, GPUs and board rails (never core or uncore: they are inside their package), else a
 * whole-system meter (ACPI power meter, a discharging battery), else the utilisation model for
 * the CPU plus whatever DRAM, GPU or board sensor is readable. */
#ifndef FRUGAL_ENERGY_METER_H
#define FRUGAL_ENERGY_METER_H

#include "energy/history.h"
#include "energy/sensor.h"

#include <stddef.h>

typedef struct energy_options {
    double rate_hz;                  /* samples per second; 0: 20 */
    double model_idle_w, model_core_w;   /* the fallback model (model.h) */
    double profile_w[3];             /* or a power profile (idle, one core, all cores); 0: none */
} energy_options;

typedef struct energy_reading {
    double t;                        /* seconds since the meter opened (monotonic) */
    double total_j;                  /* the machine total, since the meter opened */
    double total_w;                  /* the total's power over the last sampling interval */
    int n;
    double joules[SENSOR_MAX];       /* each sensor's, in energy_meter_sensors() order */
    double watts[SENSOR_MAX];        /* each sensor's power over the last interval */
} energy_reading;

typedef struct energy_meter energy_meter;

/* Probes the sensors (opts NULL: 20 Hz and the model's defaults). Never fails for want of
 * sensors, the model being the last resort: returns NULL only when out of memory. */
energy_meter *energy_meter_open(const energy_options *opts);
/* Stops the sampler if it runs. */
void energy_meter_close(energy_meter *m);

/* Starts the sampler thread. Returns 0, or -1 with err set. */
int energy_meter_start(energy_meter *m, char *err, size_t errlen);

/* Samples every sensor now and returns the accumulated joules. A sample can take milliseconds
 * (NVML in a VM took 2 ms): for the start and end of what is measured, not for every batch. */
void energy_meter_read(energy_meter *m, energy_reading *out);
/* The accumulated joules as of the sampler's latest sample (t is that sample's): no sensor
 * touched, no wait for a sample in progress; for whatever follows the run batch by batch or
 * chunk by chunk. Samples now when no sampler runs. */
void energy_meter_latest(energy_meter *m, energy_reading *out);
/* Samples every sensor as if the time were t (seconds): tests drive the meter with it. */
void energy_meter_sample_at(energy_meter *m, double t);

/* A copy of the sensors and their state; returns how many (at most max). */
int energy_meter_sensors(energy_meter *m, sensor *out, int max);
/* "measured: rapl psys" or "estimated: model (...) + measured: ...": where the total comes from. */
const char *energy_meter_source(const energy_meter *m);
/* 1 when any part of the total comes from the model. */
int energy_meter_estimated(const energy_meter *m);
double energy_meter_rate(const energy_meter *m);
/* The sampler thread's own CPU time since it started, as a share of one core. */
double energy_meter_sampler_share(energy_meter *m);
long energy_meter_samples(energy_meter *m);
/* A copy of the power timeline (history.h): returns how many points (at most max). */
int energy_meter_history(energy_meter *m, history_point *out, int max);
/* The wall-clock time (Unix seconds) when the meter opened: its t = 0. */
double energy_meter_opened_unix(const energy_meter *m);

#endif
