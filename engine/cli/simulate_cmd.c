#include "engine/cli/simulate_cmd.h"

#include "engine/job/run_folder.h"
#include "engine/sim/profile.h"
#include "engine/sim/sim.h"
#include "engine/sim/sim_report.h"
#include "engine/sim/sim_search.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIMULATE_MAX_ARGS 64

static int usage(void)
{
    fprintf(stderr, "usage: frugal simulate SCENARIO.cfg [--set scenario.KEY=VALUE]... [-o DIR] [--search]\n"
                    "       frugal simulate --calibrate RUN_DIR... -o PROFILE\n");
    return 2;
}

static void write_profile(FILE *f, const void *arg)
{
    const void *const *a = arg;
    profile_write(f, a[0], a[1]);
}

static int calibrate(const char *const *dirs, int n, const char *out)
{
    char err[1500];
    sim_profile p;
    if (!out || !n)
        return usage();
    if (profile_calibrate(&p, dirs, n, err, sizeof err)) {
        fprintf(stderr, "frugal simulate --calibrate: %s\n", err);
        return 1;
    }
    char from[600] = "";
    for (int i = 0; i < n; i++) {
        size_t len = strlen(from);
        snprintf(from + len, sizeof from - len, "%s%s", i ? ", " : "", dirs[i]);
    }
    const void *arg[2] = {&p, from};
    if (run_folder_write_atomic_with(out, write_profile, arg, err, sizeof err)) {
        fprintf(stderr, "frugal simulate --calibrate: %s\n", err);
        return 1;
    }
    profile_write(stdout, &p, from);
    return 0;
}

static int simulate(const char *path, const char *const *sets, const char *out, int search)
{
    char err[1500];
    sim_scenario *s = malloc(sizeof *s);
    if (!s || scenario_load(s, path, sets, err, sizeof err)) {
        fprintf(stderr, "frugal simulate: %s\n", s ? err : "out of memory");
        free(s);
        return 1;
    }
    int rc = 0;
    sim_result r;
    if (search) {
        rc = sim_search(s, stdout, err, sizeof err);
    } else if (!(rc = sim_run(s, &r, err, sizeof err))) {
        sim_report_print(stdout, s, &r);
        const char *dir = out ? out : s->output;
        rc = sim_report_write(dir, s, &r, err, sizeof err);
        if (!rc)
            printf("summary: %s/summary.json, report: %s/report.html\n", dir, dir);
        sim_result_free(&r);
    }
    if (rc)
        fprintf(stderr, "frugal simulate %s: %s\n", path, err);
    scenario_free(s);
    free(s);
    return rc ? 1 : 0;
}

int simulate_cmd_main(int argc, char **argv)
{
    const char *sets[SIMULATE_MAX_ARGS + 1] = {NULL}, *dirs[SIMULATE_MAX_ARGS], *out = NULL, *scenario = NULL;
    int nsets = 0, ndirs = 0, calibrating = 0, search = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--calibrate"))
            calibrating = 1;
        else if (!strcmp(argv[i], "--search"))
            search = 1;
        else if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--set") && i + 1 < argc && nsets < SIMULATE_MAX_ARGS)
            sets[nsets++] = argv[++i];
        else if (argv[i][0] == '-')
            return usage();
        else if (calibrating && ndirs < SIMULATE_MAX_ARGS)
            dirs[ndirs++] = argv[i];
        else if (!calibrating && !scenario)
            scenario = argv[i];
        else
            return usage();
    }
    if (calibrating)
        return nsets || search ? usage() : calibrate(dirs, ndirs, out);
    return scenario ? simulate(scenario, sets, out, search) : usage();
}
