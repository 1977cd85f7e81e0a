/* The energy module against fake sysfs and procfs trees (FRUGAL_SYSFS_ROOT, FRUGAL_PROCFS_ROOT):
 * Intel (two sockets, psys, mmio copy), AMD, hwmon, batteries, wrap-around, permission denied,
 * a sensor that vanishes, the fallback model, and attribution. */
#include "common/clock.h"
#include "common/env_switches.h"
#include "test.h"

#include "energy/account.h"
#include "energy/meter.h"
#include "energy/power_model.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define INTEL_MAX 262143328850ull

static char root[512];

/* A fresh tree for this test: root/sys and root/proc, with the environment pointing at them. */
static void fake_root(void)
{
    snprintf(root, sizeof root, "%s/tree", test_tmpdir());
    mkdir(root, 0755);
    setenv("FRUGAL_SYSFS_ROOT", root, 1);
    setenv("FRUGAL_PROCFS_ROOT", root, 1);
    env_switches_read();
}

/* Writes root/rel (creating its folders) with printf-style content. */
static void put(const char *rel, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(const char *rel, const char *fmt, ...)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(path, 0755);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    if (!f) {
        test_fail(__FILE__, __LINE__, "cannot write %s: %s", path, strerror(errno));
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
}

static void rapl_zone(const char *zone, const char *name, unsigned long long uj, unsigned long long max)
{
    char rel[256];
    snprintf(rel, sizeof rel, "sys/class/powercap/%s/name", zone);
    put(rel, "%s\n", name);
    snprintf(rel, sizeof rel, "sys/class/powercap/%s/energy_uj", zone);
    put(rel, "%llu\n", uj);
    if (max) {
        snprintf(rel, sizeof rel, "sys/class/powercap/%s/max_energy_range_uj", zone);
        put(rel, "%llu\n", max);
    }
}

static void rapl_set(const char *zone, unsigned long long uj)
{
    char rel[256];
    snprintf(rel, sizeof rel, "sys/class/powercap/%s/energy_uj", zone);
    put(rel, "%llu\n", uj);
}

static void proc_stat(unsigned long long busy, unsigned long long idle)
{
    put("proc/stat", "cpu  %llu 0 0 %llu 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0\n"
        "intr 0\n", busy, idle);
}

/* Index of the sensor called name, or -1. */
static int find(const sensor *s, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s[i].name, name))
            return i;
    return -1;
}

static void intel_two_sockets(int with_psys)
{
    fake_root();
    rapl_zone("intel-rapl:0", "package-0", 1000000, INTEL_MAX);
    rapl_zone("intel-rapl:0:0", "core", 500000, INTEL_MAX);
    rapl_zone("intel-rapl:0:1", "uncore", 100000, INTEL_MAX);
    rapl_zone("intel-rapl:0:2", "dram", 200000, INTEL_MAX);
    rapl_zone("intel-rapl:1", "package-1", 3000000, INTEL_MAX);
    rapl_zone("intel-rapl:1:0", "dram", 400000, INTEL_MAX);   /* dram at :0, as on many Xeons */
    rapl_zone("intel-rapl-mmio:0", "package-0", 1000000, INTEL_MAX);
    if (with_psys)
        rapl_zone("intel-rapl:2", "psys", 9000000, INTEL_MAX);
    put("sys/class/powercap/intel-rapl/enabled", "1\n");   /* the control type: not a zone */
}

TEST(energy_intel_zones_by_name_psys_counted_alone)
{
    intel_two_sockets(1);
    energy_meter *m = energy_meter_open(NULL);
    sensor s[SENSOR_MAX];
    int n = energy_meter_sensors(m, s, SENSOR_MAX);
    CHECKF(n == 7, "%d sensors (the mmio copy of package-0 must not count)", n);
    const char *names[] = {"package-0", "core (package-0)", "uncore (package-0)",
                           "dram (package-0)", "package-1", "dram (package-1)", "psys"};
    for (int i = 0; i < 7; i++) {
        int k = find(s, n, names[i]);
        CHECKF(k >= 0, "no sensor %s", names[i]);
        if (k >= 0)
            CHECKF(s[k].in_total == !strcmp(names[i], "psys"), "%s in_total %d", names[i],
                   s[k].in_total);
    }
    CHECK(!strcmp(energy_meter_source(m), "measured: rapl psys"));
    CHECK(!energy_meter_estimated(m));
    rapl_set("intel-rapl:2", 9000000 + 30000000);    /* psys: 30 J */
    rapl_set("intel-rapl:0", 1000000 + 12000000);    /* package-0: 12 J */
    energy_meter_sample_at(m, 2.0);
    n = energy_meter_sensors(m, s, SENSOR_MAX);
    CHECK_NEAR(s[find(s, n, "psys")].joules, 30.0, 1e-9, 0);
    CHECK_NEAR(s[find(s, n, "psys")].watts, 15.0, 1e-9, 0);
    CHECK_NEAR(s[find(s, n, "package-0")].joules, 12.0, 1e-9, 0);
    energy_meter_close(m);
}

