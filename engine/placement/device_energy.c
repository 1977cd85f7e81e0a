#include "engine/placement/device_energy.h"

#include "engine/placement/policy.h"

#include <math.h>
#include <string.h>

#define GPU_PRIOR_W 100.0   /* a mid-range GPU's power above idle, until a sensor says */
#define MIN_BUSY_S 0.2      /* less evidence than this calibrates nothing */
#define CHANGE_SAID 0.05    /* a change of more than 5% is said */

int device_energy_sensor_for(const sensor *s, int n, const char *name, const char *vendor)
{
    int by_vendor = -1, vendors = 0;
    for (int i = 0; i < n; i++) {
        if (s[i].scope != SCOPE_GPU || s[i].status != SENSOR_OK)
            continue;
        if (!strcmp(s[i].name, name))
            return i;
        int nvidia = !strcmp(s[i].source, "nvml") && strstr(vendor, "NVIDIA");
        int amd = !strcmp(s[i].source, "hwmon") && strstr(s[i].name, "amdgpu") &&
                  (strstr(vendor, "AMD") || strstr(vendor, "Advanced Micro"));
        int intel = !strcmp(s[i].source, "hwmon") &&
                    (strstr(s[i].name, "i915") || !strncmp(s[i].name, "xe", 2)) &&
                    strstr(vendor, "Intel");
        if (nvidia || amd || intel)
            by_vendor = i, vendors++;
    }
    return vendors == 1 ? by_vendor : -1;
}

double device_energy_calibrate(double joules, double seconds, double idle_w, double busy_s)
{
    if (!(busy_s >= MIN_BUSY_S))
        return -1;
    double w = (joules - idle_w * seconds) / busy_s;
    return w > 0 && w < 1e4 ? w : -1;
}

double device_energy_gather(energy_evidence *ev, double joules, double seconds, double idle_w,
                            double *busy_s)
{
    ev->joules += joules, ev->seconds += seconds, ev->busy_s += *busy_s;
    if (!(ev->busy_s >= MIN_BUSY_S))
        return -1;
    double w = device_energy_calibrate(ev->joules, ev->seconds, idle_w, ev->busy_s);
    *busy_s = ev->busy_s;
    *ev = (energy_evidence){0, 0, 0};
    return w;
}

/* rd->energy_note: the figures in use and where they come from. */
static void note(const device_energy *de, run_devices *rd)
{
    snprintf(rd->energy_note, sizeof rd->energy_note,
             "tasks placed by expected %s: a CPU task %.3g W (%.180s), on %.100s %.3g W (%.180s), %.3g W "
             "idle per second of delay", de->m.objective == RT_PLACE_EDP ? "joules x seconds"
                                                                        : "joules",
             de->m.active_w[RT_WORKER_CPU], de->cpu_from, rd->used[0]->name,
             de->m.active_w[RT_WORKER_OPENCL], de->device_from, de->m.idle_w);
}

void device_energy_begin(device_energy *de, run_devices *rd, rt_runtime *rt,
                         const job_config *cfg, energy_run *er, FILE *log)
{
    memset(de, 0, sizeof *de);
    de->gpu_sensor = -1;
    if (!rd->n || cfg->policy <= POLICY_TIME || cfg->deterministic)
        return;
    de->on = 1;
    const float *pw = cfg->power_profile;
    int profile = pw[2] > 0;
    double core_w = profile ? pw[1] - pw[0] : cfg->model_core_watts;
    double idle_w = er->baseline_w > 0 ? er->baseline_w : profile ? pw[0] : cfg->model_idle_watts;
    de->m = (rt_energy_model){cfg->policy == POLICY_EDP ? RT_PLACE_EDP : RT_PLACE_ENERGY, {0},
                              idle_w, cfg->max_slowdown};
    de->m.active_w[RT_WORKER_CPU] = core_w;
    snprintf(de->cpu_from, sizeof de->cpu_from, "per core, from %s",
             profile ? "[energy] power_profile" : "[energy] model_core_watts");
    const ocl_device *d = rd->used[0];
    de->host_cores = (d->type & CL_DEVICE_TYPE_CPU) ? (int)d->compute_units : 0;
    sensor s[SENSOR_MAX];
    int n = energy_meter_sensors(er->meter, s, SENSOR_MAX);
    if (!de->host_cores)
        de->gpu_sensor = device_energy_sensor_for(s, n, d->name, d->vendor);
    de->m.active_w[RT_WORKER_OPENCL] = de->host_cores ? core_w * de->host_cores : GPU_PRIOR_W;
    if (de->host_cores)
        snprintf(de->device_from, sizeof de->device_from, "its %d host cores", de->host_cores);
    else if (de->gpu_sensor >= 0)
        snprintf(de->device_from, sizeof de->device_from, "a prior until %s %.60s measures it",
                 s[de->gpu_sensor].source, s[de->gpu_sensor].name);
    else
        snprintf(de->device_from, sizeof de->device_from, "a prior: no GPU sensor measures it");
    rt_set_placement_energy(rt, &de->m);
    note(de, rd);
    fprintf(log, "placement: %s\n", rd->energy_note);
}

