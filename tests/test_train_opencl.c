/* Training on OpenCL devices, through the frugal binary, on whatever OpenCL this machine has
 * (PoCL in CI): a step on the device matches the CPU step, cpu+opencl runs tasks on both and
 * keeps results equal to a serial run, deterministic mode repeats itself, DAHL's CNN learns as
 * on the CPU, and a missing loader, a missing driver or a device failing mid-run each give a
 * clear message and never a hang. */
#include "engine/model/checkpoint.h"
#include "fake_rapl.h"
#include "frugal_cli.h"
#include "synthetic.h"
#include "test.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { MAX_PARAMS = 4096 };
static char out[1 << 16];

typedef struct weights { float v[MAX_PARAMS]; long n; } weights;

/* frugal train JOB --devices DEVICES --set job.output=DIR/NAME [--set SET...], with the
 * placement models kept in the test's folder (a fresh start: every device gets calibrated). */
static int train(const char *job, const char *devices, const char *name, const char *const *env,
                 const char *set1, const char *set2)
{
    static char output[700], models[700];
    snprintf(output, sizeof output, "job.output=%s/%s", test_tmpdir(), name);
    snprintf(models, sizeof models, "FRUGAL_PERFMODEL_DIR=%s/models-%s", test_tmpdir(), name);
    const char *envs[8] = {models};
    for (int i = 0; env && env[i] && i < 6; i++)
        envs[i + 1] = env[i];
    const char *args[16] = {"train", job, "--devices", devices, "--set", output, "--set",
                            "energy.baseline_seconds=0", "--verbose"};   /* the task tables */
    int n = 9;
    const char *sets[] = {set1, set2};
    for (int i = 0; i < 2 && sets[i]; i++) {
        args[n++] = "--set";
        args[n++] = sets[i];
    }
    return frugal_run(&(frugal_call){(uid_t)-1, envs, 0}, out, sizeof out, args);
}

static void load_weights(const char *name, weights *w)
{
    char path[700], err[512];
    snprintf(path, sizeof path, "%s/%s/checkpoint.bin", test_tmpdir(), name);
    model m;
    checkpoint_state st = {0};
    w->n = 0;
    CHECKF(checkpoint_open_model(&m, &st, path, err, sizeof err) == 0, "%s", err);
    for (int l = 0; l < m.nlayers; l++)
        for (long i = 0; i < m.layers[l].nparams && w->n < MAX_PARAMS; i++)
            w->v[w->n++] = m.layers[l].params[i];
    free(st.log);
    model_free(&m);
}

/* Every parameter within atol + rtol * |reference|; says which one is worst. */
static void check_same_weights(const char *a, const char *b, double atol, double rtol)
{
    static weights wa, wb;
    load_weights(a, &wa);
    load_weights(b, &wb);
    CHECK(wa.n == wb.n && wa.n > 0);
    long worst = 0;
    double excess = -1;
    for (long i = 0; i < wa.n && i < wb.n; i++) {
        double e = fabs((double)wa.v[i] - wb.v[i]) - (atol + rtol * fabs((double)wb.v[i]));
        if (e > excess)
            excess = e, worst = i;
    }
    CHECKF(excess <= 0, "%s vs %s: parameter %ld is %.9g against %.9g", a, b, worst,
           (double)wa.v[worst], (double)wb.v[worst]);
}

/* The device's name, from the "OpenCL: NAME ready" line. */
static int device_name(char *name, size_t n)
{
    const char *p = strstr(out, "OpenCL: "), *ready = p ? strstr(p, " ready;") : NULL;
    for (; p && ready && strstr(p + 1, "OpenCL: ") && strstr(p + 1, "OpenCL: ") < ready;)
        p = strstr(p + 1, "OpenCL: ");
    if (!p || !ready)
        return -1;
    snprintf(name, n, "%.*s", (int)(ready - p - 8), p + 8);
    return 0;
}

