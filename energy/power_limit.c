#include "energy/power_limit.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char *power_limit_source(power_limit_kind k)
{
    static const char *const names[] = {"nvml", "rapl", "cpufreq", "amdgpu"};
    return names[k];
}

const char *power_limit_unit(power_limit_kind k) { return k == POWER_LIMIT_CPUFREQ ? "MHz" : "W"; }

int power_limit_probe(power_limit *l, int max)
{
    int n = 0;
    nvml_limit_probe(l, &n, max);
    power_limit_probe_amdgpu(l, &n, max);
    power_limit_probe_rapl(l, &n, max);
    power_limit_probe_cpufreq(l, &n, max);
    return n;
}

/* What the file holds per unit of the limit: microwatts per watt, kHz per MHz. */
static double file_scale(power_limit_kind k) { return k == POWER_LIMIT_CPUFREQ ? 1e3 : 1e6; }

int power_limit_read(const power_limit *l, double *value)
{
    if (l->kind == POWER_LIMIT_NVML)
        return nvml_limit_read(l->path, value);
    uint64_t v;
    int e = sysfs_read_u64(l->path, &v);
    if (!e)
        *value = (double)v / file_scale(l->kind);
    return e;
}

static int write_line(const char *path, const char *text, char *why, size_t n)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC), e = 0;
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        e = errno ? errno : EIO;
    if (fd >= 0 && close(fd) && !e)
        e = errno;
    if (e)
        snprintf(why, n, "%s: %s%s", path, strerror(e), e == EACCES || e == EPERM
                 ? " (setting a limit needs root, or the file made writable by an administrator)" : "");
    return e;
}

int power_limit_path_valid(power_limit_kind k, const char *path)
{
    if (k == POWER_LIMIT_NVML) {
        unsigned index;
        int used = 0;
        return sscanf(path, "nvml:%u%n", &index, &used) == 1 && !path[used];
    }
    static const char *const files[] = {NULL, "/constraint_0_power_limit_uw", "/scaling_max_freq",
                                        "/power1_cap"};
    if (k < POWER_LIMIT_RAPL || k > POWER_LIMIT_AMDGPU)
        return 0;
    char sys[SYSFS_PATH];
    sysfs_path(sys, sizeof sys, "/sys/");
    size_t len = strlen(path), tail = strlen(files[k]);
    return !strncmp(path, sys, strlen(sys)) && !strstr(path, "/../") && len > tail &&
           !strcmp(path + len - tail, files[k]);
}

int power_limit_write(power_limit_kind k, const char *path, double value, char *why, size_t n)
{
    if (!power_limit_path_valid(k, path)) {
        snprintf(why, n, "%.400s: not a %s limit's file: left alone", path, power_limit_source(k));
        return EINVAL;
    }
    if (k == POWER_LIMIT_NVML)
        return nvml_limit_write(path, value, why, n);
    char text[32];
    snprintf(text, sizeof text, "%.0f\n", value * file_scale(k));
    return write_line(path, text, why, n);
}

int power_limit_set(const power_limit *l, double value, char *why, size_t n)
{
    if (!l->settable) {
        snprintf(why, n, "%s: cannot be set here: %s", l->name, l->why);
        return EPERM;
    }
    if (!isfinite(value) || value < l->min - 1e-9 || value > l->max + 1e-9) {
        snprintf(why, n, "%s: %g %s is outside what it accepts (%g to %g %s)", l->name, value,
                 power_limit_unit(l->kind), l->min, l->max, power_limit_unit(l->kind));
        return ERANGE;
    }
    char detail[400];
    int e = power_limit_write(l->kind, l->path, value, detail, sizeof detail);
    if (e)
        snprintf(why, n, "%s: %s", l->name, detail);
    return e;
}

int power_limit_set_governor(const char *path, const char *governor, char *why, size_t n)
{
    char file[SYSFS_PATH], text[40];
    const char *slash = strrchr(path, '/');
    if (!slash || sysfs_format(file, sizeof file, "%.*s/scaling_governor", (int)(slash - path), path)) {
        snprintf(why, n, "%s: not a cpufreq policy's file", path);
        return EINVAL;
    }
    snprintf(text, sizeof text, "%s\n", governor);
    return write_line(file, text, why, n);
}