/* The CPU's watts per busy core-second: its sensors' joules above their idle over the CPU
 * workers' busy seconds (a device on the host's cores counts as that many cores while busy);
 * *busy: the core-seconds it came from. */
static double cpu_watts(device_energy *de, const energy_run *er, const sensor *s, int n,
                        const epoch_energy *e, const rt_stats *st, double device_busy,
                        double *busy)
{
    double joules = 0, idle = 0, seconds = e->f.seconds + e->test.seconds;
    for (int i = 0; i < n && i < e->f.ndevices; i++)
        if (s[i].in_total && s[i].scope != SCOPE_GPU)
            joules += e->f.device_j[i] + e->test.device_j[i], idle += er->sensor_idle_w[i];
    *busy = st->busy_s + device_busy * de->host_cores;
    return device_energy_gather(&de->cpu, joules, seconds, idle, busy);
}

void device_energy_epoch(device_energy *de, run_devices *rd, rt_runtime *rt, energy_run *er,
                         const rt_stats *st, const epoch_energy *e, FILE *log)
{
    if (!de->on || !er->idle_measured)
        return;   /* without the idle power, the power of work cannot be told apart */
    sensor s[SENSOR_MAX];
    int n = energy_meter_sensors(er->meter, s, SENSOR_MAX);
    double device_busy = 0, seconds = e->f.seconds + e->test.seconds;
    for (int k = 0; k < st->nkinds; k++)
        device_busy += st->kinds[k].busy_by[RT_WORKER_OPENCL];
    double was[2] = {de->m.active_w[RT_WORKER_CPU], de->m.active_w[RT_WORKER_OPENCL]};
    double cpu_busy = 0, gpu_busy = device_busy;
    double cpu = energy_meter_estimated(er->meter)
                     ? -1 : cpu_watts(de, er, s, n, e, st, device_busy, &cpu_busy);
    if (cpu > 0) {
        de->m.active_w[RT_WORKER_CPU] = cpu;
        snprintf(de->cpu_from, sizeof de->cpu_from, "per core, measured: its sensors' joules "
                 "above idle over %.3g busy core-seconds", cpu_busy);
        if (de->host_cores)
            de->m.active_w[RT_WORKER_OPENCL] = cpu * de->host_cores;
    }
    int g = de->gpu_sensor;
    double gpu = g >= 0 && g < e->f.ndevices
                     ? device_energy_gather(&de->gpu, e->f.device_j[g] + e->test.device_j[g],
                                            seconds, er->sensor_idle_w[g], &gpu_busy)
                     : -1;
    if (gpu > 0) {
        de->m.active_w[RT_WORKER_OPENCL] = gpu;
        snprintf(de->device_from, sizeof de->device_from, "measured by %s %.60s over %.3g busy s",
                 s[g].source, s[g].name, gpu_busy);
    }
    if (cpu <= 0 && gpu <= 0)
        return;
    rt_set_placement_energy(rt, &de->m);
    note(de, rd);
    double now[2] = {de->m.active_w[RT_WORKER_CPU], de->m.active_w[RT_WORKER_OPENCL]};
    if (!de->calibrations++ || fabs(now[0] - was[0]) > CHANGE_SAID * was[0] ||
        fabs(now[1] - was[1]) > CHANGE_SAID * was[1])
        fprintf(log, "placement: calibrated: %s\n", rd->energy_note);
}