TEST(opencl_train_one_step_matches_the_cpu)
{
    const char *job = make_job("");
    const char *one_step = "data.limit=20";   /* one batch of 20: a single SGD step */
    CHECKF(train(job, "cpu", "cpu", NULL, one_step, "job.epochs=1") == 0, "%s", out);
    CHECKF(train(job, "opencl", "opencl", NULL, one_step, "job.epochs=1") == 0, "%s", out);
    CHECKF(strstr(out, "ready; CLBlast: SGEMM self-check passed"), "%s", out);
    check_same_weights("opencl", "cpu", 1e-6, 1e-5);
    /* completions through the driver's callbacks alone: the same step, and the switch recorded */
    const char *callbacks[] = {"FRUGAL_OPENCL_POLL=off", NULL};
    CHECKF(train(job, "opencl", "callbacks", callbacks, one_step, "job.epochs=1") == 0, "%s", out);
    check_same_weights("callbacks", "cpu", 1e-6, 1e-5);
    char path[700], summary[1 << 16];
    snprintf(path, sizeof path, "%s/callbacks/summary.json", test_tmpdir());
    test_read_text(path, summary, sizeof summary);
    CHECKF(strstr(summary, "\"FRUGAL_OPENCL_POLL\": \"off\""), "%s", summary);
    /* three epochs of 15 steps each: still close */
    CHECKF(train(job, "cpu", "cpu3", NULL, NULL, NULL) == 0, "%s", out);
    CHECKF(train(job, "opencl", "opencl3", NULL, NULL, NULL) == 0, "%s", out);
    check_same_weights("opencl3", "cpu3", 1e-4, 1e-3);
}

/* With devices = opencl a task is done once its kernels are on the device's in-order queue, the
 * copies waiting for the kernels before them: three epochs with an evaluation each give the
 * weights, bit for bit, of tasks done when their kernels complete (FRUGAL_OPENCL_PIPELINE=off),
 * and the summary says which ran. */
TEST(opencl_train_pipelined_tasks_give_the_weights_of_tasks_done_at_completion)
{
    const char *job = make_job("");
    const char *completed[] = {"FRUGAL_OPENCL_PIPELINE=off", NULL};
    CHECKF(train(job, "opencl", "pipelined", NULL, NULL, NULL) == 0, "%s", out);
    CHECKF(train(job, "opencl", "completed", completed, NULL, NULL) == 0, "%s", out);
    check_same_weights("pipelined", "completed", 0, 0);
    char path[700], summary[1 << 16];
    snprintf(path, sizeof path, "%s/pipelined/summary.json", test_tmpdir());
    test_read_text(path, summary, sizeof summary);
    CHECKF(strstr(summary, "done once their kernels are on its in-order queue"), "%s", summary);
    snprintf(path, sizeof path, "%s/completed/summary.json", test_tmpdir());
    test_read_text(path, summary, sizeof summary);
    CHECKF(!strstr(summary, "in-order queue"), "%s", summary);
    CHECKF(strstr(summary, "\"FRUGAL_OPENCL_PIPELINE\": \"off\""), "%s", summary);
}

/* On a device each relu runs inside the tasks of the layer before it (a convolution, a max-pool,
 * a dense layer), its gradient taken through it in the device's scratch: the same step. */
TEST(opencl_train_fuses_each_relu_into_the_layer_before_it)
{
    const char *job = make_job_model("[conv]\nfilters = 4\nsize = 3\npadding = 1\n[relu]\n"
                                     "[conv]\nfilters = 5\nsize = 3\n[relu]\n[maxpool]\nsize = 2\n"
                                     "[flatten]\n[dense]\noutputs = 16\n[relu]\n[dense]\n"
                                     "outputs = 10\n", "");
    const char *one_step = "data.limit=20";
    CHECKF(train(job, "cpu", "relu-cpu", NULL, one_step, "job.epochs=1") == 0, "%s", out);
    CHECKF(train(job, "opencl", "relu-opencl", NULL, one_step, "job.epochs=1") == 0, "%s", out);
    for (const char *const *k = (const char *const[]){"conv_relu_forward", "conv_relu_backward",
                                                      "maxpool_relu_forward", "maxpool_relu_backward",
                                                      "dense_relu_forward", "dense_relu_backward",
                                                      NULL}; *k; k++) {
        const char *line = strstr(out, *k), *on = line ? strstr(line, " opencl ") : NULL;
        CHECKF(on && on < strchr(line, '\n'), "%s on the device: %s", *k, out);
    }
    CHECKF(!strstr(out, "  relu_forward "), "%s", out);
    check_same_weights("relu-opencl", "relu-cpu", 1e-6, 1e-5);
    /* fuse = off: the relus in tasks of their own */
    const char *layers = "[conv]\nfilters = 4\nsize = 3\n[relu]\n[flatten]\n[dense]\noutputs = 10\n";
    CHECKF(train(make_job_model(layers, "fuse = off\n"), "opencl", "relu-off", NULL, one_step,
                 "job.epochs=1") == 0, "%s", out);
    CHECKF(strstr(out, "  relu_forward ") && !strstr(out, "conv_relu_forward"), "%s", out);
}

