/* Operating points: the limits found and set on fake sysfs trees and the fake NVML, refused
 * without permission, always put back (at the end, on signals, after a kill -9 at the next
 * start), the search against a brute force on scripted curves, and windows that carry across
 * short epochs. */
#include "common/env_switches.h"
#include "fake_rapl.h"
#include "frugal_cli.h"
#include "test.h"

#include "energy/limit_state.h"
#include "energy/power_limit.h"
#include "engine/job/op_setting.h"
#include "engine/placement/op_search.h"

#include <errno.h>
#include <glob.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the setting ---- */

TEST(op_setting_items_resolve_per_part_and_typos_are_named)
{
    op_setting s;
    char why[200];
    double v = 0;
    CHECK(op_setting_parse("", &s, why, sizeof why) == 0 && s.n == 0 && !op_setting_any(&s));
    CHECK(op_setting_parse("off, cpu=off", &s, why, sizeof why) == 0 && s.n == 2 && !op_setting_any(&s));
    CHECK(op_setting_parse("auto, cpu=off, nvidia1=150", &s, why, sizeof why) == 0 && s.n == 3);
    CHECK(op_setting_for(&s, "nvidia0", 1, 0, &v) == OP_AUTO);
    CHECK(op_setting_for(&s, "nvidia1", 1, 0, &v) == OP_VALUE && v == 150);
    CHECK(op_setting_for(&s, "package-0", 0, 0, &v) == OP_OFF);
    CHECK(op_setting_parse("200", &s, why, sizeof why) == 0);
    CHECK(op_setting_for(&s, "package-0", 0, 0, &v) == OP_VALUE && v == 200);
    CHECK(op_setting_for(&s, "cpufreq", 0, 1, &v) == OP_OFF);   /* watts are never a clock */
    CHECK(op_setting_parse("gpu=auto, cpufreq=2000", &s, why, sizeof why) == 0);
    CHECK(op_setting_for(&s, "cpufreq", 0, 1, &v) == OP_VALUE && v == 2000);
    CHECK(op_setting_for(&s, "package-0", 0, 0, &v) == OP_OFF);
    CHECKF(op_setting_parse("auot", &s, why, sizeof why) && strstr(why, "'auot'"), "%s", why);
    CHECKF(op_setting_parse("=auto", &s, why, sizeof why) && strstr(why, "part's name"), "%s", why);
    CHECK(op_setting_parse("-5", &s, why, sizeof why) != 0);
    char out[4096];
    int rc = FRUGAL(out, "train", "examples/dahl-fashion-mnist.cfg", "--set",
                    "placement.operating_point=gpu=fast");
    CHECKF(rc != 0 && strstr(out, "operating_point = 'gpu=fast'") && strstr(out, "'fast'"), "%s", out);
}

/* ---- the search ---- */

typedef struct curve {
    double knee;      /* a memory-bound part: no slower above its knee */
    double idle_w, w_per_cap;
} curve;

/* Seconds per sample and watts at cap c. */
static void curve_at(const curve *k, double c, double *sps, double *watts)
{
    *sps = k->knee > 0 ? (c >= k->knee ? 1.0 : k->knee / c) : 300.0 / c;
    *watts = k->idle_w + k->w_per_cap * c;
}

/* The value a brute force over the fine ladder keeps. */
static double brute_force(const curve *k, const policy_limits *l, double top, double floor)
{
    double values[OP_SEARCH_RUNGS];
    option_figures f[OP_SEARCH_RUNGS];
    int n = op_search_fine_ladder(top, floor, values);
    for (int i = 0; i < n; i++) {
        f[i] = (option_figures){0, 0, 1, 0};
        curve_at(k, values[i], &f[i].s_per_sample, &f[i].watts);
    }
    return values[policy_choose(l, f, n)];
}

/* Runs the search on the curve to its end; returns the value kept, the windows it took. */
static double search(const curve *k, const policy_limits *l, double top, double floor, int *windows)
{
    op_search s = {0};
    op_search_start(&s, l, top, floor);
    char why[200];
    for (*windows = 0; s.searching && *windows < 100; ++*windows) {
        double sps, watts;
        curve_at(k, op_search_value(&s), &sps, &watts);
        op_search_observe(&s, 100 * sps, 100 * sps * watts, 100, why, sizeof why);
    }
    return op_search_value(&s);
}

