#include "energy/perf_power.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DEFAULT_SCALE 2.3283064365386962890625e-10   /* joules per count: 1/2^32 */
#define MAX_PACKAGES 16

static const struct {
    const char *event, *label;
    sensor_scope scope;
    int every_package;
} events[] = {
    {"energy-pkg", "package", SCOPE_CPU, 1},
    {"energy-ram", "dram", SCOPE_DRAM, 1},
    {"energy-psys", "psys", SCOPE_SYSTEM, 0},
};

/* The CPUs of a cpumask line ("0", "0,28", "0-1"): one per package. */
static int parse_cpus(const char *line, int *cpus, int max)
{
    int n = 0;
    for (const char *p = line; *p && n < max;) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p)
            break;
        if (*end == '-')
            b = strtol(end + 1, &end, 10);
        for (long c = a; c <= b && n < max; c++)
            cpus[n++] = (int)c;
        p = *end == ',' ? end + 1 : end + strlen(end);
    }
    return n;
}

static void explain(sensor *z, const char *event, int cpu, int err)
{
    z->status = SENSOR_UNREADABLE;
    if (err == EACCES || err == EPERM)
        sysfs_format(z->why, sizeof z->why, "perf_event_open(power/%s/) on cpu %d: permission "
                     "denied; to allow it: 'sudo sysctl kernel.perf_event_paranoid=0', or 'sudo "
                     "setcap cap_perfmon+ep frugal'", event, cpu);
    else
        sysfs_format(z->why, sizeof z->why, "perf_event_open(power/%s/) on cpu %d: %s", event,
                     cpu, strerror(err));
}

static void open_event(sensor *s, int *n, int max, unsigned type, int e, int cpu,
                       const char *dir)
{
    char path[SYSFS_PATH + 64], line[64];
    unsigned long long code;
    sysfs_format(path, sizeof path, "%s/events/%s", dir, events[e].event);
    if (sysfs_read_line(path, line, sizeof line) || sscanf(line, "event=%llx", &code) != 1 ||
        *n >= max)
        return;
    sensor *z = &s[(*n)++];
    memset(z, 0, sizeof *z);
    sysfs_format(z->name, sizeof z->name, "%s (cpu %d)", events[e].label, cpu);
    z->source = "perf";
    z->kind = SENSOR_COUNTER;
    z->scope = events[e].scope;
    z->max_uj = UINT64_MAX;   /* perf keeps a 64-bit count */
    sysfs_format(z->path, sizeof z->path, "%s", path);
    sysfs_format(path, sizeof path, "%s/events/%s.scale", dir, events[e].event);
    double scale = sysfs_read_line(path, line, sizeof line) == 0 ? strtod(line, NULL) : 0;
    z->scale = scale > 0 ? scale : DEFAULT_SCALE;
    struct perf_event_attr attr = {.type = type, .size = sizeof attr, .config = code};
    z->fd = (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    if (z->fd < 0)
        explain(z, events[e].event, cpu, errno);
}

void perf_power_probe(sensor *s, int *n, int max)
{
    char dir[SYSFS_PATH], path[SYSFS_PATH + 16], line[256];
    uint64_t type;
    sysfs_path(dir, sizeof dir, "/sys/bus/event_source/devices/power");
    sysfs_format(path, sizeof path, "%s/type", dir);
    if (sysfs_read_u64(path, &type))
        return;   /* no power PMU: nothing to say */
    int cpus[MAX_PACKAGES], ncpus = 1;
    cpus[0] = 0;
    sysfs_format(path, sizeof path, "%s/cpumask", dir);
    if (sysfs_read_line(path, line, sizeof line) == 0 && line[0])
        ncpus = parse_cpus(line, cpus, MAX_PACKAGES);
    for (unsigned e = 0; e < sizeof events / sizeof events[0]; e++)
        for (int i = 0; i < (events[e].every_package ? ncpus : 1); i++)
            open_event(s, n, max, (unsigned)type, (int)e, cpus[i], dir);
}

int perf_power_read(const sensor *s, double *value)
{
    uint64_t count;
    errno = 0;
    if (read(s->fd, &count, sizeof count) != (ssize_t)sizeof count)
        return errno ? errno : EIO;
    *value = (double)count * s->scale * 1e6;
    return 0;
}

void perf_power_close(sensor *s)
{
    if (strcmp(s->source, "perf"))
        return;
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}