/* psys on most desktops and servers (and in virtual machines) reads 0 and never moves: left out
 * with the reason, and the packages with their DRAM make the total instead of "0 J measured". */
TEST(energy_psys_at_zero_is_not_wired_and_left_out)
{
    intel_two_sockets(1);
    rapl_set("intel-rapl:2", 0);
    energy_meter *m = energy_meter_open(NULL);
    sensor s[SENSOR_MAX];
    int n = energy_meter_sensors(m, s, SENSOR_MAX), psys = find(s, n, "psys");
    CHECKF(psys >= 0 && s[psys].status == SENSOR_UNREADABLE && !s[psys].in_total &&
           strstr(s[psys].why, "intel-rapl:2/energy_uj reads 0 and did not move in 50 ms: not "
                               "wired on this machine"), "%s", psys >= 0 ? s[psys].why : "no psys");
    CHECKF(!strcmp(energy_meter_source(m), "measured: rapl package-0 + rapl dram (package-0) + "
                   "rapl package-1 + rapl dram (package-1)"), "%s", energy_meter_source(m));
    energy_meter_close(m);
}

TEST(energy_intel_without_psys_sums_packages_and_dram_once)
{
    intel_two_sockets(0);
    energy_meter *m = energy_meter_open(NULL);
    sensor s[SENSOR_MAX];
    int n = energy_meter_sensors(m, s, SENSOR_MAX);
    CHECK(n == 6);
    const char *counted[] = {"package-0", "dram (package-0)", "package-1", "dram (package-1)"};
    const char *inside[] = {"core (package-0)", "uncore (package-0)"};
    for (int i = 0; i < 4; i++)
        CHECKF(find(s, n, counted[i]) >= 0 && s[find(s, n, counted[i])].in_total, "%s", counted[i]);
    for (int i = 0; i < 2; i++)
        CHECKF(find(s, n, inside[i]) >= 0 && !s[find(s, n, inside[i])].in_total, "%s", inside[i]);
    rapl_set("intel-rapl:0", 1000000 + 10000000);
    rapl_set("intel-rapl:0:0", 500000 + 8000000);    /* core: inside package-0, not added */
    rapl_set("intel-rapl:0:2", 200000 + 2000000);
    rapl_set("intel-rapl:1", 3000000 + 20000000);
    rapl_set("intel-rapl:1:0", 400000 + 3000000);
    energy_meter_sample_at(m, 1.0);
    energy_reading r;
    energy_meter_read(m, &r);
    CHECK_NEAR(r.total_j, 35.0, 1e-9, 0);
    CHECK(strstr(energy_meter_source(m), "rapl package-1") != NULL);
    energy_meter_close(m);
}

TEST(energy_counter_wraps_at_max_energy_range)
{
    fake_root();
    rapl_zone("intel-rapl:0", "package-0", INTEL_MAX - 1000, INTEL_MAX);
    energy_meter *m = energy_meter_open(NULL);
    rapl_set("intel-rapl:0", 500);
    energy_meter_sample_at(m, 1.0);
    sensor s[SENSOR_MAX];
    energy_meter_sensors(m, s, SENSOR_MAX);
    CHECK_NEAR(s[0].joules * 1e6, 1501.0, 1e-3, 0);
    CHECK(s[0].wraps == 1);
    /* Mid-run: more energy, another wrap, then on. */
    rapl_set("intel-rapl:0", 2000500);
    energy_meter_sample_at(m, 2.0);
    rapl_set("intel-rapl:0", INTEL_MAX - 500000);
    energy_meter_sample_at(m, 3.0);
    rapl_set("intel-rapl:0", 1500000);
    energy_meter_sample_at(m, 4.0);
    energy_meter_sensors(m, s, SENSOR_MAX);
    double expect = 1501 + 2000000 + (double)(INTEL_MAX - 500000 - 2000500) + 500000 + 1500000 + 1;
    CHECK_NEAR(s[0].joules * 1e6, expect, 1.0, 0);
    CHECK(s[0].wraps == 2);
    energy_meter_close(m);
}