TEST(op_search_keeps_what_a_brute_force_keeps)
{
    const curve curves[] = {{180, 60, 0.8}, {0, 40, 0.9}, {240, 20, 1.0}, {120, 100, 0.2}};
    const placement_policy policies[] = {POLICY_ENERGY, POLICY_EDP, POLICY_TIME};
    const double slowdowns[] = {-1, 0.1, 0.3};
    const double floors[] = {100, 150, 290};
    int cases = 0;
    for (size_t c = 0; c < sizeof curves / sizeof curves[0]; c++)
        for (size_t p = 0; p < 3; p++)
            for (size_t m = 0; m < 3; m++)
                for (size_t f = 0; f < 3; f++) {
                    policy_limits l = {policies[p], 0, slowdowns[m], 400};
                    int windows;
                    double kept = search(&curves[c], &l, 300, floors[f], &windows);
                    double best = brute_force(&curves[c], &l, 300, floors[f]);
                    CHECKF(fabs(kept - best) < 1e-6 && windows <= 7 * OP_SEARCH_WINDOWS,
                           "curve %zu, policy %s, slowdown %g, floor %g: kept %g in %d windows, "
                           "a brute force %g", c, policy_name(policies[p]), slowdowns[m],
                           floors[f], kept, windows, best);
                    cases++;
                }
    CHECK(cases == 108);
    /* a memory-bound part under the energy policy: a cap well below its own value */
    policy_limits energy = {POLICY_ENERGY, 0, -1, 400};
    int windows;
    CHECK(search(&curves[0], &energy, 300, 100, &windows) < 200);
}

TEST(op_search_searches_again_when_the_work_drifts)
{
    const curve k = {180, 60, 0.8};
    policy_limits l = {POLICY_ENERGY, 0, -1, 400};
    op_search s = {0};
    op_search_start(&s, &l, 300, 100);
    char why[200];
    double sps, watts;
    while (s.searching) {
        curve_at(&k, op_search_value(&s), &sps, &watts);
        op_search_observe(&s, 100 * sps, 100 * sps * watts, 100, why, sizeof why);
    }
    double kept = op_search_value(&s);
    for (int i = 0; i < 2; i++) {   /* the same work: kept */
        curve_at(&k, kept, &sps, &watts);
        CHECK(op_search_observe(&s, 100 * sps, 100 * sps * watts, 100, why, sizeof why) == 0);
    }
    for (int i = 0; i < 3; i++) {   /* twice as slow: another batch, another model */
        curve_at(&k, kept, &sps, &watts);
        op_search_observe(&s, 200 * sps, 200 * sps * watts, 100, why, sizeof why);
    }
    CHECKF(s.searching && s.searches == 2 && op_search_value(&s) == 300 &&
           strstr(why, "searching again"), "searching %d, searches %d, at %g: %s", s.searching,
           s.searches, op_search_value(&s), why);
}

/* ---- the limits ---- */

static char root[600];

static void put(const char *rel, const char *text)
{
    char path[900];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    test_write_text(path, "%s", text);
}

static const char *at(const char *rel)
{
    static char path[4][900];
    static int turn;
    char *p = path[turn++ % 4];
    snprintf(p, 900, "%s/%s", root, rel);
    return p;
}

static long long number_in(const char *rel)
{
    char text[64];
    return atoll(test_read_text(at(rel), text, sizeof text));
}

#define PACKAGE "sys/class/powercap/intel-rapl:0/"
#define POLICY0 "sys/devices/system/cpu/cpufreq/policy0/"

/* A machine with a package (65 W of 95), its core zone and mmio copy, two clock policies, an
 * AMD GPU and two NVIDIA GPUs (the second refusing to be set), pointed at by the environment. */
