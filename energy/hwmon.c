/* hwmon: energy*_input counters (microjoules) and power*_input / power*_average gauges
 * (microwatts) of any chip: GPUs (amdgpu, i915, xe, nouveau), AMD CPUs (amd_energy, zenpower,
 * fam15h_power), ACPI power meters, INA rail monitors on ARM boards. hwmonN numbers change from
 * boot to boot; sensors are named by the chip's name file and the channel's label. */
#include "energy/sensor.h"

#include <stdio.h>
#include <string.h>

static sensor_scope chip_scope(const char *chip, const char *label)
{
    static const char *const gpus[] = {"amdgpu", "radeon", "i915", "xe", "nouveau", NULL};
    static const char *const cpus[] = {"amd_energy", "zenpower", "fam15h_power", NULL};
    for (int i = 0; gpus[i]; i++)
        if (!strcmp(chip, gpus[i]))
            return SCOPE_GPU;
    for (int i = 0; cpus[i]; i++)
        if (!strcmp(chip, cpus[i]))
            return strncmp(label, "Ecore", 5) ? SCOPE_CPU : SCOPE_CPU_PART;
    if (!strcmp(chip, "power_meter"))
        return SCOPE_SYSTEM;
    return SCOPE_BOARD;
}

/* Channel N of one chip: an energy counter if there is one, else a power gauge. */
static void add_channel(sensor *s, int *n, int max, const char *dir, const char *chip,
                        const char *type, int channel)
{
    char path[SYSFS_PATH + 64], label[64] = "";
    sysfs_format(path, sizeof path, "%s/%s%d_label", dir, type, channel);
    if (sysfs_read_line(path, label, sizeof label) || !label[0])
        sysfs_format(label, sizeof label, "%s%d", type, channel);
    if (*n >= max)
        return;
    sensor *z = &s[(*n)++];
    memset(z, 0, sizeof *z);
    sysfs_format(z->name, sizeof z->name, "%s %s", chip, label);
    z->source = "hwmon";
    z->scope = chip_scope(chip, label);
    if (!strcmp(type, "energy")) {
        z->kind = SENSOR_COUNTER;
        sysfs_format(z->path, sizeof z->path, "%s/energy%d_input", dir, channel);
        z->max_uj = UINT64_MAX;   /* 64-bit, accumulated by the driver */
    } else {
        z->kind = SENSOR_GAUGE;
        sysfs_format(z->path, sizeof z->path, "%s/power%d_input", dir, channel);
        if (!sysfs_exists(z->path))
            sysfs_format(z->path, sizeof z->path, "%s/power%d_average", dir, channel);
    }
    uint64_t v;
    int e = sysfs_read_u64(z->path, &v);
    if (e)
        sensor_explain(z, z->path, e);
}

static int has_file(const char *dir, const char *type, int channel, const char *suffix)
{
    char path[SYSFS_PATH + 64];
    sysfs_format(path, sizeof path, "%s/%s%d_%s", dir, type, channel, suffix);
    return sysfs_exists(path);
}

static void probe_chip(sensor *s, int *n, int max, const char *dir)
{
    char path[SYSFS_PATH + 16], chip[64];
    sysfs_format(path, sizeof path, "%s/name", dir);
    if (sysfs_read_line(path, chip, sizeof chip) || !chip[0])
        return;
    for (int ch = 0; ch <= 32; ch++) {
        if (has_file(dir, "energy", ch, "input"))
            add_channel(s, n, max, dir, chip, "energy", ch);
        else if (has_file(dir, "power", ch, "input") || has_file(dir, "power", ch, "average"))
            add_channel(s, n, max, dir, chip, "power", ch);
    }
}

void hwmon_probe(sensor *s, int *n, int max)
{
    char dir[SYSFS_PATH], chip_dir[SYSFS_PATH + 300], **names;
    sysfs_path(dir, sizeof dir, "/sys/class/hwmon");
    int count = sysfs_list(dir, "hwmon", &names);
    for (int i = 0; i < count; i++) {
        sysfs_format(chip_dir, sizeof chip_dir, "%s/%s", dir, names[i]);
        probe_chip(s, n, max, chip_dir);
    }
    sysfs_list_free(names, count);
}
