/* frugal energy: every energy sensor found (readable or not, and why), where the machine's total
 * comes from, every limit frugal could set (and why not), and some seconds of live power;
 * --restore puts back the limits a frugal process that died left changed. */
#include "engine/cli/energy_cmd.h"

#include "energy/meter.h"
#include "energy/power_limit.h"
#include "energy/power_model.h"
#include "engine/placement/operating_point.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The power and clock limits: each one's value, range, and whether it can be set here. */
static void print_limits(void)
{
    power_limit l[POWER_LIMIT_MAX];
    int n = power_limit_probe(l, POWER_LIMIT_MAX);
    printf("%d limit%s ([placement] operating_point)\n", n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++) {
        const char *unit = power_limit_unit(l[i].kind);
        printf("  %-28s %-8s %7.6g %-3s (%g to %g %s)  %s%s%s\n", l[i].name,
               power_limit_source(l[i].kind), l[i].now, unit, l[i].min, l[i].max, unit,
               l[i].settable ? "can be set" : "cannot be set", l[i].governor[0] ? ", governor " : "",
               l[i].governor);
        if (l[i].why[0])
            printf("      %s\n", l[i].why);
        printf("      %s\n", l[i].path);
    }
}

/* Every sensor the meter found: where it reads, whether it is counted in the total, and why not. */
static void print_sensors(const sensor *s, int n)
{
    static const char *const kinds[] = {"counter", "gauge", "model"};
    printf("%d sensor%s\n", n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++) {
        printf("  %-28s %-7s %-8s %-7s %-10s %s\n", s[i].name, s[i].source,
               sensor_scope_name(s[i].scope), kinds[s[i].kind], sensor_status_name(s[i].status),
               s[i].in_total                ? "counted in the total"
               : s[i].status == SENSOR_OK ? "not added: inside the total"
                                          : "");
        if (s[i].why[0])
            printf("      %s\n", s[i].why);
        printf("      %s\n", s[i].path);
    }
}

/* seconds of live power, a line a second (the total and each readable sensor), then the energy
 * and the sampler's cost. */
static int print_live_power(energy_meter *m, const sensor *s, int n, double seconds, double rate)
{
    char err[256];
    if (energy_meter_start(m, err, sizeof err)) {
        fprintf(stderr, "frugal: %s\n", err);
        return 1;
    }
    energy_reading first, r;
    energy_meter_read(m, &first);
    for (int k = 1; k <= (int)ceil(seconds); k++) {
        double step = k <= seconds ? 1.0 : seconds - (k - 1);
        nanosleep(&(struct timespec){(time_t)step, (long)((step - (time_t)step) * 1e9)}, NULL);
        energy_meter_read(m, &r);
        printf("%6.1f s  %7.1f W total", r.t - first.t, r.total_w);
        for (int i = 0; i < n; i++)
            if (s[i].status == SENSOR_OK)   /* as found when the meter opened */
                printf("  %s %.1f W", s[i].name, r.watts[i]);
        printf("\n");
        fflush(stdout);
    }
    printf("%.1f J in %.1f s (%.1f W average); sampler: %ld samples at %g Hz, %.3f%% of one core\n",
           r.total_j - first.total_j, r.t - first.t, (r.total_j - first.total_j) / (r.t - first.t),
           energy_meter_samples(m), rate, 100 * energy_meter_sampler_share(m));
    return 0;
}

/* The command line into seconds, rate and restore_only: -1 to go on, else the exit status. */
static int energy_arguments(int argc, char **argv, double *seconds, double *rate,
                            int *restore_only)
{
    for (int i = 2; i < argc; i++) {
        char *end = NULL;
        if (!strcmp(argv[i], "--help")) {
            printf("usage: frugal energy [--seconds N] [--rate HZ] | --restore\n"
                   "  every energy sensor found (RAPL, hwmon, batteries; readable or not, and why),\n"
                   "  which of them make up the machine's total, every power or clock limit and\n"
                   "  whether it can be set here, then N seconds of live power sampled at HZ\n"
                   "  (default 10). --restore only puts back the limits that a frugal process\n"
                   "  which died left changed (any frugal train, join or energy does it first).\n"
                   "  FRUGAL_SYSFS_ROOT and FRUGAL_PROCFS_ROOT move /sys and /proc (containers,\n"
                   "  tests).\n");
            return 0;
        }
        if (!strcmp(argv[i], "--restore")) {
            *restore_only = 1;
            continue;
        }
        const char *opt = argv[i];
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            *seconds = strtod(argv[++i], &end);
        else if (!strcmp(argv[i], "--rate") && i + 1 < argc)
            *rate = strtod(argv[++i], &end);
        if (!end || *end || !(*seconds >= 0 && *seconds <= 86400) || !(*rate >= 1 && *rate <= 1000)) {
            fprintf(stderr, "frugal energy: bad or unexpected argument '%s%s%s'\n"
                            "usage: frugal energy [--seconds N (0..86400)] [--rate HZ (1..1000)] | "
                            "--restore\n",
                    opt, end ? " " : "", end ? argv[i] : "");
            return 2;
        }
    }
    return -1;
}

int energy_cmd_main(int argc, char **argv)
{
    double seconds = 0, rate = 10;
    int restore_only = 0;
    int rc = energy_arguments(argc, argv, &seconds, &rate, &restore_only);
    if (rc >= 0)
        return rc;
    if (operating_point_recover(stdout))
        return 1;
    if (restore_only) {
        printf("every limit a frugal process changed is as it was before\n");
        return 0;
    }
    energy_meter *m = energy_meter_open(&(energy_options){rate, MODEL_IDLE_W, MODEL_CORE_W, {0}});
    if (!m)
        return 1;
    sensor s[SENSOR_MAX];
    int n = energy_meter_sensors(m, s, SENSOR_MAX);
    print_sensors(s, n);
    printf("total: %s\n", energy_meter_source(m));
    print_limits();
    rc = seconds > 0 ? print_live_power(m, s, n, seconds, rate) : 0;
    energy_meter_close(m);
    return rc;
}