static void fake_machine(const char *name)
{
    snprintf(root, sizeof root, "%s/%s", test_tmpdir(), name);
    fake_rapl_tree(root);
    put(PACKAGE "constraint_0_power_limit_uw", "65000000\n");
    put(PACKAGE "constraint_0_max_power_uw", "95000000\n");
    put("sys/class/powercap/intel-rapl:0:0/name", "core\n");   /* a part: no limit of its own */
    put("sys/class/powercap/intel-rapl:0:0/energy_uj", "0\n");
    put("sys/class/powercap/intel-rapl:0:0/constraint_0_power_limit_uw", "0\n");
    put("sys/class/powercap/intel-rapl-mmio:0/name", "package-0\n");
    put("sys/class/powercap/intel-rapl-mmio:0/constraint_0_power_limit_uw", "65000000\n");
    for (int p = 0; p < 2; p++) {
        char dir[80];
        snprintf(dir, sizeof dir, "sys/devices/system/cpu/cpufreq/policy%d/", p);
        const char *files[][2] = {{"scaling_max_freq", "3000000\n"}, {"cpuinfo_min_freq", "800000\n"},
                                  {"cpuinfo_max_freq", "3000000\n"}, {"scaling_governor", "schedutil\n"}};
        for (int i = 0; i < 4; i++) {
            char rel[160];
            snprintf(rel, sizeof rel, "%s%s", dir, files[i][0]);
            put(rel, files[i][1]);
        }
    }
    put("sys/class/hwmon/hwmon1/name", "amdgpu\n");
    put("sys/class/hwmon/hwmon1/power1_cap", "180000000\n");
    put("sys/class/hwmon/hwmon1/power1_cap_min", "60000000\n");
    put("sys/class/hwmon/hwmon1/power1_cap_max", "220000000\n");
    put("sys/class/hwmon/hwmon2/name", "nct6775\n");
    put("nvml/count", "2\n");
    for (int g = 0; g < 2; g++) {
        const char *files[][2] = {{"power", "200000\n"}, {"limit", "300000\n"}, {"limit_min", "100000\n"},
                                  {"limit_max", "400000\n"}, {"limit_default", "300000\n"}};
        for (int i = 0; i < 5; i++) {
            char rel[64];
            snprintf(rel, sizeof rel, "nvml/%s%d", files[i][0], g);
            put(rel, files[i][1]);
        }
    }
    put("nvml/locked1", "\n");
    char lib[200];
    const char *variant = getenv("FRUGAL_TEST_VARIANT");
    snprintf(lib, sizeof lib, "build/%s/libfake_nvml.so", variant ? variant : "release");
    setenv("FRUGAL_SYSFS_ROOT", root, 1);
    setenv("FRUGAL_NVML_LIBRARY", lib, 1);
    setenv("FAKE_NVML_DIR", at("nvml"), 1);
    setenv("FRUGAL_PERFMODEL_DIR", at("models"), 1);
    env_switches_read();
}

static void leave_machine(void)
{
    unsetenv("FRUGAL_SYSFS_ROOT");
    unsetenv("FAKE_NVML_DIR");   /* the library stays loaded: from now on it has no GPU */
    unsetenv("FRUGAL_PERFMODEL_DIR");
    env_switches_read();
}

static int find(const power_limit *l, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(l[i].name, name))
            return i;
    return -1;
}