TEST(energy_unknown_wrap_range_estimates_from_previous_power)
{
    fake_root();
    rapl_zone("intel-rapl:0", "package-0", 1000000, 0);   /* no max_energy_range_uj */
    energy_meter *m = energy_meter_open(NULL);
    sensor s[SENSOR_MAX];
    energy_meter_sensors(m, s, SENSOR_MAX);
    CHECK(s[0].status == SENSOR_OK && s[0].in_total);
    CHECK(strstr(s[0].why, "max_energy_range_uj") != NULL);
    rapl_set("intel-rapl:0", 1000000 + 4000000);   /* 4 W for 1 s */
    energy_meter_sample_at(m, 1.0);
    rapl_set("intel-rapl:0", 100);        /* went back: a wrap of unknown size */
    energy_meter_sample_at(m, 1.5);
    energy_meter_sensors(m, s, SENSOR_MAX);
    CHECK_NEAR(s[0].joules, 4.0 + 4.0 * 0.5, 1e-9, 0);
    CHECK(s[0].wraps == 1);
    energy_meter_close(m);
}

TEST(energy_amd_prefers_powercap_over_amd_energy)
{
    fake_root();
    rapl_zone("intel-rapl:0", "package-0", 1000, 65532610987ull);
    rapl_zone("intel-rapl:0:0", "core", 1000, 65532610987ull);
    put("sys/class/hwmon/hwmon3/name", "amd_energy\n");
    put("sys/class/hwmon/hwmon3/energy1_input", "100\n");
    put("sys/class/hwmon/hwmon3/energy1_label", "Ecore000\n");
    put("sys/class/hwmon/hwmon3/energy17_input", "5000\n");
    put("sys/class/hwmon/hwmon3/energy17_label", "Esocket0\n");
    energy_meter *m = energy_meter_open(NULL);
    sensor s[SENSOR_MAX];
    int n = energy_meter_sensors(m, s, SENSOR_MAX);
    CHECK(n == 4);
    CHECK(s[find(s, n, "package-0")].in_total);
    CHECK(!s[find(s, n, "core (package-0)")].in_total);
    CHECK(find(s, n, "amd_energy Esocket0") >= 0 && !s[find(s, n, "amd_energy Esocket0")].in_total);
    energy_meter_close(m);

    /* An older kernel without AMD powercap: the socket counter is the CPU's, per-core ones are inside it. */
    char dir[600];
    snprintf(dir, sizeof dir, "rm -rf %s/sys/class/powercap", root);
    CHECK(system(dir) == 0);
    m = energy_meter_open(NULL);
    n = energy_meter_sensors(m, s, SENSOR_MAX);
    CHECK(n == 2);
    CHECK(s[find(s, n, "amd_energy Esocket0")].in_total);
    CHECK(!s[find(s, n, "amd_energy Ecore000")].in_total);
    put("sys/class/hwmon/hwmon3/energy17_input", "7005000\n");
    energy_meter_sample_at(m, 1.0);
    energy_reading r;
    energy_meter_read(m, &r);
    CHECK_NEAR(r.total_j, 7.0, 1e-9, 0);
    CHECK(!strcmp(energy_meter_source(m), "measured: hwmon amd_energy Esocket0"));
    energy_meter_close(m);
}

TEST(energy_hwmon_gpu_power_is_integrated_and_added_to_packages)
{
    fake_root();
    rapl_zone("intel-rapl:0", "package-0", 1000000, INTEL_MAX);
    put("sys/class/hwmon/hwmon0/name", "coretemp\n");          /* no power: not a sensor */
    put("sys/class/hwmon/hwmon0/temp1_input", "40000\n");
    put("sys/class/hwmon/hwmon1/name", "amdgpu\n");
    put("sys/class/hwmon/hwmon1/power1_average", "50000000\n");   /* 50 W */
    energy_meter *m = energy_meter_open(NULL);
    sensor s[SENSOR_MAX];
    int n = energy_meter_sensors(m, s, SENSOR_MAX);
    CHECK(n == 2);
    int gpu = find(s, n, "amdgpu power1");
    CHECK(gpu >= 0 && s[gpu].in_total && s[gpu].scope == SCOPE_GPU && s[gpu].kind == SENSOR_GAUGE);
    put("sys/class/hwmon/hwmon1/power1_average", "70000000\n");
    rapl_set("intel-rapl:0", 1000000 + 10000000);
    energy_meter_sample_at(m, 2.0);
    energy_meter_sensors(m, s, SENSOR_MAX);
    CHECK_NEAR(s[gpu].joules, 0.5 * (50 + 70) * 2.0, 1e-9, 0);   /* trapezoid */
    energy_reading r;
    energy_meter_read(m, &r);
    CHECK_NEAR(r.total_j, 120.0 + 10.0, 0.2, 0);   /* + 70 W over the few microseconds since */
    energy_meter_close(m);
}

