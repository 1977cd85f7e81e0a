#include "energy/power_model.h"

#include "common/env_switches.h"
#include "energy/sysfs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int energy_model_per_process(void)
{
    const char *v = env_switch_value(ENV_MODEL_SCOPE);
    return v && !strcmp(v, "process");
}

/* This process's CPU time as busy, and the wall time on every CPU as total (jiffies): several
 * frugal processes on one host each counted for their own work. */
static int process_times(cpu_times *out)
{
    char line[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return errno;
    char *got = fgets(line, sizeof line, f);
    fclose(f);
    const char *after = got ? strrchr(line, ')') : NULL;   /* the name may hold spaces */
    unsigned long long utime, stime;
    if (!after || sscanf(after + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                         &utime, &stime) != 2)
        return EINVAL;
    long hz = sysconf(_SC_CLK_TCK), ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    out->ncpu = ncpu > 0 ? (int)ncpu : 1;
    out->busy = utime + stime;
    out->total = (uint64_t)(((double)now.tv_sec + 1e-9 * (double)now.tv_nsec) * (double)hz) * (uint64_t)out->ncpu;
    return 0;
}

int energy_cpu_times_read(cpu_times *out)
{
    if (energy_model_per_process())
        return process_times(out);
    char path[SYSFS_PATH], line[512];
    sysfs_path(path, sizeof path, "/proc/stat");
    FILE *f = fopen(path, "r");
    if (!f)
        return errno;
    memset(out, 0, sizeof *out);
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "cpu ", 4)) {
            /* user nice system idle iowait irq softirq steal: idle and iowait are not busy, and
             * steal (a virtual machine's core lent to another guest) is not this machine's work. */
            unsigned long long v[8] = {0};
            int got = sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                             &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
            if (got < 4)
                break;
            for (int i = 0; i < 8; i++)
                out->total += v[i];
            out->busy = out->total - v[3] - v[4] - v[7];
            found = 1;
        } else if (!strncmp(line, "cpu", 3) && line[3] >= '0' && line[3] <= '9') {
            out->ncpu++;
        } else if (found) {
            break;   /* the cpu lines come first; the rest (interrupt counts) is long */
        }
    }
    fclose(f);
    return found && out->ncpu > 0 ? 0 : EINVAL;
}

double energy_cpu_busy_cores(const cpu_times *before, const cpu_times *after)
{
    if (after->total <= before->total || after->busy < before->busy)
        return 0;
    double share = (double)(after->busy - before->busy) / (double)(after->total - before->total);
    return share * after->ncpu;
}

double power_model_watts(double idle_w, double core_w, double busy_cores)
{
    return idle_w + core_w * busy_cores;
}

int power_model_profile_parse(const char *text, double max_w, double out[3])
{
    int used = 0;
    double w[3];
    if (sscanf(text, "%lf , %lf , %lf%n", &w[0], &w[1], &w[2], &used) != 3 || text[used] ||
        !(w[0] >= 0 && w[0] <= w[1] && w[1] <= w[2] && w[2] <= max_w))
        return -1;
    out[0] = w[0], out[1] = w[1], out[2] = w[2];
    return 0;
}

double power_model_profile_watts(const double profile[3], int ncpu, double busy_cores)
{
    if (busy_cores <= 1 || ncpu <= 1)
        return profile[0] + (profile[1] - profile[0]) * (busy_cores < 1 ? busy_cores : 1);
    double beyond = (busy_cores - 1) / (ncpu - 1);
    return profile[1] + (profile[2] - profile[1]) * (beyond < 1 ? beyond : 1);
}
