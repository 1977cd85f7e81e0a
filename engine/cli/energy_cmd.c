/* frugal energy: every energy sensor found (readable or not, and why), where the machine's total
 * comes from, and some seconds of live power. */
#include "engine/cli/energy_cmd.h"

#include "energy/meter.h"
#include "energy/power_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int energy_cmd_main(int argc, char **argv)
{
    double seconds = 0, rate = 10;
    for (int i = 2; i < argc; i++) {
        char *end = NULL;
        if (!strcmp(argv[i], "--help")) {
            printf("usage: frugal energy [--seconds N] [--rate HZ]\n"
                   "  every energy sensor found (RAPL, hwmon, batteries; readable or not, and why),\n"
                   "  which of them make up the machine's total, then N seconds of live power\n"
                   "  sampled at HZ (default 10). FRUGAL_SYSFS_ROOT and FRUGAL_PROCFS_ROOT move\n"
                   "  /sys and /proc (containers, tests).\n");
            return 0;
        }
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = strtod(argv[++i], &end);
        else if (!strcmp(argv[i], "--rate") && i + 1 < argc)
            rate = strtod(argv[++i], &end);
        if (!end || *end || !(seconds >= 0 && seconds <= 86400) || !(rate >= 1 && rate <= 1000)) {
            fprintf(stderr, "frugal energy: bad or unexpected argument '%s'\n"
                            "usage: frugal energy [--seconds N (0..86400)] [--rate HZ (1..1000)]\n",
                    argv[i]);
            return 2;
        }
    }
    energy_meter *m = energy_meter_open(&(energy_options){rate, MODEL_IDLE_W, MODEL_CORE_W, {0}});
    if (!m)
        return 1;
    sensor s[SENSOR_MAX];
    int n = energy_meter_sensors(m, s, SENSOR_MAX);
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
    printf("total: %s\n", energy_meter_source(m));
    char err[256];
    int rc = 0;
    if (seconds > 0 && energy_meter_start(m, err, sizeof err)) {
        fprintf(stderr, "frugal: %s\n", err);
        rc = 1;
    } else if (seconds > 0) {
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
    }
    energy_meter_close(m);
    return rc;
}