TEST(energy_battery_measures_only_while_discharging)
{
    fake_root();
    put("sys/class/power_supply/AC/type", "Mains\n");
    put("sys/class/power_supply/BAT0/type", "Battery\n");
    put("sys/class/power_supply/BAT0/status", "Discharging\n");
    put("sys/class/power_supply/BAT0/power_now", "12000000\n");
    put("sys/class/power_supply/BAT1/type", "Battery\n");
    put("sys/class/power_supply/BAT1/status", "Discharging\n");
    put("sys/class/power_supply/BAT1/current_now", "1000000\n");    /* 1 A */
    put("sys/class/power_supply/BAT1/voltage_now", "11000000\n");   /* 11 V */
    proc_stat(0, 0);
    energy_meter *m = energy_meter_open(NULL);
    sensor s[SENSOR_MAX];
    int n = energy_meter_sensors(m, s, SENSOR_MAX);
    CHECK(n == 2);
    CHECK(s[0].in_total && !s[1].in_total);   /* one whole-system meter, not both */
    energy_meter_sample_at(m, 10.0);
    energy_meter_sensors(m, s, SENSOR_MAX);
    CHECK_NEAR(s[0].joules, 120.0, 1e-9, 0);
    CHECK_NEAR(s[1].joules, 110.0, 1e-9, 0);
    put("sys/class/power_supply/BAT0/status", "Charging\n");
    energy_meter_sample_at(m, 20.0);
    energy_meter_sensors(m, s, SENSOR_MAX);
    CHECK(s[0].status == SENSOR_PAUSED && strstr(s[0].why, "Charging"));
    CHECK_NEAR(s[0].joules, 120.0, 1e-9, 0);
    put("sys/class/power_supply/BAT0/status", "Discharging\n");
    energy_meter_sample_at(m, 21.0);
    energy_meter_sample_at(m, 22.0);
    energy_meter_sensors(m, s, SENSOR_MAX);
    CHECK(s[0].status == SENSOR_OK);
    CHECK_NEAR(s[0].joules, 132.0, 1e-9, 0);   /* only the second after it resumed */
    energy_meter_close(m);
}

TEST(energy_sensor_removed_during_sampling)
{
    intel_two_sockets(0);
    energy_meter *m = energy_meter_open(NULL);
    energy_meter_sample_at(m, 1.0);
    char rmdir_cmd[700];
    snprintf(rmdir_cmd, sizeof rmdir_cmd, "rm -rf %s/sys/class/powercap/intel-rapl:1", root);
    CHECK(system(rmdir_cmd) == 0);    /* package-1 and its dram vanish */
    rapl_set("intel-rapl:0", 1000000 + 5000000);
    energy_meter_sample_at(m, 2.0);
    sensor s[SENSOR_MAX];
    int n = energy_meter_sensors(m, s, SENSOR_MAX);
    int p1 = find(s, n, "package-1"), p0 = find(s, n, "package-0");
    CHECK(s[p1].status == SENSOR_LOST && strstr(s[p1].why, "failed at 2.0 s"));
    CHECK_NEAR(s[p0].joules, 5.0, 1e-9, 0);
    /* It comes back: counted again from its new reading on. */
    rapl_zone("intel-rapl:1", "package-1", 7000000, INTEL_MAX);
    energy_meter_sample_at(m, 3.0);
    rapl_set("intel-rapl:1", 9000000);
    energy_meter_sample_at(m, 4.0);
    n = energy_meter_sensors(m, s, SENSOR_MAX);
    CHECK(s[p1].status == SENSOR_OK && strstr(s[p1].why, "came back"));
    CHECK_NEAR(s[p1].joules, 2.0, 1e-9, 0);
    energy_meter_close(m);
}

TEST(energy_model_when_nothing_is_readable)
{
    fake_root();
    proc_stat(1000, 1000);
    energy_meter *m = energy_meter_open(&(energy_options){.model_idle_w = 10, .model_core_w = 7});
    CHECK(energy_meter_estimated(m));
    CHECK(!strncmp(energy_meter_source(m), "estimated: model (10 W idle + 7 W per busy core", 47));
    proc_stat(1000 + 300, 1000 + 100);   /* 75% of 2 CPUs busy: 1.5 cores */
    energy_meter_sample_at(m, 2.0);
    sensor s[SENSOR_MAX];
    int n = energy_meter_sensors(m, s, SENSOR_MAX);
    CHECK(n == 1 && s[0].kind == SENSOR_MODEL && s[0].in_total);
    CHECK_NEAR(s[0].watts, 10 + 7 * 1.5, 1e-9, 0);
    CHECK_NEAR(s[0].joules, 2.0 * (10 + 7 * 1.5), 1e-9, 0);
    /* Stolen time (the host ran another guest) is not this machine's work. */
    put("proc/stat", "cpu  1400 0 0 1100 0 0 0 200 0 0\ncpu0 0\ncpu1 0\n");   /* +100 busy, +200 steal */
    energy_meter_sample_at(m, 3.0);
    energy_meter_sensors(m, s, SENSOR_MAX);
    CHECK_NEAR(s[0].watts, 10 + 7 * (100.0 / 300.0) * 2, 1e-9, 0);
    energy_meter_close(m);

    /* A measured GPU next to an estimated CPU: both in the total, the label says which is which. */
    put("sys/class/hwmon/hwmon0/name", "nouveau\n");
    put("sys/class/hwmon/hwmon0/power1_input", "30000000\n");
    m = energy_meter_open(NULL);
    CHECK(strstr(energy_meter_source(m), "estimated: model") &&
          strstr(energy_meter_source(m), "+ measured: hwmon nouveau power1"));
    energy_meter_close(m);
}