TEST(op_limits_found_set_within_range_and_refused_without_permission)
{
    fake_machine("limits");
    power_limit l[POWER_LIMIT_MAX];
    int n = power_limit_probe(l, POWER_LIMIT_MAX);
    int gpu = find(l, n, "nvidia0 Fake GPU 0"), locked = find(l, n, "nvidia1 Fake GPU 1");
    int amd = find(l, n, "amdgpu hwmon1"), pkg = find(l, n, "package-0");
    int clock = find(l, n, "cpufreq policy0");
    CHECKF(n == 6 && gpu >= 0 && locked >= 0 && amd >= 0 && pkg >= 0 && clock >= 0,
           "%d limits", n);
    if (n != 6 || gpu < 0 || locked < 0 || amd < 0 || pkg < 0 || clock < 0)
        return leave_machine();
    CHECK(l[gpu].settable && l[gpu].gpu && l[gpu].now == 300 && l[gpu].min == 100 && l[gpu].max == 400);
    CHECKF(!l[locked].settable && strstr(l[locked].why, "Insufficient Permissions") &&
           strstr(l[locked].why, "root"), "%s", l[locked].why);
    CHECK(l[amd].settable && l[amd].gpu && l[amd].now == 180 && l[amd].min == 60 && l[amd].max == 220);
    CHECK(l[pkg].settable && !l[pkg].gpu && l[pkg].now == 65 && l[pkg].max == 95);
    CHECK(l[clock].settable && l[clock].now == 3000 && l[clock].min == 800 &&
          !strcmp(l[clock].governor, "schedutil"));
    char why[1000];
    CHECK(power_limit_set(&l[pkg], 50, why, sizeof why) == 0 &&
          number_in(PACKAGE "constraint_0_power_limit_uw") == 50000000);
    CHECK(power_limit_set(&l[clock], 2000, why, sizeof why) == 0 &&
          number_in(POLICY0 "scaling_max_freq") == 2000000);
    CHECK(power_limit_set(&l[gpu], 250, why, sizeof why) == 0 && number_in("nvml/limit0") == 250000);
    double now = 0;
    CHECK(power_limit_read(&l[gpu], &now) == 0 && now == 250);
    CHECKF(power_limit_set(&l[pkg], 120, why, sizeof why) == ERANGE && strstr(why, "package-0") &&
           strstr(why, "9.5 to 95 W"), "%s", why);
    CHECKF(power_limit_set(&l[amd], 30, why, sizeof why) == ERANGE && strstr(why, "60 to 220"), "%s", why);
    CHECK(number_in("sys/class/hwmon/hwmon1/power1_cap") == 180000000);
    CHECKF(power_limit_set(&l[locked], 250, why, sizeof why) && strstr(why, "nvidia1") &&
           number_in("nvml/limit1") == 300000, "%s", why);
    /* without permission: not settable, and why (as root, as nobody; else the files read-only) */
    chmod(test_tmpdir(), 0755);
    if (geteuid() != 0)
        chmod(at(PACKAGE "constraint_0_power_limit_uw"), 0444);
    pid_t pid = fork();
    if (pid == 0) {
        if (geteuid() == 0 && setresuid(65534, 65534, 65534))
            _exit(10);
        power_limit m[POWER_LIMIT_MAX];
        int k = find(m, power_limit_probe(m, POWER_LIMIT_MAX), "package-0");
        char err[1000];
        _exit(k < 0 ? 11 : m[k].settable ? 12 : !strstr(m[k].why, "Permission denied") ? 13
              : !strstr(m[k].why, "root") ? 14 : power_limit_set(&m[k], 40, err, sizeof err) != EPERM ? 15
              : !strstr(err, "package-0: cannot be set here") ? 16 : 0);
    }
    int status = -1;
    CHECKF(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "the unprivileged check ended with %d", WEXITSTATUS(status));
    leave_machine();
}

TEST(op_state_puts_back_at_the_end_and_after_its_owner_died)
{
    fake_machine("state");
    const char *file = test_tmp("limits.state"), *limit = at(PACKAGE "constraint_0_power_limit_uw");
    limit_state s;
    char why[1000];
    FILE *log = fopen("/dev/null", "w");
    CHECK(limit_state_claim(&s, file, log, why, sizeof why) == 0);
    CHECK(limit_state_save(&s, POWER_LIMIT_RAPL, limit, 65, why, sizeof why) == 0);
    CHECK(power_limit_write(POWER_LIMIT_RAPL, limit, 40, why, sizeof why) == 0);
    CHECK(limit_state_save(&s, POWER_LIMIT_RAPL, limit, 40, why, sizeof why) == 0);   /* kept: 65 */
    CHECK(limit_state_restore(&s, log) == 0);
    CHECK(number_in(PACKAGE "constraint_0_power_limit_uw") == 65000000 && access(file, F_OK) != 0);
    /* a process that changes the limit and dies without putting it back */
    pid_t pid = fork();
    if (pid == 0) {
        limit_state t;
        char err[1000];
        _exit(limit_state_claim(&t, file, log, err, sizeof err) ||
              limit_state_save(&t, POWER_LIMIT_NVML, "nvml:0", 300, err, sizeof err) ||
              power_limit_write(POWER_LIMIT_NVML, "nvml:0", 150, err, sizeof err) ||
              limit_state_save(&t, POWER_LIMIT_RAPL, limit, 65, err, sizeof err) ||
              power_limit_write(POWER_LIMIT_RAPL, limit, 30, err, sizeof err));
    }
    int status, owner = 0;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(number_in(PACKAGE "constraint_0_power_limit_uw") == 30000000 && number_in("nvml/limit0") == 150000);
    CHECK(limit_state_recover(file, &owner, log, why, sizeof why) == 0);
    CHECK(number_in(PACKAGE "constraint_0_power_limit_uw") == 65000000 && number_in("nvml/limit0") == 300000);
    CHECK(access(file, F_OK) != 0);
    /* a live owner: its limits are left alone, and a second claim is refused naming it */
    int ready[2];
    CHECK(pipe(ready) == 0);
    pid = fork();
    if (pid == 0) {
        limit_state t;
        char err[1000];
        int bad = limit_state_claim(&t, file, log, err, sizeof err);
        ssize_t w = write(ready[1], bad ? "n" : "y", 1);
        (void)w;
        pause();
        _exit(0);
    }
    char said = 0;
    CHECK(read(ready[0], &said, 1) == 1 && said == 'y');
    CHECK(limit_state_recover(file, &owner, log, why, sizeof why) == 1 && owner == pid);
    CHECKF(limit_state_claim(&s, file, log, why, sizeof why) == -1 && strstr(why, "another frugal"),
           "%s", why);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    CHECK(limit_state_claim(&s, file, log, why, sizeof why) == 0);   /* its owner is gone */
    CHECK(limit_state_restore(&s, log) == 0);
    close(ready[0]), close(ready[1]);
    fclose(log);
    /* a line that names anything but a limit's file is never written to */
    char text[1200];
    snprintf(text, sizeof text, "frugal operating points\nowner 42 7\n1 65 %s\n0 300 nvml:0\n"
             "1 65 /etc/passwd\n2 3000 %s/../../x/scaling_max_freq\n3 -4 nvml:1\n", limit, root);
    limit_saved saved[8];
    long pid_read;
    unsigned long long start;
    int skipped, n = limit_state_parse(text, &pid_read, &start, saved, 8, &skipped);
    CHECKF(n == 2 && skipped == 3 && pid_read == 42 && start == 7 && saved[0].value == 65 &&
           !strcmp(saved[0].path, limit) && !strcmp(saved[1].path, "nvml:0"), "%d, %d skipped", n, skipped);
    CHECK(power_limit_write(POWER_LIMIT_RAPL, "/etc/passwd", 1, why, sizeof why) == EINVAL &&
          strstr(why, "not a rapl limit's file"));
    leave_machine();
}

