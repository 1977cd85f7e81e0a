/* RAPL through powercap: /sys/class/powercap/intel-rapl:N[:M] (Intel and AMD alike), plus the
 * intel-rapl-mmio copy of package-0 on recent Intel clients. Zones are known by their name file,
 * never by their index: child zones are numbered in registration order, skipping absent ones. */
#include "energy/sensor.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The RAPL sensor called name, or -1. */
static int find_sensor(const sensor *s, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s[i].source, "rapl") && !strcmp(s[i].name, name))
            return i;
    return -1;
}

/* "package-0", "core (package-0)", "dram (package-1)", "psys". */
static void zone_label(const char *dir, const char *entry, const char *zone, char *out, size_t n,
                       sensor_scope *scope)
{
    char parent[SYSFS_PATH], parent_name[64] = "";
    const char *last = strrchr(entry, ':');
    if (last && strchr(entry, ':') != last) {   /* intel-rapl:P:C: a child of intel-rapl:P */
        sysfs_format(parent, sizeof parent, "%s/%.*s/name", dir, (int)(last - entry), entry);
        if (sysfs_read_line(parent, parent_name, sizeof parent_name))
            sysfs_format(parent_name, sizeof parent_name, "%.*s", (int)(last - entry), entry);
    }
    if (!strncmp(zone, "psys", 4))
        *scope = SCOPE_SYSTEM;
    else if (!strncmp(zone, "package", 7))
        *scope = SCOPE_CPU;
    else if (!strcmp(zone, "dram"))
        *scope = SCOPE_DRAM;
    else
        *scope = SCOPE_CPU_PART;   /* core, uncore (the integrated GPU), unknown domains */
    if (parent_name[0])
        sysfs_format(out, n, "%s (%s)", zone, parent_name);
    else
        sysfs_format(out, n, "%s", zone);
}

static void add_zone(sensor *s, int *n, int max, const char *dir, const char *entry)
{
    char path[SYSFS_PATH + 64], zone[64], label[64 + 72];
    sysfs_format(path, sizeof path, "%s/%s/name", dir, entry);
    if (sysfs_read_line(path, zone, sizeof zone) || !zone[0])
        return;   /* not a zone (e.g. the intel-rapl control type itself) */
    sensor_scope scope;
    zone_label(dir, entry, zone, label, sizeof label, &scope);
    /* intel-rapl-mmio duplicates the intel-rapl zone of the same name: it is read only in
     * place of a copy that cannot be */
    int dup = find_sensor(s, *n, label);
    uint64_t v;
    if (dup >= 0) {
        char mmio[SYSFS_PATH + 80];
        sysfs_format(mmio, sizeof mmio, "%s/%s/energy_uj", dir, entry);
        if (s[dup].status == SENSOR_OK || sysfs_read_u64(mmio, &v))
            return;
    } else if (*n >= max) {
        return;
    }
    sensor *z = &s[dup >= 0 ? dup : (*n)++];
    memset(z, 0, sizeof *z);
    sysfs_format(z->name, sizeof z->name, "%s", label);
    z->source = "rapl";
    z->kind = SENSOR_COUNTER;
    z->scope = scope;
    sysfs_format(z->path, sizeof z->path, "%s/%s/energy_uj", dir, entry);
    int e = sysfs_read_u64(z->path, &v);
    if (e) {
        sensor_explain(z, z->path, e);
        return;
    }
    sysfs_format(path, sizeof path, "%s/%s/max_energy_range_uj", dir, entry);
    e = sysfs_read_u64(path, &z->max_uj);
    if (e || z->max_uj == 0) {
        z->max_uj = 0;
        sysfs_format(z->why, sizeof z->why,
                     "max_energy_range_uj unreadable (%s): a counter that goes back is taken as "
                     "one wrap, its interval estimated from the previous interval's power",
                     e ? strerror(e) : "zero");
    }
}

void rapl_probe(sensor *s, int *n, int max)
{
    char dir[SYSFS_PATH], **names;
    sysfs_path(dir, sizeof dir, "/sys/class/powercap");
    int count = sysfs_list(dir, "rapl", &names);
    /* intel-rapl zones first, so that their mmio copies are recognised as duplicates. */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < count; i++)
            if (strchr(names[i], ':') && (strstr(names[i], "mmio") != NULL) == pass)
                add_zone(s, n, max, dir, names[i]);
    sysfs_list_free(names, count);
}
