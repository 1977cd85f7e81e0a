#include "energy/sensor.h"

#include "energy/nvml.h"
#include "energy/perf_power.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int sensor_read(sensor *s, double *value)
{
    if (!strcmp(s->source, "nvml"))
        return nvml_read(s, value);
    if (!strcmp(s->source, "perf"))
        return perf_power_read(s, value);
    uint64_t v, v2;
    int e = sysfs_read_u64(s->path, &v);
    if (e)
        return e;
    *value = (double)v;
    if (s->path2[0]) {   /* microamps x microvolts = picowatts */
        if ((e = sysfs_read_u64(s->path2, &v2)))
            return e;
        *value = (double)v * (double)v2 * 1e-6;
    }
    if (s->status_path[0]) {
        char status[32] = "";
        sysfs_read_line(s->status_path, status, sizeof status);
        if (strcmp(status, "Discharging")) {
            s->status = SENSOR_PAUSED;
            snprintf(s->why, sizeof s->why, "status '%s': a battery measures only while "
                     "discharging", status[0] ? status : "unknown");
        } else if (s->status == SENSOR_PAUSED) {
            s->status = SENSOR_OK;
            s->why[0] = 0;
        }
    }
    return 0;
}

void sensor_explain(sensor *s, const char *file, int err)
{
    s->status = SENSOR_UNREADABLE;
    if (err == EACCES || err == EPERM) {
        const char *rapl = strcmp(s->source, "rapl") ? "" :
            " (RAPL counters are root-only since Linux 5.10, CVE-2020-8694)";
        snprintf(s->why, sizeof s->why,
                 "%s: permission denied%s; to grant access: 'sudo chmod a+r %s' (until reboot; "
                 "make it last with a udev rule or systemd-tmpfiles), or "
                 "'sudo setcap cap_dac_read_search+ep frugal'", file, rapl, file);
    } else {
        snprintf(s->why, sizeof s->why, "%s: %s", file,
                 err == EINVAL ? "not a number" : strerror(err));
    }
}

const char *sensor_scope_name(sensor_scope s)
{
    static const char *const names[] = {"system", "cpu", "cpu part", "dram", "gpu", "board"};
    return names[s];
}

const char *sensor_status_name(sensor_status s)
{
    static const char *const names[] = {"readable", "unreadable", "lost", "paused"};
    return names[s];
}