/* Alone on devices = opencl, an automatic grain is a batch per device (engine/train/plan.c): a
 * task's launches and completion cost tens of microseconds on a GPU, and a device runs a
 * chunk's kernels in order anyway. On the CPU, or beside it, chunks stay (two or more a batch).
 * summary.json says which and why; the step is the CPU's, taken from the one chunk's partial
 * gradient with no task summing it. */
TEST(opencl_train_alone_takes_a_batch_per_device_when_the_grain_is_auto)
{
    const char *job = make_job(""), *one_step = "data.limit=20";
    char path[700], summary[1 << 16];
    static const struct { const char *devices, *name, *chunks, *why; } runs[] = {
        {"opencl", "grain-opencl", "\"chunks_per_batch\": 1,", "\"grain_why\": \"auto: a batch per device"},
        {"cpu", "grain-cpu", "\"chunks_per_batch\": 2,", "\"grain_why\": \"auto: ~1 MFLOP"},
        {"cpu+opencl", "grain-both", "\"chunks_per_batch\": 2,", "\"grain_why\": \"auto: ~1 MFLOP"}};
    for (int i = 0; i < 3; i++) {
        CHECKF(train(job, runs[i].devices, runs[i].name, NULL, one_step, "execution.grain=auto") == 0,
               "%s", out);
        snprintf(path, sizeof path, "%s/%s/summary.json", test_tmpdir(), runs[i].name);
        test_read_text(path, summary, sizeof summary);
        CHECKF(strstr(summary, runs[i].chunks) && strstr(summary, runs[i].why), "%s: %s",
               runs[i].devices, summary);
        if (i == 0)   /* one chunk: the step reads its partial gradient, nothing copies it */
            CHECKF(!strstr(out, "gradient_sum") && strstr(out, "  sgd "), "%s", out);
    }
    check_same_weights("grain-opencl", "grain-cpu", 1e-6, 1e-5);
    /* a grain the job sets is the job's */
    CHECKF(train(job, "opencl", "grain-job", NULL, one_step, "execution.grain=5") == 0, "%s", out);
    snprintf(path, sizeof path, "%s/grain-job/summary.json", test_tmpdir());
    test_read_text(path, summary, sizeof summary);
    CHECKF(strstr(summary, "\"chunks_per_batch\": 4,") && strstr(summary, "\"grain_why\": \"job\""),
           "%s", summary);
}

TEST(opencl_train_cpu_plus_opencl_uses_both_and_matches_a_serial_run)
{
    const char *job = make_job("");
    CHECKF(train(job, "cpu", "serial", NULL, "execution.workers=1", NULL) == 0, "%s", out);
    CHECKF(train(job, "cpu+opencl", "mixed", NULL, NULL, NULL) == 0, "%s", out);
    /* calibration sends the first tasks of each kind to the device: the report shows both */
    const char *line = strstr(out, "  conv_forward ");
    CHECKF(line && strstr(line, " cpu ") && strstr(line, " opencl "), "%s", out);
    CHECKF(strstr(out, "placement models: none yet"), "%s", out);
    check_same_weights("mixed", "serial", 1e-4, 1e-3);
}

/* Under the energy policy, where a task runs is weighed in joules: a CPU task one core's watts
 * above idle, PoCL (on the host's cores) that many cores', a GPU a prior until its sensor (if
 * any: NVML on an NVIDIA GPU) measures it; results stay those of a serial run. */
TEST(opencl_train_energy_policy_weighs_the_device_in_joules)
{
    const char *job = make_job("");
    CHECKF(train(job, "cpu", "serial-e", NULL, "execution.workers=1", NULL) == 0, "%s", out);
    CHECKF(train(job, "cpu+opencl", "by-energy", NULL, "placement.policy=energy",
                 "energy.power_profile=10, 17, 24") == 0, "%s", out);
    int cpu_device = strstr(out, " host cores)") != NULL;
    CHECKF(strstr(out, "placement: tasks placed by expected joules: a CPU task 7 W (per core, "
                       "from [energy] power_profile), on ") &&
           strstr(out, cpu_device ? " host cores), 10 W idle" : " W (a prior"), "%s", out);
    char path[700], summary[1 << 16];
    snprintf(path, sizeof path, "%s/by-energy/summary.json", test_tmpdir());
    test_read_text(path, summary, sizeof summary);
    CHECKF(strstr(summary, "\"placement_energy\": \"tasks placed by expected joules") &&
           strstr(summary, "\"task_placement\": \"by expected joules"), "%s", summary);
    check_same_weights("by-energy", "serial-e", 1e-4, 1e-3);
}