/* ---- frugal train ---- */

/* frugal train on DAHL's CNN in short epochs (2048 images of Fashion-MNIST, each task slowed
 * down 20 times: about 0.1 s an epoch here), on fake_machine's limits, with the environment that
 * points at them; more settings as "key=value" (NULL-ended). */
static const char *const *train_args(const char *name, int epochs, const char *const *sets)
{
    static char output[700], epochs_set[64], slowdown[64];
    static const char *args[40];
    snprintf(output, sizeof output, "job.output=%s/%s", test_tmpdir(), name);
    snprintf(epochs_set, sizeof epochs_set, "job.epochs=%d", epochs);
    snprintf(slowdown, sizeof slowdown, "execution.slowdown=%d", test_scale(20));
    const char *base[] = {"train", "examples/dahl-fashion-mnist.cfg", "--set", output, "--set",
                          "energy.baseline_seconds=0", "--set", "data.limit=2048", "--set",
                          "data.test_limit=256", "--set", epochs_set, "--set", "energy.rate_hz=100",
                          "--set", "execution.workers=0", "--set", slowdown};
    int n = 0;
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
        args[n++] = base[i];
    for (int i = 0; sets[i] && n < 38; i++)
        args[n++] = "--set", args[n++] = sets[i];
    args[n] = NULL;
    return args;
}

static const char *const *machine_env(void)
{
    static char sysfs[700], lib[300], nvml[900], models[900];
    static const char *env[5];
    snprintf(sysfs, sizeof sysfs, "FRUGAL_SYSFS_ROOT=%s", root);
    snprintf(lib, sizeof lib, "FRUGAL_NVML_LIBRARY=%s", getenv("FRUGAL_NVML_LIBRARY"));
    snprintf(nvml, sizeof nvml, "FAKE_NVML_DIR=%s", at("nvml"));
    snprintf(models, sizeof models, "FRUGAL_PERFMODEL_DIR=%s", at("models"));
    env[0] = sysfs, env[1] = lib, env[2] = nvml, env[3] = models, env[4] = NULL;
    return env;
}

static char driven_out[1 << 17], driven_json[1 << 17];

/* train_args on fake_machine, its package counter driven as it runs, stopped by SIGINT (the
 * summary saved, the limits put back) once its output holds until `times` times, or after
 * 120 s: a run as long as the windows a policy needs, whatever the machine's speed (a count of
 * epochs set on one machine ended before the policy's windows did on one 6x as fast). Returns
 * the exit status (128 + SIGINT where stopped), with its output and summary.json in driven_out
 * and driven_json. */
