/* The figures the runtime's placement weighs under an energy policy (runtime/placement.c: a
 * task's expected joules): the power of a task on the CPU and on the run's OpenCL device above
 * idle, and the machine's idle power. They start from priors: one core's watts from [energy]
 * power_profile (one core busy minus idle) or model_core_watts, PoCL that many times its host
 * cores, a GPU 100 W. After every epoch, where sensors measured it and the idle power was
 * measured, each is calibrated: the joules above idle over the busy seconds (the CPU from its
 * package, DRAM and board sensors; a GPU from its own sensor: NVML, or hwmon for AMD and
 * Intel), of that epoch, or of the epochs since the last figure where one epoch's busy time is
 * too short to tell (a fast machine, a small job). StarPU's dmda asks the user for these
 * figures; frugal measures them. */
#ifndef FRUGAL_DEVICE_ENERGY_H
#define FRUGAL_DEVICE_ENERGY_H

#include "energy/sensor.h"
#include "engine/job/config.h"
#include "engine/job/devices.h"
#include "engine/job/energy_run.h"
#include "runtime/runtime.h"

#include <stdio.h>

/* What the epochs since the last figure measured: their joules, seconds and busy seconds. */
typedef struct energy_evidence {
    double joules, seconds, busy_s;
} energy_evidence;

typedef struct device_energy {
    int on;
    rt_energy_model m;
    int host_cores;             /* the device computes on this many host cores (PoCL); 0: a GPU */
    int gpu_sensor;             /* the meter's sensor that measures the device; -1: none */
    char cpu_from[200], device_from[200];
    int calibrations;           /* epochs whose figures replaced the priors */
    energy_evidence cpu, gpu;   /* gathered until there is enough to calibrate from */
} device_energy;

/* Sets the priors (nothing without devices, under the time policy or when deterministic) and
 * says them on log; rd->energy_note keeps the figures in use for summary.json. */
void device_energy_begin(device_energy *de, run_devices *rd, rt_runtime *rt,
                         const job_config *cfg, energy_run *er, FILE *log);
/* After an epoch (st: its runtime statistics, e: its energy): calibrates what was measured and
 * says the figures on log when they change. */
void device_energy_epoch(device_energy *de, run_devices *rd, rt_runtime *rt, energy_run *er,
                         const rt_stats *st, const epoch_energy *e, FILE *log);

/* The sensor among s[0..n) that measures a GPU named `name` from `vendor`: a GPU-scope readable
 * sensor with that name (NVML names the GPU as OpenCL does), else the only one of that vendor's
 * source (nvml: NVIDIA; hwmon amdgpu: AMD; hwmon i915 or xe: Intel). -1: none, or no telling. */
int device_energy_sensor_for(const sensor *s, int n, const char *name, const char *vendor);
/* Watts per busy second above idle: (joules - idle_w x seconds) / busy_s; -1 when the evidence
 * is thin (under 0.2 busy seconds) or the figure impossible (not in 0..10 kW). */
double device_energy_calibrate(double joules, double seconds, double idle_w, double busy_s);
/* Adds an epoch's figures to ev; once the busy time gathered reaches 0.2 s, the watts they all
 * give (device_energy_calibrate; *busy_s: the busy seconds they came from) and ev starts
 * afresh. -1 until then, or when the figure is impossible. */
double device_energy_gather(energy_evidence *ev, double joules, double seconds, double idle_w,
                            double *busy_s);

#endif
