/* A sensor is one file that tells how much energy one part of the machine used: a cumulative
 * counter (RAPL energy_uj, hwmon energy*_input) or a power gauge integrated over time (hwmon
 * power*_input, a battery's power_now), or, when nothing can be read, the utilisation model.
 * The probes find them; the meter (meter.h) reads them. */
#ifndef FRUGAL_ENERGY_SENSOR_H
#define FRUGAL_ENERGY_SENSOR_H

#include "energy/sysfs.h"

#include <stdint.h>

#define SENSOR_MAX 64

typedef enum sensor_kind {
    SENSOR_COUNTER,   /* microjoules, wraps at max_uj */
    SENSOR_GAUGE,     /* microwatts now */
    SENSOR_MODEL,     /* estimated from CPU utilisation */
} sensor_kind;

/* What a sensor covers decides what may be added up without counting anything twice. */
typedef enum sensor_scope {
    SCOPE_SYSTEM,     /* the whole platform: RAPL psys, ACPI power meter, battery */
    SCOPE_CPU,        /* a CPU package (socket or die) */
    SCOPE_CPU_PART,   /* inside a package: core, uncore, one core's counter */
    SCOPE_DRAM,
    SCOPE_GPU,
    SCOPE_BOARD,      /* other rails (INA sensors on ARM boards, ...) */
} sensor_scope;

typedef enum sensor_status {
    SENSOR_OK,
    SENSOR_UNREADABLE,   /* found at probe time but cannot be read: why says why */
    SENSOR_LOST,         /* was readable, then failed during sampling */
    SENSOR_PAUSED,       /* a battery that is not discharging measures nothing */
} sensor_status;

typedef struct sensor {
    char name[64];           /* "package-0", "dram (package-1)", "amdgpu power1", "BAT0" */
    const char *source;      /* "rapl", "hwmon", "battery", "nvml", "perf", "model" */
    sensor_kind kind;
    sensor_scope scope;
    char path[SYSFS_PATH];   /* the file sampled; for a battery without power_now: current_now */
    char path2[SYSFS_PATH];  /* battery voltage_now, or status */
    char status_path[SYSFS_PATH];
    uint64_t max_uj;         /* counters: wrap range; 0 when unknown */
    int in_total;            /* counted in the machine total (no overlap with another) */
    sensor_status status;
    char why[768];           /* for UNREADABLE, LOST, PAUSED, or a caveat (unknown wrap range) */
    int fd;                  /* perf: its event's descriptor */
    double scale;            /* perf: joules per count */

    /* Sampling state, owned by the meter. */
    int have_prev;
    double prev_t, prev_value, prev_watts;
    double joules;           /* accumulated since the meter opened */
    double watts;            /* over the last interval */
    uint64_t wraps;
} sensor;

/* Each probe appends what it finds under the (root-relative) sysfs tree to s[*n..max). */
void rapl_probe(sensor *s, int *n, int max);
void hwmon_probe(sensor *s, int *n, int max);
void battery_probe(sensor *s, int *n, int max);

/* The sensor's value now: microjoules for a counter, microwatts for a gauge. A battery that
 * is not discharging is marked PAUSED. Returns 0 or an errno value. */
int sensor_read(sensor *s, double *value);

/* Fills why with errno's meaning and, for EACCES, how to grant access. */
void sensor_explain(sensor *s, const char *file, int err);

const char *sensor_scope_name(sensor_scope s);
const char *sensor_status_name(sensor_status s);

#endif