static int train_driven(const char *name, const char *const *sets, const char *until, int times)
{
    char log[800], path[800];
    snprintf(log, sizeof log, "%s/%s.log", test_tmpdir(), name);
    pid_t pid = frugal_spawn(&(frugal_call){(uid_t)-1, machine_env(), 0}, log,
                             train_args(name, 100000, sets));
    int rc = fake_rapl_drive_until(root, pid, log, until, times, 120);
    test_read_text(log, driven_out, sizeof driven_out);
    snprintf(path, sizeof path, "%s/%s/summary.json", test_tmpdir(), name);
    test_read_text(path, driven_json, sizeof driven_json);
    return rc;
}

/* Whether the part's value in summary.json is the cheapest of the caps it measured (the policy's
 * cost: energy) once its search has ended; 1 while it still searches. */
static int kept_is_cheapest(const char *json, const char *part)
{
    char key[64];
    snprintf(key, sizeof key, "\"part\": \"%s\"", part);
    const char *p = strstr(json, key), *end = p ? strstr(p, "]}") : NULL;
    double kept, value, cost, best_cost = INFINITY, best = -1;
    if (!p || !end || !(p = strstr(p, "\"value\": ")) || sscanf(p, "\"value\": %lf", &kept) != 1)
        return 0;
    if (!strstr(p, "\"searching\": false") || strstr(p, "\"searching\": false") > end)
        return 1;
    for (p = strstr(p, "\"measured\": ["); p && (p = strstr(p, "{\"value\": ")) && p < end; p++) {
        const char *c = strstr(p, "\"cost\": ");
        if (sscanf(p, "{\"value\": %lf", &value) != 1 || !c || sscanf(c, "\"cost\": %lf", &cost) != 1)
            return 0;
        if (cost < best_cost)
            best_cost = cost, best = value;
    }
    return best == kept;
}

/* Each part of the setting searched to its end (the cap its own windows measured cheapest:
 * the run is stopped once the three parts that can be set have kept one), and every limit put
 * back after the run. */
TEST(op_train_auto_searches_each_part_and_puts_every_limit_back)
{
    fake_machine("auto");
    const char *sets[] = {"placement.operating_point=auto, nvidia1=off", "placement.window_seconds=0.05",
                          NULL};
    int rc = train_driven("auto", sets, "policy energy keeps", 3);
    const char *out = driven_out, *json = driven_json;
    CHECKF(rc == 128 + SIGINT && strstr(out, "operating point: nvidia0 255 W: searching: 300 measured") &&
           strstr(out, "operating point: nvml:0 put back to 300 W") &&
           strstr(out, "constraint_0_power_limit_uw put back to 65 W"), "%s", out);
    CHECK(number_in("nvml/limit0") == 300000 && number_in(PACKAGE "constraint_0_power_limit_uw") == 65000000);
    CHECK(number_in("nvml/limit1") == 300000 && number_in("sys/class/hwmon/hwmon1/power1_cap") == 180000000);
    CHECK(number_in(POLICY0 "scaling_max_freq") == 3000000);   /* the package's limit is searched */
    char state[900];   /* the state file is gone once every limit is back */
    snprintf(state, sizeof state, "%s/operating-points-*.state", at("models"));
    glob_t found;
    CHECKF(glob(state, 0, NULL, &found) == GLOB_NOMATCH, "%s is left", state);
    globfree(&found);
    CHECKF(strstr(json, "\"operating_point\": {") && strstr(json, "\"part\": \"nvidia0\"") &&
           strstr(json, "\"part\": \"package-0\", \"source\": \"rapl\", \"unit\": \"W\", \"mode\": \"auto\""),
           "%s", json);
    CHECKF(kept_is_cheapest(json, "nvidia0") && kept_is_cheapest(json, "package-0"), "%s", json);
    CHECK(!strstr(json, "\"part\": \"nvidia1\""));   /* it cannot be set: no part */
    leave_machine();
}

