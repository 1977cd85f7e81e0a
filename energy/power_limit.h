/* The hardware's operating points that frugal may set: a power limit or a clock limit per part.
 *
 *   nvml     an NVIDIA GPU's power limit (nvmlDeviceSetPowerManagementLimit; root), in W
 *   rapl     a CPU package's long-term limit (powercap constraint_0_power_limit_uw), in W
 *   cpufreq  a frequency policy's highest clock (scaling_max_freq), in MHz; its governor is
 *            shown and put back with it
 *   amdgpu   an AMD GPU's power cap (hwmon power1_cap), in W
 *
 * The probe finds them all and says, for each, whether it can be set here and if not why (no
 * permission, no range). Setting checks the part's range; nothing here remembers what a limit
 * was: that is limit_state.h's job. */
#ifndef FRUGAL_ENERGY_POWER_LIMIT_H
#define FRUGAL_ENERGY_POWER_LIMIT_H

#include "energy/sysfs.h"

#include <stddef.h>

#define POWER_LIMIT_MAX 64

typedef enum power_limit_kind {
    POWER_LIMIT_NVML, POWER_LIMIT_RAPL, POWER_LIMIT_CPUFREQ, POWER_LIMIT_AMDGPU
} power_limit_kind;

typedef struct power_limit {
    char name[64];             /* "nvidia0 NVIDIA H200", "package-0", "cpufreq policy0", ... */
    power_limit_kind kind;
    int gpu;                   /* a GPU's (else a CPU's) */
    char path[SYSFS_PATH];     /* the file written, or "nvml:I" */
    double min, max;           /* the range it accepts, in its unit */
    double now;                /* its value when probed */
    double full;               /* its value without a cap: NVML's default, the range's top */
    int settable;
    char why[768];             /* not settable: why; else a caveat or "" */
    char governor[32];         /* cpufreq: the policy's governor */
} power_limit;

/* "nvml", "rapl", "cpufreq", "amdgpu"; and the unit: "W" or "MHz". */
const char *power_limit_source(power_limit_kind k);
const char *power_limit_unit(power_limit_kind k);

/* Every limit found, NVML's included (under FRUGAL_SYSFS_ROOT). Returns how many. */
int power_limit_probe(power_limit *l, int max);
/* Its value now, in its unit. Returns 0 or an errno value. */
int power_limit_read(const power_limit *l, double *value);
/* Sets it (within [min, max]). Returns 0, or an errno value with why naming the part and file. */
int power_limit_set(const power_limit *l, double value, char *why, size_t n);
/* Whether path is a limit's file of that kind ("nvml:I"; under the sysfs root, no "..", ending
 * in constraint_0_power_limit_uw, scaling_max_freq or power1_cap): nothing else is ever written. */
int power_limit_path_valid(power_limit_kind k, const char *path);
/* By kind and path alone (restoring a saved state: no range known), value in its unit; EINVAL
 * for a path that is not a limit's file of its kind. */
int power_limit_write(power_limit_kind k, const char *path, double value, char *why, size_t n);
/* A cpufreq policy's governor (path: its scaling_max_freq). */
int power_limit_set_governor(const char *path, const char *governor, char *why, size_t n);

/* The sysfs ones' probes (limit_probes.c) and NVML's (nvml.c). */
void power_limit_probe_rapl(power_limit *l, int *n, int max);
void power_limit_probe_cpufreq(power_limit *l, int *n, int max);
void power_limit_probe_amdgpu(power_limit *l, int *n, int max);
void nvml_limit_probe(power_limit *l, int *n, int max);
int nvml_limit_read(const char *path, double *watts);
int nvml_limit_write(const char *path, double watts, char *why, size_t n);

#endif
