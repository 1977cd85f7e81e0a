/* The limits sysfs offers: RAPL packages (powercap), cpufreq policies, AMD GPUs (hwmon). Each
 * found is listed, settable or not; a write is only tried on an open for writing, never made. */
#include "energy/power_limit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static power_limit *add(power_limit *l, int *n, int max, power_limit_kind kind, const char *name)
{
    if (*n >= max)
        return NULL;
    power_limit *z = &l[(*n)++];
    memset(z, 0, sizeof *z);
    z->kind = kind;
    sysfs_format(z->name, sizeof z->name, "%s", name);
    return z;
}

/* A number from dir/file in the limit's unit (scale: the file's units per unit), or -1. */
static double number(const char *dir, const char *file, double scale)
{
    char path[SYSFS_PATH + 64];
    uint64_t v;
    if (sysfs_format(path, sizeof path, "%s/%s", dir, file) || sysfs_read_u64(path, &v))
        return -1;
    return (double)v / scale;
}

/* Reads the value now and whether the file opens for writing; says why not. */
static void check_file(power_limit *z, double scale)
{
    uint64_t v;
    int e = sysfs_read_u64(z->path, &v);
    if (e) {
        sysfs_format(z->why, sizeof z->why, "%s: %s", z->path, e == EINVAL ? "not a number" : strerror(e));
        return;
    }
    z->now = (double)v / scale;
    int fd = open(z->path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        sysfs_format(z->why, sizeof z->why, "%s: %s%s", z->path, strerror(errno),
                 errno == EACCES || errno == EPERM ? ": setting it needs root" : "");
        return;
    }
    close(fd);
    if (!(z->max > 0 && z->min <= z->max)) {
        sysfs_format(z->why, sizeof z->why, "no range known to set it within");
        return;
    }
    z->settable = 1;
}

void power_limit_probe_rapl(power_limit *l, int *n, int max)
{
    char dir[SYSFS_PATH], zone[SYSFS_PATH + 300], name[64], path[SYSFS_PATH + 320], **names;
    sysfs_path(dir, sizeof dir, "/sys/class/powercap");
    int count = sysfs_list(dir, "intel-rapl:", &names);
    for (int i = 0; i < count; i++) {
        const char *colon = strchr(names[i], ':');
        if (strchr(colon + 1, ':') || strstr(names[i], "mmio"))
            continue;   /* a package's parts (their limits are the package's), the mmio copy */
        sysfs_format(zone, sizeof zone, "%s/%s", dir, names[i]);
        sysfs_format(path, sizeof path, "%s/name", zone);
        if (sysfs_read_line(path, name, sizeof name) || strncmp(name, "package", 7))
            continue;
        power_limit *z = add(l, n, max, POWER_LIMIT_RAPL, name);
        if (!z)
            break;
        sysfs_format(z->path, sizeof z->path, "%s/constraint_0_power_limit_uw", zone);
        double now = number(zone, "constraint_0_power_limit_uw", 1e6);
        z->max = number(zone, "constraint_0_max_power_uw", 1e6);
        int assumed = z->max <= 0 && now > 0;
        if (assumed)   /* no declared maximum: up to the limit found */
            z->max = now;
        z->min = z->max / 10;   /* RAPL declares no floor; a tenth starves a package enough */
        check_file(z, 1e6);
        if (z->settable && assumed)
            sysfs_format(z->why, sizeof z->why, "no constraint_0_max_power_uw: its range is taken as "
                     "up to the limit found");
        z->full = z->max;
    }
    sysfs_list_free(names, count);
}

void power_limit_probe_cpufreq(power_limit *l, int *n, int max)
{
    char dir[SYSFS_PATH], policy[SYSFS_PATH + 300], name[80], path[SYSFS_PATH + 320], **names;
    sysfs_path(dir, sizeof dir, "/sys/devices/system/cpu/cpufreq");
    int count = sysfs_list(dir, "policy", &names);
    for (int i = 0; i < count; i++) {
        sysfs_format(policy, sizeof policy, "%s/%s", dir, names[i]);
        snprintf(name, sizeof name, "cpufreq %.60s", names[i]);
        power_limit *z = add(l, n, max, POWER_LIMIT_CPUFREQ, name);
        if (!z)
            break;
        sysfs_format(z->path, sizeof z->path, "%s/scaling_max_freq", policy);
        z->min = number(policy, "cpuinfo_min_freq", 1e3);
        z->max = number(policy, "cpuinfo_max_freq", 1e3);
        z->full = z->max;
        sysfs_format(path, sizeof path, "%s/scaling_governor", policy);
        sysfs_read_line(path, z->governor, sizeof z->governor);
        check_file(z, 1e3);
    }
    sysfs_list_free(names, count);
}

void power_limit_probe_amdgpu(power_limit *l, int *n, int max)
{
    char dir[SYSFS_PATH], chip[SYSFS_PATH + 300], kind[64], name[80], path[SYSFS_PATH + 320], **names;
    sysfs_path(dir, sizeof dir, "/sys/class/hwmon");
    int count = sysfs_list(dir, "hwmon", &names);
    for (int i = 0; i < count; i++) {
        sysfs_format(chip, sizeof chip, "%s/%s", dir, names[i]);
        sysfs_format(path, sizeof path, "%s/name", chip);
        if (sysfs_read_line(path, kind, sizeof kind) || strcmp(kind, "amdgpu"))
            continue;
        sysfs_format(path, sizeof path, "%s/power1_cap", chip);
        if (!sysfs_exists(path))
            continue;
        snprintf(name, sizeof name, "amdgpu %.60s", names[i]);
        power_limit *z = add(l, n, max, POWER_LIMIT_AMDGPU, name);
        if (!z)
            break;
        z->gpu = 1;
        if (sysfs_format(z->path, sizeof z->path, "%s", path))
            continue;
        z->min = number(chip, "power1_cap_min", 1e6);
        z->max = number(chip, "power1_cap_max", 1e6);
        z->full = number(chip, "power1_cap_default", 1e6);
        if (z->full <= 0)
            z->full = z->max;
        check_file(z, 1e6);
    }
    sysfs_list_free(names, count);
}