/* Under an energy policy the placement's figures are calibrated from what was measured: with a
 * fake RAPL counter moved at declared watts for the cores frugal keeps busy (10 W idle, 20 W
 * with one core, 80 W more per further core), the per-core watts after the first epoch are the
 * measured ones, not the profile's 1 W. (CPU tasks are slowed down, busy, to last long enough.) */
TEST(opencl_train_calibrates_the_placement_figures_from_its_sensors)
{
    char root[600], sysfs[700], models[700], output[700], log[700], path[700], slowdown[64];
    snprintf(root, sizeof root, "%s/sys-calibrate", test_tmpdir());
    snprintf(slowdown, sizeof slowdown, "execution.slowdown=%d", test_scale(20));
    fake_rapl_tree(root);
    snprintf(sysfs, sizeof sysfs, "FRUGAL_SYSFS_ROOT=%s", root);
    snprintf(models, sizeof models, "FRUGAL_PERFMODEL_DIR=%s/models-calibrate", test_tmpdir());
    snprintf(output, sizeof output, "job.output=%s/calibrate", test_tmpdir());
    snprintf(log, sizeof log, "%s/calibrate.log", test_tmpdir());
    const char *env[] = {sysfs, models, NULL};
    /* 4096 images, 3 epochs: an epoch of 0.09 s was seen (CI) to leave too little busy time
     * to calibrate from (device_energy.c's MIN_BUSY_S); the next ones add to it */
    const char *args[] = {"train", "examples/dahl-fashion-mnist.cfg", "--devices", "cpu+opencl",
                          "--set", output, "--set", "energy.baseline_seconds=0.5", "--set",
                          "placement.policy=energy", "--set", "energy.power_profile=10, 11, 12",
                          "--set", "data.limit=4096", "--set", "data.test_limit=256", "--set",
                          "job.epochs=3", "--set", slowdown, NULL};
    int rc = fake_rapl_drive(root, frugal_spawn(&(frugal_call){(uid_t)-1, env, 0}, log, args));
    test_read_text(log, out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "energy: measured: rapl package-0"), "%s", out);
    const char *prefix = "placement: calibrated: tasks placed by expected joules: a CPU task ";
    const char *at = strstr(out, prefix);
    double core_w = 0;
    /* measured, not the profile's 1 W; how far above depends on the share of the joules the
     * CPU tasks' busy seconds carry (a CPU hog beside the test, PoCL's threads: 50-150 W seen) */
    CHECKF(at && sscanf(at + strlen(prefix), "%lf W (per core, measured", &core_w) == 1 &&
           core_w > 2 && core_w < 1000, "%s", out);
    static char summary[1 << 16];
    snprintf(path, sizeof path, "%s/calibrate/summary.json", test_tmpdir());
    test_read_text(path, summary, sizeof summary);
    CHECKF(strstr(summary, "\"placement_energy\": \"tasks placed by expected joules: a CPU task ") &&
           strstr(summary, "(per core, measured: its sensors' joules above idle"), "%s", summary);
}

TEST(opencl_train_deterministic_gives_the_same_weights_twice)
{
    const char *job = make_job("");
    for (int run = 0; run < 2; run++) {
        CHECKF(train(job, "cpu+opencl", run ? "det2" : "det1", NULL, "execution.deterministic=on",
                     NULL) == 0, "%s", out);
        const char *line = strstr(out, "  conv_forward ");
        CHECKF(line && strstr(line, " cpu ") && strstr(line, " opencl "), "%s", out);
    }
    check_same_weights("det1", "det2", 0, 0);
}

/* DAHL's CNN on the real Fashion-MNIST (Debian's dataset-fashion-mnist, a build.sh dependency):
 * the first 2048 images, 3 epochs; the device's test accuracy within 1 point of the CPU's. */
static double final_test_acc(const char *name)
{
    char path[700], line[512], last[512] = "";
    snprintf(path, sizeof path, "%s/%s/metrics.csv", test_tmpdir(), name);
    FILE *f = fopen(path, "r");
    CHECKF(f != NULL, "%s", path);
    while (f && fgets(line, sizeof line, f))
        snprintf(last, sizeof last, "%s", line);
    if (f)
        fclose(f);
    double loss, acc, tloss, tacc;
    int epoch;
    CHECKF(sscanf(last, "%d,%lf,%lf,%lf,%lf", &epoch, &loss, &acc, &tloss, &tacc) == 5 && epoch == 3,
           "%s: %s", path, last);
    return tacc;
}