/* Runs check() in a child as an unprivileged user (as root, drops to nobody, so that file
 * modes apply); returns its exit status. */
static int as_nobody(int (*check)(void))
{
    chmod(test_tmpdir(), 0755);
    pid_t pid = fork();
    if (pid == 0) {
        if (geteuid() == 0 && setresuid(65534, 65534, 65534))
            _exit(10);
        _exit(check());
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

static void deny(const char *zone)
{
    char path[700];
    snprintf(path, sizeof path, "%s/sys/class/powercap/%s/energy_uj", root, zone);
    CHECK(chmod(path, 0) == 0);   /* root-owned and mode 0: nobody reads it */
}

/* intel-rapl:0 and :1 denied, the mmio copy of package-0 readable: package-0 is read there. */
static int check_mmio_stands_in(void)
{
    energy_meter *m = energy_meter_open(NULL);
    sensor s[SENSOR_MAX];
    int n = energy_meter_sensors(m, s, SENSOR_MAX);
    int p0 = find(s, n, "package-0"), p1 = find(s, n, "package-1");
    int ok = p0 >= 0 && s[p0].status == SENSOR_OK && strstr(s[p0].path, "intel-rapl-mmio:0") &&
             s[p0].in_total && p1 >= 0 && s[p1].status == SENSOR_UNREADABLE &&
             !energy_meter_estimated(m);
    energy_meter_close(m);
    return ok ? 0 : 11;
}

/* Every package denied: explained, and the CPU modelled next to the readable DRAM. */
static int check_denied_explained(void)
{
    energy_meter *m = energy_meter_open(NULL);
    sensor s[SENSOR_MAX];
    int n = energy_meter_sensors(m, s, SENSOR_MAX);
    int p0 = find(s, n, "package-0"), d0 = find(s, n, "dram (package-0)");
    int ok = p0 >= 0 && s[p0].status == SENSOR_UNREADABLE &&
             strstr(s[p0].why, "permission denied") && strstr(s[p0].why, "CVE-2020-8694") &&
             strstr(s[p0].why, "chmod a+r") && strstr(s[p0].why, "setcap") &&
             strstr(s[p0].why, "/energy_uj");
    ok = ok && d0 >= 0 && s[d0].in_total && energy_meter_estimated(m) &&
         strstr(energy_meter_source(m), "measured: rapl dram (package-0)");
    if (!ok && p0 >= 0)
        fprintf(stderr, "    package-0: %s; total: %s\n", s[p0].why, energy_meter_source(m));
    energy_meter_close(m);
    return ok ? 0 : 12;
}

/* Permission denied, as for RAPL since Linux 5.10. */
TEST(energy_permission_denied_is_explained_and_falls_back)
{
    intel_two_sockets(0);
    proc_stat(10, 10);
    deny("intel-rapl:0");
    deny("intel-rapl:1");
    int rc = as_nobody(check_mmio_stands_in);
    CHECKF(rc == 0, "mmio copy: child status %d", rc);
    deny("intel-rapl-mmio:0");
    rc = as_nobody(check_denied_explained);
    CHECKF(rc == 0, "all denied: child status %d", rc);
}

TEST(energy_attribution_sums_back_to_the_device_total)
{
    double busy[5] = {0.3, 0.7, 0, 1.25, 0.05}, part[5];
    CHECK(energy_split_by_busy(123.4, busy, 5, part) == 0);
    double sum = 0;
    for (int i = 0; i < 5; i++)
        sum += part[i];
    CHECK_NEAR(sum, 123.4, 1e-9, 0);
    CHECK_NEAR(part[1] / part[0], 0.7 / 0.3, 1e-9, 0);
    CHECK(part[2] == 0);
    double none[2] = {0, 0};
    CHECK(energy_split_by_busy(5, none, 2, part) == -1 && part[0] == 0 && part[1] == 0);

    energy_reading a = {.t = 1, .total_j = 10, .n = 2, .joules = {4, 6}};
    energy_reading b = {.t = 3, .total_j = 50, .n = 2, .joules = {14, 36}};
    energy_figures f;
    energy_figures_between(&a, &b, 100, 5.0, 475, &f);
    CHECK_NEAR(f.joules, 40, 1e-12, 0);
    CHECK_NEAR(f.watts, 20, 1e-12, 0);
    CHECK_NEAR(f.joules_per_image, 0.4, 1e-12, 0);
    CHECK_NEAR(f.edp, 80, 1e-12, 0);
    CHECK_NEAR(f.app_joules, 30, 1e-12, 0);
    CHECK_NEAR(f.gco2e, 40 / 3.6e6 * 475, 1e-15, 0);
    CHECK(f.device_j[0] == 10 && f.device_j[1] == 30 && !f.baseline_too_high);
    /* a baseline measured under load, above the run's 20 W: no negative joules, said instead */
    energy_figures_between(&a, &b, 100, 23.9, 475, &f);
    CHECK(f.app_joules == 0 && f.baseline_too_high);
}

/* A meter on the sensors set up, its sampler running at hz. */
static energy_meter *sampler_started(double hz)
{
    energy_meter *m = energy_meter_open(&(energy_options){.rate_hz = hz});
    char err[256];
    CHECKF(energy_meter_start(m, err, sizeof err) == 0, "%s", err);
    return m;
}

/* The sampler samples at its rate, never faster (a catch-up burst), and close does not wait out a
 * period. Nothing here depends on the machine's speed or load: the samples are waited for, a
 * loaded machine can only take fewer of them, and the period closed early is a minute. What the
 * sampler costs is a figure `frugal energy` and summary.json report, not a test. */
TEST(energy_sampler_thread_samples_and_stops)
{
    intel_two_sockets(1);
    double t0 = clock_now_s();
    energy_meter *m = sampler_started(50);
    long samples;   /* less the one taken when it opened */
    while ((samples = energy_meter_samples(m) - 1) < 10 && clock_now_s() - t0 < 60)
        nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
    double elapsed = clock_now_s() - t0, share = energy_meter_sampler_share(m);
    energy_meter_close(m);
    CHECKF(samples >= 10, "%ld samples in %.1f s at 50 Hz", samples, elapsed);
    CHECKF(samples <= 50 * elapsed + 1, "%ld samples in %.3f s at 50 Hz", samples, elapsed);
    CHECKF(share > 0 && share < 1, "sampler's share of a core %.4f", share);

    m = sampler_started(1.0 / 60);
    nanosleep(&(struct timespec){0, 200 * 1000000L}, NULL);   /* into its wait, very likely */
    t0 = clock_now_s();
    energy_meter_close(m);
    double waited = clock_now_s() - t0;
    CHECKF(waited < 30, "close waited %.1f s of a 60 s period", waited);
}

/* What follows a run batch by batch reads the sampler's latest figures and touches no sensor
 * (an NVML sample took 2 ms in a VM, and a batch of DAHL's takes 50 us on a CPU): however many
 * readings, no more samples than the sampler's own. Each reading is the latest sample's, which
 * a fresh read moves on. Without a sampler, the latest reading samples. Nothing here depends on
 * the machine's speed: the bound is the sampler's rate over the time the loop took. */
TEST(energy_latest_reading_touches_no_sensor_while_the_sampler_runs)
{
    intel_two_sockets(1);
    double t0 = clock_now_s();
    energy_meter *m = sampler_started(50);
    long before = energy_meter_samples(m);
    energy_reading prev = {0}, r;
    int ordered = 1;
    for (int i = 0; i < 20000; i++) {
        energy_meter_latest(m, &r);
        ordered &= r.t >= prev.t && r.total_j >= prev.total_j;
        prev = r;
    }
    long samples = energy_meter_samples(m) - before;
    double elapsed = clock_now_s() - t0;
    CHECKF(samples <= 50 * elapsed + 1, "%ld samples for 20000 readings in %.3f s at 50 Hz",
           samples, elapsed);
    CHECK(ordered && r.n == energy_meter_sensors(m, (sensor[SENSOR_MAX]){0}, SENSOR_MAX));
    energy_reading fresh;
    energy_meter_read(m, &fresh);
    energy_meter_latest(m, &r);
    CHECKF(r.t >= fresh.t && r.total_j >= fresh.total_j, "latest %.6f s after a read at %.6f s",
           r.t, fresh.t);
    energy_meter_close(m);

    m = energy_meter_open(&(energy_options){.rate_hz = 50});   /* no sampler started */
    before = energy_meter_samples(m);
    energy_meter_latest(m, &r);
    energy_meter_latest(m, &r);
    CHECK(energy_meter_samples(m) == before + 2);
    energy_meter_close(m);
}

/* NVIDIA GPUs through NVML (a fake libnvidia-ml.so): one with an energy counter, one with only
 * a power gauge, one with neither (unreadable, with NVML's reason); both readable ones are in the
 * total beside the package, and the counter is read in millijoules. */
TEST(energy_nvml_gpus_by_counter_or_power_gauge)
{
    fake_root();
    rapl_zone("intel-rapl:0", "package-0", 1000000, INTEL_MAX);
    char lib[600], dir[600];
    const char *variant = getenv("FRUGAL_TEST_VARIANT");
    snprintf(lib, sizeof lib, "build/%s/libfake_nvml.so", variant ? variant : "release");
    snprintf(dir, sizeof dir, "%s/nvml", root);
    put("nvml/count", "3\n");
    put("nvml/energy0", "1000\n");       /* mJ */
    put("nvml/power1", "40000\n");       /* mW */
    setenv("FRUGAL_NVML_LIBRARY", lib, 1);
    setenv("FAKE_NVML_DIR", dir, 1);
    env_switches_read();
    energy_meter *m = energy_meter_open(NULL);
    sensor s[SENSOR_MAX];
    int n = energy_meter_sensors(m, s, SENSOR_MAX);
    int a = find(s, n, "nvidia0 Fake GPU 0"), b = find(s, n, "nvidia1 Fake GPU 1");
    int c = find(s, n, "nvidia2 Fake GPU 2");
    CHECKF(n == 4 && a >= 0 && b >= 0 && c >= 0, "%d sensors", n);
    if (a < 0 || b < 0 || c < 0) {
        energy_meter_close(m);
        return;
    }
    CHECK(s[a].kind == SENSOR_COUNTER && s[a].in_total && s[a].scope == SCOPE_GPU);
    CHECK(s[b].kind == SENSOR_GAUGE && s[b].in_total && !strcmp(s[b].source, "nvml"));
    CHECKF(s[c].status == SENSOR_UNREADABLE && strstr(s[c].why, "Not Supported"), "%s", s[c].why);
    put("nvml/energy0", "31000\n");      /* 30 J later */
    put("nvml/power1", "60000\n");
    rapl_set("intel-rapl:0", 1000000 + 5000000);
    energy_meter_sample_at(m, 1.0);
    energy_meter_sensors(m, s, SENSOR_MAX);
    CHECK_NEAR(s[a].joules, 30.0, 1e-9, 0);
    CHECK_NEAR(s[b].joules, 0.5 * (40 + 60) * 1.0, 1e-9, 0);
    CHECKF(strstr(energy_meter_source(m), "nvml nvidia0") && strstr(energy_meter_source(m), "nvml nvidia1"),
           "%s", energy_meter_source(m));
    energy_meter_close(m);
    unsetenv("FAKE_NVML_DIR");   /* the library stays loaded: from now on it has no GPU */
}

/* Lets a held NVML reading go after 30 s at most (a latest reading that waited for it). */
static _Atomic int hold_done, hold_forced;

static void *release_hold(void *path)
{
    for (int i = 0; i < 3000 && !atomic_load(&hold_done); i++)
        nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
    if (!atomic_load(&hold_done)) {
        atomic_store(&hold_forced, 1);
        unlink(path);
    }
    return NULL;
}

/* A sample in progress holds the meter's lock through its sensors (an NVML reading took 2 ms in
 * a VM): the latest reading does not wait for it. The fake NVML holds the sampler's reading
 * until the test lets it go; the latest reading must come back while it is still held. */
TEST(energy_latest_reading_never_waits_for_a_sample_in_progress)
{
    fake_root();
    rapl_zone("intel-rapl:0", "package-0", 1000000, INTEL_MAX);
    char lib[600], dir[600], hold[700], held[700], err[256];
    const char *variant = getenv("FRUGAL_TEST_VARIANT");
    snprintf(lib, sizeof lib, "build/%s/libfake_nvml.so", variant ? variant : "release");
    snprintf(dir, sizeof dir, "%s/nvml", root);
    snprintf(hold, sizeof hold, "%s/hold", dir);
    snprintf(held, sizeof held, "%s/held", dir);
    put("nvml/count", "1\n");
    put("nvml/energy0", "1000\n");
    setenv("FRUGAL_NVML_LIBRARY", lib, 1);
    setenv("FAKE_NVML_DIR", dir, 1);
    env_switches_read();
    energy_meter *m = energy_meter_open(&(energy_options){.rate_hz = 50});
    put("nvml/hold", "\n");
    CHECK(energy_meter_start(m, err, sizeof err) == 0);
    double t0 = clock_now_s();
    while (access(held, F_OK) && clock_now_s() - t0 < 60)
        nanosleep(&(struct timespec){0, 1000000L}, NULL);
    CHECKF(!access(held, F_OK), "the sampler never reached NVML in %.0f s", clock_now_s() - t0);
    atomic_store(&hold_done, 0);
    atomic_store(&hold_forced, 0);
    pthread_t releaser;
    CHECK(pthread_create(&releaser, NULL, release_hold, hold) == 0);
    energy_reading r;
    energy_meter_latest(m, &r);
    int while_held = !atomic_load(&hold_forced) && !access(hold, F_OK);
    atomic_store(&hold_done, 1);
    pthread_join(releaser, NULL);
    unlink(hold);
    CHECKF(while_held, "the latest reading waited for the sample in progress");
    CHECK(r.n == 2 && r.total_j >= 0);
    energy_meter_close(m);
    unsetenv("FAKE_NVML_DIR");
}

/* perf's power PMU where no RAPL file is readable. The fake PMU's type is perf's software type
 * and its energy-pkg event cpu-clock, scaled so that a nanosecond counts as a nanojoule: a
 * steady 1 W, which exercises the real perf_event_open and read path. Where perf is not allowed
 * (or this kernel refuses), the sensor is unreadable with the reason, and the model takes over. */
TEST(energy_perf_power_pmu_when_rapl_is_unreadable)
{
    fake_root();
    put("sys/bus/event_source/devices/power/type", "1\n");   /* PERF_TYPE_SOFTWARE */
    put("sys/bus/event_source/devices/power/cpumask", "0\n");
    put("sys/bus/event_source/devices/power/events/energy-pkg", "event=0x00\n");   /* cpu-clock */
    put("sys/bus/event_source/devices/power/events/energy-pkg.scale", "1e-9\n");
    proc_stat(0, 0);
    energy_meter *m = energy_meter_open(NULL);
    sensor s[SENSOR_MAX];
    int n = energy_meter_sensors(m, s, SENSOR_MAX), pkg = find(s, n, "package (cpu 0)");
    CHECKF(pkg >= 0 && !strcmp(s[pkg].source, "perf") && s[pkg].scope == SCOPE_CPU, "%d sensors", n);
    if (pkg >= 0 && s[pkg].status == SENSOR_OK) {
        CHECKF(strstr(energy_meter_source(m), "measured: perf package (cpu 0)"), "%s",
               energy_meter_source(m));
        energy_reading a, b;
        energy_meter_read(m, &a);
        usleep(200 * 1000);
        energy_meter_read(m, &b);
        CHECK_NEAR(b.total_j - a.total_j, b.t - a.t, 0.05, 0);   /* 1 W */
    } else if (pkg >= 0) {
        CHECKF(strstr(s[pkg].why, "perf_event_open(power/energy-pkg/) on cpu 0: "), "%s", s[pkg].why);
        CHECKF(strstr(energy_meter_source(m), "estimated: model"), "%s", energy_meter_source(m));
    }
    energy_meter_close(m);
}

/* The same through perf: an energy-psys event that never counts (the fake PMU's is perf's
 * dummy software event) is left out, and the package event makes the total. */
TEST(energy_perf_psys_that_never_counts_is_left_out)
{
    fake_root();
    put("sys/bus/event_source/devices/power/type", "1\n");   /* PERF_TYPE_SOFTWARE */
    put("sys/bus/event_source/devices/power/cpumask", "0\n");
    put("sys/bus/event_source/devices/power/events/energy-pkg", "event=0x00\n");    /* cpu-clock */
    put("sys/bus/event_source/devices/power/events/energy-psys", "event=0x09\n");   /* dummy */
    put("sys/bus/event_source/devices/power/events/energy-pkg.scale", "1e-9\n");
    put("sys/bus/event_source/devices/power/events/energy-psys.scale", "1e-9\n");
    proc_stat(0, 0);
    energy_meter *m = energy_meter_open(NULL);
    sensor s[SENSOR_MAX];
    int n = energy_meter_sensors(m, s, SENSOR_MAX), pkg = find(s, n, "package (cpu 0)");
    int psys = find(s, n, "psys (cpu 0)");
    CHECKF(pkg >= 0 && psys >= 0, "%d sensors", n);
    if (pkg >= 0 && psys >= 0 && s[pkg].status == SENSOR_OK) {
        CHECKF(s[psys].status == SENSOR_UNREADABLE && strstr(s[psys].why, "did not move"), "%s",
               s[psys].why);
        CHECKF(!strcmp(energy_meter_source(m), "measured: perf package (cpu 0)"), "%s",
               energy_meter_source(m));
    } else if (pkg >= 0) {   /* perf not allowed here: nothing to tell apart */
        CHECKF(strstr(s[pkg].why, "perf_event_open(power/energy-pkg/) on cpu 0: "), "%s", s[pkg].why);
    }
    energy_meter_close(m);
}
