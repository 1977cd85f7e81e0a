/* Batteries (/sys/class/power_supply/BAT*): the whole system's power while discharging, from
 * power_now, or current_now x voltage_now where the driver reports no power. */
#include "energy/sensor.h"

#include <stdio.h>
#include <string.h>

void battery_probe(sensor *s, int *n, int max)
{
    char dir[SYSFS_PATH], path[SYSFS_PATH + 300], **names;
    sysfs_path(dir, sizeof dir, "/sys/class/power_supply");
    int count = sysfs_list(dir, "", &names);
    for (int i = 0; i < count && *n < max; i++) {
        char type[32];
        sysfs_format(path, sizeof path, "%s/%s/type", dir, names[i]);
        if (sysfs_read_line(path, type, sizeof type) || strcmp(type, "Battery"))
            continue;
        sensor *z = &s[(*n)++];
        memset(z, 0, sizeof *z);
        sysfs_format(z->name, sizeof z->name, "%s", names[i]);
        z->source = "battery";
        z->kind = SENSOR_GAUGE;
        z->scope = SCOPE_SYSTEM;
        sysfs_format(z->status_path, sizeof z->status_path, "%s/%s/status", dir, names[i]);
        sysfs_format(z->path, sizeof z->path, "%s/%s/power_now", dir, names[i]);
        if (!sysfs_exists(z->path)) {
            sysfs_format(z->path, sizeof z->path, "%s/%s/current_now", dir, names[i]);
            sysfs_format(z->path2, sizeof z->path2, "%s/%s/voltage_now", dir, names[i]);
        }
        double w;
        int e = sensor_read(z, &w);
        if (e)
            sensor_explain(z, z->path, e);
    }
    sysfs_list_free(names, count);
}