/* Waits until rel holds value (or 60 s); 1 when it does. */
static int wait_for(const char *rel, long long value)
{
    for (int i = 0; i < 6000; i++) {
        if (number_in(rel) == value)
            return 1;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    return 0;
}

/* A run with fixed limits stopped by SIGTERM (saved, limits back), by two signals (at once: the sysfs
 * limits written back by the handler, NVML's left to the next start), and by SIGKILL (all left to
 * the next start, here `frugal energy --restore`). */
TEST(op_limits_put_back_after_a_signal_and_a_kill)
{
    fake_machine("kill");
    const char *sets[] = {"placement.operating_point=package-0=50, nvidia0=150", NULL};
    const int signals[][2] = {{SIGTERM, 0}, {SIGTERM, SIGINT}, {SIGKILL, 0}};
    for (int k = 0; k < 3; k++) {
        char log[800], name[32], out[1 << 14];
        snprintf(name, sizeof name, "kill%d", k);
        snprintf(log, sizeof log, "%s/%s.log", test_tmpdir(), name);
        pid_t pid = frugal_spawn(&(frugal_call){(uid_t)-1, machine_env(), 0}, log,
                                 train_args(name, 100000, sets));
        CHECKF(wait_for(PACKAGE "constraint_0_power_limit_uw", 50000000) &&
               wait_for("nvml/limit0", 150000), "%s", test_read_text(log, out, sizeof out));
        kill(pid, signals[k][0]);
        if (signals[k][1])   /* another kind (two of one kind may merge); either is first */
            kill(pid, signals[k][1]);
        int status = 0;
        waitpid(pid, &status, 0);
        test_read_text(log, out, sizeof out);
        int package_back = number_in(PACKAGE "constraint_0_power_limit_uw") == 65000000;
        int gpu_back = number_in("nvml/limit0") == 300000;
        if (k == 0)
            CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM && package_back &&
                   gpu_back && strstr(out, "put back to 300 W"), "%s", out);
        else if (k == 1)   /* (the first signal's orderly stop may have put it back meanwhile:
                              under TSan a handler's _exit takes a while) */
            CHECKF(WIFEXITED(status) && WEXITSTATUS(status) > 128 && package_back &&
                   (gpu_back || strstr(out, "or 'frugal energy --restore', puts it back")),
                   "status %d/%d, package %d, gpu %d: %s", WIFEXITED(status), WEXITSTATUS(status),
                   package_back, gpu_back, out);
        else
            CHECK(WIFSIGNALED(status) && !package_back && !gpu_back);
        if (k == 0)
            continue;
        int rc = frugal_run(&(frugal_call){(uid_t)-1, machine_env(), 0}, out, sizeof out,
                            (const char *const[]){"energy", "--restore", NULL});
        CHECKF(rc == 0 && (gpu_back || (strstr(out, "nvml:0 put back to 300 W, as before frugal (pid") &&
                                        strstr(out, "gone) changed it"))), "%s", out);
        CHECK(number_in(PACKAGE "constraint_0_power_limit_uw") == 65000000 &&
              number_in("nvml/limit0") == 300000);
    }
    leave_machine();
}

/* The case: many epochs shorter than a window. The windows carry across epochs and test
 * passes, so the energy policy measures and decides as in one long epoch. */
TEST(op_windows_carry_across_short_epochs)
{
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
        return;   /* one core: nothing to decide */
    fake_machine("short");
    /* epochs of 256 samples (0.07 s on a 2-core VM, 0.012 s on one 6x as fast) and windows of
     * 0.3 s; stopped (SIGINT: the summary is saved) once the policy has decided, so that the run
     * spans the windows it needs on a machine of any speed (60 epochs were 2 windows on the
     * faster one) */
    const char *sets[] = {"placement.policy=energy", "placement.window_seconds=0.3", "data.limit=256", NULL};
    int rc = train_driven("short", sets, "placement: policy energy: ", 1);
    const char *out = driven_out, *json = driven_json;
    const char *measured = strstr(json, "\"seconds_measured\": ");
    double seconds = measured ? atof(measured + 20) : 0;
    CHECKF(rc == 128 + SIGINT && seconds > 0 && strstr(json, "\"why\": \"policy energy: "),
           "rc %d, measured %g s:\n%s\n%s", rc, seconds, out, json);
    leave_machine();
}

