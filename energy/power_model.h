/* The fallback when no sensor covers the CPU (virtual machines, locked-down counters): power is
 * idle_w plus core_w for every core kept busy, with busy cores measured from /proc/stat over the
 * sampling interval. The figures it gives are estimates and are always labelled so. */
#ifndef FRUGAL_ENERGY_POWER_MODEL_H
#define FRUGAL_ENERGY_POWER_MODEL_H

#include <stdint.h>

/* Defaults: a desktop-class CPU (about 10 W idle, 65 W with 8 busy cores). Set your own from
 * the CPU's TDP in [energy] model_idle_watts and model_core_watts. */
#define MODEL_IDLE_W 10.0
#define MODEL_CORE_W 7.0

typedef struct cpu_times {
    uint64_t busy, total;   /* jiffies over all CPUs */
    int ncpu;               /* cpuN lines */
} cpu_times;

/* Reads /proc/stat (under FRUGAL_PROCFS_ROOT); with FRUGAL_MODEL_SCOPE=process, this process's
 * CPU time instead (/proc/self/stat), so that several frugal processes on one host (a loopback
 * cluster's benchmark) are each estimated for their own work. Returns 0 or an errno value. */
int energy_cpu_times_read(cpu_times *out);
/* FRUGAL_MODEL_SCOPE=process is set. */
int energy_model_per_process(void);
/* Cores busy on average between two readings (0 .. ncpu). */
double energy_cpu_busy_cores(const cpu_times *before, const cpu_times *after);

double power_model_watts(double idle_w, double core_w, double busy_cores);
/* A three-point power profile (SimGrid's format: watts idle, with one core busy, with all ncpu
 * busy), linear between the points. */
double power_model_profile_watts(const double profile[3], int ncpu, double busy_cores);
/* A profile as users write it ("IDLE, ONE, ALL": watts, each at least the one before, at most
 * max_w; a job file's key and `frugal join --power-profile`). 0, or -1 when it is not one. */
int power_model_profile_parse(const char *text, double max_w, double out[3]);

#endif