TEST(opencl_train_dahl_cnn_within_a_point_of_the_cpu)
{
    const char *job = "examples/dahl-fashion-mnist.cfg";
    CHECKF(train(job, "cpu", "dahl-cpu", NULL, "data.limit=2048", "job.epochs=3") == 0, "%s", out);
    CHECKF(train(job, "opencl", "dahl-opencl", NULL, "data.limit=2048", "job.epochs=3") == 0, "%s",
           out);
    double cpu = final_test_acc("dahl-cpu"), dev = final_test_acc("dahl-opencl");
    CHECKF(fabs(cpu - dev) <= 0.01, "test accuracy %.4f on OpenCL, %.4f on the CPU", dev, cpu);
    CHECK(cpu > 0.15);   /* it learned something: 10 classes give 0.10 by chance */
}

TEST(opencl_train_without_a_loader_or_a_driver_runs_on_the_cpu)
{
    const char *job = make_job("");
    char empty[700];
    snprintf(empty, sizeof empty, "%s/vendors", test_tmpdir());
    mkdir(empty, 0755);
    char vendors[800];
    snprintf(vendors, sizeof vendors, "OCL_ICD_VENDORS=%s", empty);
    const char *no_loader[] = {"FRUGAL_OPENCL_LOADER=/nonexistent/libOpenCL.so.1", NULL};
    const char *no_driver[] = {vendors, NULL};
    CHECKF(train(job, "cpu+opencl", "a", no_loader, "job.epochs=1", NULL) == 0, "%s", out);
    CHECKF(strstr(out, "no OpenCL loader: /nonexistent/libOpenCL.so.1") &&
           strstr(out, "training on the CPU") && strstr(out, "epoch 1/1"), "%s", out);
    CHECKF(train(job, "cpu+opencl", "b", no_driver, "job.epochs=1", NULL) == 0, "%s", out);
    CHECKF(strstr(out, "no OpenCL platform") && strstr(out, empty) &&
           strstr(out, "training on the CPU") && strstr(out, "epoch 1/1"), "%s", out);
    /* asked for OpenCL only: an error, not a silent CPU run */
    CHECKF(train(job, "opencl", "c", no_loader, "job.epochs=1", NULL) == 1, "%s", out);
    CHECKF(strstr(out, "devices = opencl, but no OpenCL loader") && !strstr(out, "epoch 1"), "%s",
           out);
    CHECK(FRUGAL(out, "info") == 0);
    const char *info_env[] = {"FRUGAL_OPENCL_LOADER=/nonexistent/libOpenCL.so.1", NULL};
    CHECK(frugal_run(&(frugal_call){(uid_t)-1, info_env, 0}, out, sizeof out,
                     (const char *const[]){"info", NULL}) == 0);
    CHECKF(strstr(out, "OpenCL: none: no OpenCL loader: /nonexistent/libOpenCL.so.1"), "%s", out);
}

TEST(opencl_train_info_lists_the_devices)
{
    CHECK(FRUGAL(out, "info") == 0);
    CHECKF(strstr(out, "[0] ") && strstr(out, "compute units") && strstr(out, "OpenCL ") &&
           strstr(out, "CLBlast: SGEMM self-check passed"), "%s", out);
}

/* A vendor's driver installed but listed in no ICD file (a container given the GPU's driver
 * without /etc/OpenCL/vendors/nvidia.icd, as a lent H200 machine was): `frugal info` and a run
 * say so and how to list it, and the run goes on with what is listed. */