/* Without permission a run goes on with every limit as it was, and says which and why. */
TEST(op_train_without_permission_leaves_the_limits_and_says_why)
{
    fake_machine("denied");
    chmod(test_tmpdir(), 0755);
    mkdir(at("models"), 0777);
    chmod(at("models"), 0777);
    char output[700];
    snprintf(output, sizeof output, "%s/denied-run", test_tmpdir());
    mkdir(output, 0777);
    chmod(output, 0777);
    uid_t uid = (uid_t)-1;
    if (geteuid() == 0)
        uid = 65534;   /* nobody: root may write anywhere */
    else
        chmod(at(PACKAGE "constraint_0_power_limit_uw"), 0444);
    put("nvml/locked0", "\n");
    const char *sets[] = {"placement.operating_point=package-0=50, nvidia0=150", NULL};
    const char *const *args = train_args("denied-run", 2, sets);
    static char out[1 << 16];
    int rc = frugal_run(&(frugal_call){uid, machine_env(), 0}, out, sizeof out, args);
    CHECKF(rc == 0 && strstr(out, "operating point: package-0 cannot be set here, left as it is: ") &&
           strstr(out, "Permission denied: setting it needs root") &&
           strstr(out, "operating point: nvidia0 Fake GPU 0 cannot be set here") &&
           strstr(out, "Insufficient Permissions") && strstr(out, "no limit it names can be set here"),
           "rc %d: %s", rc, out);
    CHECK(number_in(PACKAGE "constraint_0_power_limit_uw") == 65000000 && number_in("nvml/limit0") == 300000);
    leave_machine();
}

/* A value outside a part's range is refused with the range; the part is left as it was. */
TEST(op_train_value_out_of_range_is_refused_with_the_range)
{
    fake_machine("range");
    const char *sets[] = {"placement.operating_point=nvidia0=500, package-0=40", NULL};
    static char out[1 << 16];
    int rc = frugal_run(&(frugal_call){(uid_t)-1, machine_env(), 0}, out, sizeof out,
                        train_args("range-run", 2, sets));
    CHECKF(rc == 0 && strstr(out, "operating point: nvidia0 left as it is: nvidia0 Fake GPU 0: "
                             "500 W is outside what it accepts (100 to 400 W)") &&
           strstr(out, "operating point: package-0 40 W: as the job sets it") &&
           strstr(out, "constraint_0_power_limit_uw put back to 65 W"), "rc %d: %s", rc, out);
    CHECK(number_in("nvml/limit0") == 300000 && number_in(PACKAGE "constraint_0_power_limit_uw") == 65000000);
    leave_machine();
}

/* A node sets its own machine's limits (--operating-point, else the job's) and puts them back
 * when training ends; a setting that does not parse is refused before it joins. */
TEST(op_node_sets_its_own_limits_and_puts_them_back)
{
    char out[1 << 14], key[700], clog[800], nlog[800];
    CHECKF(FRUGAL(out, "join", "127.0.0.1:1", "--key", "k", "--operating-point", "gpu=fast") == 2 &&
           strstr(out, "--operating-point gpu=fast: 'fast'"), "%s", out);
    fake_machine("node");
    snprintf(key, sizeof key, "%s/cluster.key", test_tmpdir());
    CHECKF(FRUGAL(out, "keygen", key) == 0, "%s", out);
    snprintf(clog, sizeof clog, "%s/coordinator.log", test_tmpdir());
    snprintf(nlog, sizeof nlog, "%s/node.log", test_tmpdir());
    const char *const *train = train_args("node-run", 2, (const char *[]){NULL});
    const char *args[48];
    int n = 0;
    while (train[n])
        args[n] = train[n], n++;
    const char *listen[] = {"--listen", test_addr(21), "--key", key, "--wait-for", "1", NULL};
    for (int i = 0; listen[i]; i++)
        args[n++] = listen[i];
    args[n] = NULL;
    const char *const *env = machine_env();
    pid_t coordinator = frugal_spawn(&(frugal_call){(uid_t)-1, env, 0}, clog, args);
    int rc = frugal_run(&(frugal_call){(uid_t)-1, env, 0}, out, sizeof out,
                        (const char *const[]){"join", test_addr(21), "--key", key, "--timeout",
                                              "20", "--operating-point", "nvidia0=150", NULL});
    int status = -1;
    waitpid(coordinator, &status, 0);
    CHECKF(rc == 0 && strstr(out, "operating point: nvidia0 150 W: as the job sets it") &&
           strstr(out, "operating point: nvml:0 put back to 300 W"), "rc %d: %s", rc, out);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", test_read_text(clog, out, sizeof out));
    CHECK(number_in("nvml/limit0") == 300000 &&
          strstr(test_read_text(at("nvml/limit_log0"), out, sizeof out), "150000\n300000\n"));
    leave_machine();
}