TEST(opencl_names_an_installed_driver_no_icd_file_lists)
{
    const char *variant = getenv("FRUGAL_TEST_VARIANT");
    char dir[PATH_MAX], rel[64], env[PATH_MAX + 32];
    snprintf(rel, sizeof rel, "build/%s/fake_icd", variant ? variant : "release");
    CHECKF(realpath(rel, dir) != NULL, "%s: run make tests", rel);
    snprintf(env, sizeof env, "LD_LIBRARY_PATH=%s", dir);
    const char *with_driver[] = {env, NULL};
    CHECK(frugal_run(&(frugal_call){(uid_t)-1, with_driver, 0}, out, sizeof out,
                     (const char *const[]){"info", NULL}) == 0);
    if (strstr(out, "platform NVIDIA")) {
        printf("  (NVIDIA's driver is listed here: nothing to name)\n");
        return;
    }
    const char *said = "NVIDIA's OpenCL driver libnvidia-opencl.so.1 is installed but no ICD "
                       "file in /etc/OpenCL/vendors names it: a file there holding its name "
                       "(e.g. nvidia.icd) makes its devices usable";
    CHECKF(strstr(out, said) && strstr(out, "[0] "), "%s", out);
    const char *job = make_job("");
    CHECKF(train(job, "auto", "unlisted", with_driver, "job.epochs=1", NULL) == 0, "%s", out);
    CHECKF(strstr(out, said) && strstr(out, "epoch 1/1"), "%s", out);
    char path[700], summary[1 << 16];
    snprintf(path, sizeof path, "%s/unlisted/summary.json", test_tmpdir());
    test_read_text(path, summary, sizeof summary);
    CHECKF(strstr(summary, "\"devices_note\": \"NVIDIA's OpenCL driver"), "%s", summary);
    void *real = dlopen("libnvidia-opencl.so.1", RTLD_LAZY);
    if (real) {   /* this machine has one of its own */
        dlclose(real);
        return;
    }
    CHECK(FRUGAL(out, "info") == 0);   /* without it: nothing said */
    CHECKF(!strstr(out, "is installed but no ICD file"), "%s", out);
}

/* A device that fails mid-run: the run stops with the device and the OpenCL error named, keeps
 * its last checkpoint, and does not hang (frugal_run kills a run after 300 s). */
TEST(opencl_train_device_failing_mid_run_stops_with_its_name)
{
    const char *job = make_job("");
    /* cpu+opencl sends the device only its calibration tasks: make it fail among those */
    const char *modes[] = {"opencl", "cpu+opencl"};
    const char *fail[][2] = {{"FRUGAL_OPENCL_FAIL_AFTER=200", NULL},
                             {"FRUGAL_OPENCL_FAIL_AFTER=20", NULL}};
    for (int i = 0; i < 2; i++) {
        int rc = train(job, modes[i], modes[i], fail[i], NULL, NULL);
        char name[200] = "";
        CHECKF(device_name(name, sizeof name) == 0, "%s", out);
        char want[300];
        snprintf(want, sizeof want, "OpenCL device %s: ", name);
        CHECKF(rc == 1 && strstr(out, want) && strstr(out, "CL_OUT_OF_RESOURCES"), "%s: rc %d: %s",
               modes[i], rc, out);
    }
}

/* The same binary in an empty environment (no PATH, no HOME, no library path): it finds the
 * ICD loader itself, and PoCL, which needs a linker on PATH, still compiles (its kernel cache
 * is an empty folder, so it really compiles). */
TEST(opencl_train_in_an_empty_environment)
{
    const char *job = make_job("");
    char output[700], cache[700];
    snprintf(output, sizeof output, "job.output=%s/env", test_tmpdir());
    /* PoCL's own cache, which the other tests fill: compiling every kernel afresh took 37 s */
    const char *home = getenv("HOME"), *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && *xdg)
        snprintf(cache, sizeof cache, "POCL_CACHE_DIR=%s/pocl/kcache", xdg);
    else if (home && *home)
        snprintf(cache, sizeof cache, "POCL_CACHE_DIR=%s/.cache/pocl/kcache", home);
    else
        snprintf(cache, sizeof cache, "POCL_CACHE_DIR=%s/pocl-cache", test_tmpdir());
    const char *const args[] = {"train", job, "--devices", "cpu+opencl", "--set", output, "--set",
                                "job.epochs=1", "--set", "energy.baseline_seconds=0", NULL};
    const char *const env[] = {cache, NULL};
    CHECKF(frugal_run(&(frugal_call){(uid_t)-1, env, 1}, out, sizeof out, args) == 0, "%s", out);
    CHECKF(strstr(out, "ready; CLBlast") && strstr(out, "epoch 1/1"), "%s", out);
    CHECKF(strstr(out, "placement models: not kept"), "%s", out);
    char path[700], summary[1 << 14] = "";
    snprintf(path, sizeof path, "%s/env/summary.json", test_tmpdir());
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (f) {
        summary[fread(summary, 1, sizeof summary - 1, f)] = 0;
        fclose(f);
    }
    CHECKF(strstr(summary, "PATH was empty"), "%s", summary);
}
