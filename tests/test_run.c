/* frugal train as a whole (engine/cli/run.c): the run folder stays consistent whatever happens (a
 * stop at a batch boundary, a signal, a second run on the same folder, a killed run's temporary
 * files), a stopped run resumes to the same weights, the summary covers every epoch across
 * resumes, and a diverging run says so. */
#include "common/env_switches.h"
#include "common/large_alloc.h"
#include "engine/model/checkpoint.h"
#include "engine/report/csv_table.h"
#include "engine/report/report.h"
#include "engine/cli/run.h"
#include "engine/job/run_folder.h"
#include "engine/cli/signals.h"
#include "synthetic.h"
#include "test.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = calloc(1, (size_t)n + 1);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n)
        n = 0;
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

static const char *run_file(const char *name)
{
    static char path[4][600];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, 600, "%s/run/%s", test_tmpdir(), name);
    return p;
}

static int count_lines(const char *text)
{
    int n = 0;
    for (const char *c = text; c && *c; c++)
        n += *c == '\n';
    return n;
}

static int train_job(const char *job, const char *const *sets, int resume,
                     const _Atomic int *stop)
{
    FILE *out = fopen("/dev/null", "w");
    run_options o = {.job = job, .overrides = sets, .resume = resume, .overwrite = !resume,
                     .out = out, .stop = stop};
    int rc = run_train(&o);
    fclose(out);
    return rc;
}

/* The parameters and velocity in a checkpoint (its log differs from run to run: timings). */
static float *weights_of(const char *path, long *n)
{
    model m;
    checkpoint_state st;
    char err[512];
    *n = 0;
    if (checkpoint_open_model(&m, &st, path, err, sizeof err)) {
        test_fail(__FILE__, __LINE__, "%s", err);
        return NULL;
    }
    free(st.log);
    float *w = malloc(sizeof(float) * 2 * (size_t)m.nparams);
    for (int l = 0; l < m.nlayers; l++) {
        if (!m.layers[l].nparams)
            continue;
        memcpy(w + *n, m.layers[l].params, sizeof(float) * (size_t)m.layers[l].nparams);
        memcpy(w + *n + m.layers[l].nparams, m.layers[l].velocity,
               sizeof(float) * (size_t)m.layers[l].nparams);
        *n += 2 * m.layers[l].nparams;
    }
    model_free(&m);
    return w;
}

static const char *const NO_BASELINE[] = {"energy.baseline_seconds=0", NULL};

/* steps.csv against metrics.csv: each epoch's points (one every `every` batches, at its last and
 * where `stops` processes stopped; steps only going up) cover its `samples` once and add up to
 * its training loss and accuracy. */
static void check_steps_add_up(int every, long per_epoch, long samples, int stops)
{
    csv_table st, me;
    char err[256];
    CHECKF(csv_read(&st, run_file("steps.csv"), err, sizeof err) == 0 &&
           csv_read(&me, run_file("metrics.csv"), err, sizeof err) == 0, "%s", err);
    const double *ep = csv_values(&st, "epoch"), *batch = csv_values(&st, "batch"),
                 *step = csv_values(&st, "step"), *n = csv_values(&st, "samples"),
                 *loss = csv_values(&st, "train_loss"), *acc = csv_values(&st, "train_acc");
    CHECK(ep && batch && step && n && loss && acc && me.nrows > 0);
    for (int e = 1, i = 0; e <= me.nrows && ep; e++) {
        double got = 0, lsum = 0, csum = 0;
        for (; i < st.nrows && ep[i] == e; i++) {
            CHECKF(step[i] == (e - 1) * per_epoch + batch[i] && (i == 0 || step[i] > step[i - 1]),
                   "row %d: step %g, batch %g of epoch %d", i + 1, step[i], batch[i], e);
            if ((long)batch[i] % every && batch[i] != per_epoch)
                CHECKF(stops-- > 0, "row %d: a point at batch %g", i + 1, batch[i]);
            got += n[i], lsum += loss[i] * n[i], csum += acc[i] * n[i];
        }
        double want_loss = csv_values(&me, "train_loss")[e - 1];
        double want_acc = csv_values(&me, "train_acc")[e - 1];
        CHECKF(got == (double)samples && fabs(lsum / got - want_loss) < 1e-5 &&
               fabs(csum / got - want_acc) < 1e-5, "epoch %d: %g samples, loss %g, acc %g in "
               "steps.csv; %ld, %g, %g in metrics.csv", e, got, lsum / got, csum / got, samples,
               want_loss, want_acc);
    }
    csv_free(&st), csv_free(&me);
}

TEST(run_writes_every_epoch_and_no_temporary_files)
{
    const char *job = make_job("");
    CHECK(train_job(job, NO_BASELINE, 0, NULL) == 0);
    char *metrics = slurp(run_file("metrics.csv"), NULL), *summary = slurp(run_file("summary.json"), NULL);
    CHECK(metrics && count_lines(metrics) == 4);   /* header and 3 epochs */
    check_steps_add_up(1, 15, SYN_IMAGES, 0);   /* 15 batches an epoch: a point each */
    CHECK(summary && strstr(summary, "\"epoch\": 1,") && strstr(summary, "\"epoch\": 3,"));
    CHECK(summary && strstr(summary, "\"execution\": {\"grain\": 3,"));
    CHECK(summary && strstr(summary, "\"input_why\": \"auto: "));
    CHECK(access(run_file("checkpoint.bin.tmp"), F_OK) != 0);
    CHECK(access(run_file("summary.json.tmp"), F_OK) != 0);
    free(metrics), free(summary);
}

/* A stop between batches (what a first SIGINT asks for) saves a checkpoint at a batch boundary;
 * resuming gives the weights of an uninterrupted run, and the run folder covers every epoch. */
static _Atomic int stop_flag;

static void *stop_after(void *us)
{
    struct timespec ts = {0, (long)(intptr_t)us * 1000};
    nanosleep(&ts, NULL);
    stop_flag = 2;   /* as SIGINT would */
    return NULL;
}

TEST(run_stopped_between_batches_resumes_to_the_same_weights)
{
    const char *job = make_job("devices = cpu\n");   /* a GPU would place by measured speed */
    const char *const sets[] = {"energy.baseline_seconds=0", "job.log_every=4", NULL};
    char straight[700];
    CHECK(train_job(job, NO_BASELINE, 0, NULL) == 0);
    snprintf(straight, sizeof straight, "%s/straight.bin", test_tmpdir());
    CHECK(rename(run_file("checkpoint.bin"), straight) == 0);
    long n0, n1;
    float *want = weights_of(straight, &n0);
    /* Stop at some point of the run: where does not matter, the weights must come out equal. */
    int stopped = 0;
    for (int us = 2000; us <= 256000 && !stopped; us *= 2) {
        stop_flag = 0;
        pthread_t th;
        pthread_create(&th, NULL, stop_after, (void *)(intptr_t)us);
        int rc = train_job(job, sets, 0, &stop_flag);
        pthread_join(th, NULL);
        stopped = rc == 128 + 2;
        CHECKF(rc == 0 || stopped, "rc %d", rc);
    }
    CHECKF(stopped, "the run always ended before the stop");
    char *metrics = slurp(run_file("metrics.csv"), NULL), *summary = slurp(run_file("summary.json"), NULL);
    CHECK(summary && strstr(summary, "\"interrupted\": \"stopped by signal 2 in epoch"));
    int rows_at_stop = count_lines(metrics) - 1;
    checkpoint_state st;
    model m;
    char err[512];
    CHECK(checkpoint_open_model(&m, &st, run_file("checkpoint.bin"), err, sizeof err) == 0);
    CHECKF(rows_at_stop == st.epoch, "metrics has %d epochs, the checkpoint %d", rows_at_stop,
           st.epoch);
    free(st.log);
    model_free(&m);
    free(metrics), free(summary);
    /* a point written past the checkpoint (as by a process killed before its next one) */
    FILE *steps = fopen(run_file("steps.csv"), "a");
    CHECK(steps && fprintf(steps, "3,15,45,3.0000,20,9.0,0.0,1.0\n") > 0 && fclose(steps) == 0);
    CHECK(train_job(job, sets, 1, NULL) == 0);
    float *got = weights_of(run_file("checkpoint.bin"), &n1);
    CHECK(n0 == n1 && want && got && !memcmp(want, got, sizeof(float) * (size_t)n0));
    metrics = slurp(run_file("metrics.csv"), NULL);
    summary = slurp(run_file("summary.json"), NULL);
    CHECKF(metrics && count_lines(metrics) == 4, "metrics.csv:\n%s", metrics);
    check_steps_add_up(4, 15, SYN_IMAGES, 1);
    CHECK(summary && strstr(summary, "\"epoch\": 1,") && strstr(summary, "\"epoch\": 3,"));
    free(metrics), free(summary), free(want), free(got);
}

/* A real SIGTERM: the run saves, exits with 128 + 15, and resumes to the uninterrupted weights;
 * a second signal ends the process at once. */
TEST(run_signals_save_then_a_second_one_exits_at_once)
{
    const char *job = make_job("");
    pid_t pid = fork();
    if (pid == 0) {
        signals_install();
        kill(getpid(), SIGTERM);   /* before the first batch: stops at once, saves epoch 0 */
        _exit(train_job(job, NO_BASELINE, 0, &signals_stop));
    }
    int status;
    waitpid(pid, &status, 0);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM, "status %d", status);
    CHECK(access(run_file("checkpoint.bin"), F_OK) == 0);
    CHECK(train_job(job, NO_BASELINE, 1, NULL) == 0);
#ifdef __SANITIZE_THREAD__
    /* TSan defers signals to its own safe points and leaves them blocked after a nested one
     * (google/sanitizers#1855): the second signal never arrives. */
    return;
#endif
    /* The second signal from outside, once the first has been seen: sanitizers deliver a
     * signal a process sends itself late, and merge two pending ones. */
    int ready[2];
    CHECK(pipe(ready) == 0);
    pid = fork();
    if (pid == 0) {
        signals_install();
        CHECK(write(ready[1], "i", 1) == 1);
        for (int i = 0; i < 10000 && !atomic_load(&signals_stop); i++)
            usleep(1000);
        CHECK(write(ready[1], "s", 1) == 1);
        for (int i = 0; i < 10000; i++)
            usleep(1000);
        _exit(0);
    }
    char c;
    CHECK(read(ready[0], &c, 1) == 1 && c == 'i');
    kill(pid, SIGINT);
    CHECK(read(ready[0], &c, 1) == 1 && c == 's');
    kill(pid, SIGINT);   /* the second one does not wait */
    waitpid(pid, &status, 0);
    close(ready[0]), close(ready[1]);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGINT, "status %d", status);
}

TEST(run_folder_in_use_is_refused_naming_the_other_run)
{
    char dir[600], err[512];
    snprintf(dir, sizeof dir, "%s/shared", test_tmpdir());
    run_folder a, b;
    CHECKF(run_folder_open(&a, dir, "first.cfg", err, sizeof err) == 0, "%s", err);
    CHECK(run_folder_open(&b, dir, "second.cfg", err, sizeof err) == -1);
    char pid[32];
    snprintf(pid, sizeof pid, "pid %d", (int)getpid());
    CHECKF(strstr(err, "in use by another frugal run") && strstr(err, pid) &&
           strstr(err, "first.cfg"), "%s", err);
    run_folder_close(&a);
    CHECKF(run_folder_open(&b, dir, "second.cfg", err, sizeof err) == 0, "%s", err);
    run_folder_close(&b);
}

TEST(run_clears_a_killed_runs_temporary_files)
{
    const char *job = make_job("");
    char dir[600];
    snprintf(dir, sizeof dir, "%s/run", test_tmpdir());
    mkdir(dir, 0755);
    FILE *f = fopen(run_file("checkpoint.bin.tmp"), "w");
    fputs("half a checkpoint", f);
    fclose(f);
    const char *sets[] = {"energy.baseline_seconds=0", "job.epochs=1", NULL};
    CHECK(train_job(job, sets, 0, NULL) == 0);
    CHECK(access(run_file("checkpoint.bin.tmp"), F_OK) != 0);
}

/* A learning rate far too large: the run says it diverged and names the learning rate, or ends
 * with the loss that is not finite. */
TEST(run_divergence_is_reported_with_its_likely_cause)
{
    const char *job = make_job("");
    const char *sets[] = {"energy.baseline_seconds=0", "optimizer.lr=40", "optimizer.momentum=0.9",
                          NULL};
    int rc = train_job(job, sets, 0, NULL);
    char *summary = slurp(run_file("summary.json"), NULL);
    CHECKF(rc == 0 && summary && strstr(summary, "training looks diverged") &&
           strstr(summary, "optimizer.lr = 40"), "rc %d, summary: %.400s", rc,
           summary ? summary : "none");
    free(summary);
}

#include "engine/cli/divergence.h"
TEST(run_divergence_check_thresholds)
{
    char msg[512];
    CHECK(!divergence_check(1, 2.3, 2.2, 0.3, 10, 0.1, 0.01, msg, sizeof msg));   /* learning */
    CHECK(!divergence_check(2, 2.3, 2.31, 0.1, 10, 0.1, 0.01, msg, sizeof msg));  /* stuck */
    CHECK(divergence_check(1, 36000, 36000, 0.1, 10, 0.1, 1000, msg, sizeof msg));
    CHECKF(strstr(msg, "at chance") && strstr(msg, "optimizer.lr = 1000") && strstr(msg, "try 100"),
           "%s", msg);
    CHECK(!divergence_check(1, 9, 9, 0.6, 10, 0.3, 1, msg, sizeof msg));   /* above chance */
    CHECK(divergence_check(3, 2.3, 40, 0.5, 10, 0.1, 0.5, msg, sizeof msg));
    CHECKF(strstr(msg, "grew from 2.3"), "%s", msg);
    unsigned char labels[] = {1, 1, 1, 2};
    CHECK(divergence_chance(labels, 4, 10) == 0.75);
}

/* ---- the summary ---- */

#include "engine/train/trainer.h"

TEST(train_summary_json_is_complete_and_valid)
{
    static job_config cfg;
    char err[512], path[600];
    CHECK(config_load(&cfg, make_job(""), NULL, err, sizeof err) == 0);
    dataset d = {.n = 300, .c = 1, .h = 10, .w = 10, .classes = 10};
    model m;
    CHECK(model_build(&m, cfg.path, cfg.layers, cfg.nlayers, 1, 10, 10, 10, 0, err, sizeof err) == 0);
    exec_plan plan;
    plan_make(&plan, &cfg, &m, 0);
    epoch_record e[2] = {{.epoch = 4, .train_loss = 1.5, .train_acc = 0.5, .test_loss = NAN,
                          .test_acc = NAN, .seconds = 2, .images_per_s = 150, .task_share = 0.9},
                         {.epoch = 5, .train_loss = 0.5, .train_acc = 0.8, .test_loss = NAN,
                          .test_acc = NAN}};
    rt_stats st = {.tasks = 10, .task_share = 0.95, .nkinds = 1};
    st.kinds[0] = (rt_kind_stats){.name = "conv\"forward", .count = 10, .busy_s = 0.5};
    run_log log = {0};
    for (int i = 0; i < 2; i++) {
        char *csv = report_epoch_csv(&e[i]), *json = report_epoch_json(&e[i], NULL, &st);
        CHECK(run_log_add(&log, e[i].epoch, csv, json) == 0);
        free(csv), free(json);
    }
    report_input in = {&cfg, &d, NULL, &m, &plan, 2, &log, &st, &st, NULL, 3, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    snprintf(path, sizeof path, "%s/summary.json", test_tmpdir());
    setenv("FRUGAL_INPUT", "fl\"oats", 1);   /* a switch set, and recorded as it was read */
    env_switches_read();
    setenv("FRUGAL_INPUT", "bytes", 1);
    CHECKF(report_write(path, &in, err, sizeof err) == 0, "%s", err);
    unsetenv("FRUGAL_INPUT");
    env_switches_read();
    char *text = slurp(path, NULL);
    const char *env = strstr(text, "\"environment\": {"),
               *input = env ? strstr(env, "\"FRUGAL_INPUT\": \"fl\\\"oats\"") : NULL;
    CHECKF(input && input < strchr(env, '}'), "%s", text);
    size_t n = text ? strlen(text) : 0;
    CHECK(strstr(text, "\"epoch\": 4") && strstr(text, "\"epoch\": 5"));
    CHECK(strstr(text, "\"test_acc\": null"));            /* no NaN in JSON */
    CHECK(strstr(text, "\"conv\\\"forward\""));          /* strings escaped */
    CHECK(strstr(text, "\"train_samples\": 300") && strstr(text, "\"grain\": 3"));
    CHECK(strstr(text, "\"resumed_after_epoch\": 3"));
    char pages[160];
    snprintf(pages, sizeof pages, "\"huge_pages\": \"%s\"", large_alloc_huge_pages());
    CHECKF(strstr(text, pages), "%s", pages);
    CHECK(n > 2 && text[n - 2] == '}');
    free(text);
    CHECK(report_write("/nonexistent/dir/summary.json", &in, err, sizeof err) == -1);
    CHECK(strstr(err, "/nonexistent/dir/summary.json.tmp: cannot create") != NULL);
    run_log_free(&log);
}

/* The number after "key": in text (NAN when absent). */
static double json_number(const char *text, const char *key)
{
    char quoted[80];
    snprintf(quoted, sizeof quoted, "\"%s\": ", key);
    const char *at = text ? strstr(text, quoted) : NULL;
    return at ? strtod(at + strlen(quoted), NULL) : NAN;
}

/* Following the run batch by batch (the carbon intensity, the progress line) reads the energy
 * sampler's latest figures and samples no sensor: an NVML sample took 2 ms in a VM, and held a
 * GPU's batches at one per 3.6 ms. 1200 batches (batch 1), and no more samples than the sampler
 * takes at its rate over the run, plus the run's own fresh readings (a few an epoch: its
 * start, each pass's end, the placement's window): the bound grows with the time taken, whatever the machine's speed. */
TEST(run_follows_its_batches_without_sampling_the_sensors)
{
    static const char *const sets[] = {"job.batch=1", "job.epochs=4", "data.test_limit=1",
                                       "energy.baseline_seconds=0", NULL};
    CHECK(train_job(make_job(""), sets, 0, NULL) == 0);
    char *text = slurp(run_file("summary.json"), NULL);
    const char *process = text ? strstr(text, "\"this_process\"") : NULL;
    double samples = json_number(text, "sampler_samples"), hz = json_number(text, "sampler_hz"),
           seconds = json_number(process, "joules") / json_number(process, "watts");
    CHECKF(samples > 0 && hz > 0 && seconds > 0, "samples %g at %g Hz in %g s", samples, hz,
           seconds);
    CHECKF(samples <= hz * seconds + 10 * 4 + 10, "%g samples for 1200 batches in %.2f s at %g Hz",
           samples, seconds, hz);
    free(text);
}

/* Whether the mapping that holds p is advised as huge pages ("hg" in its smaps VmFlags). */
static int advised_huge(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int inside = 0, advised = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            inside = (unsigned long)p >= lo && (unsigned long)p < hi;
        else if (inside && !strncmp(line, "VmFlags:", 8))
            advised = strstr(line, " hg") != NULL;
    }
    if (f)
        fclose(f);
    return advised;
}

/* Activations and scratch: zeroed, aligned, and from 2 MB up on pages advised as huge where
 * the kernel has transparent huge pages (summary.json says which). */
TEST(train_large_buffers_are_zeroed_aligned_and_advised_huge)
{
    size_t sizes[] = {100, (2u << 20) - 4, (2u << 20) + 12, 9u << 20};
    int thp = strncmp(large_alloc_huge_pages(), "off", 3) != 0;
    for (int i = 0; i < 4; i++) {
        unsigned char *p = large_alloc(sizes[i]);
        CHECK(p != NULL);
        size_t zeros = 0;
        for (size_t k = 0; p && k < sizes[i]; k++)
            zeros += p[k] == 0;
        CHECK(zeros == sizes[i]);
        CHECK((uintptr_t)p % (sizes[i] >= (2u << 20) ? (2u << 20) : 64) == 0);
        if (thp && sizes[i] >= (2u << 20))   /* smaller ones may lie in a freed big one */
            CHECKF(advised_huge(p), "%zu bytes", sizes[i]);
        free(p);
    }
}

/* Energy in the summary: a fake RAPL package, one epoch, its joules split among task kinds. */
TEST(train_summary_reports_energy_by_device_and_task_kind)
{
    static job_config cfg;
    char err[512], path[1300], tree[600];
    CHECK(config_load(&cfg, make_job(""), NULL, err, sizeof err) == 0);
    cfg.baseline_watts = 2;
    snprintf(tree, sizeof tree, "%s/sys", test_tmpdir());
    setenv("FRUGAL_SYSFS_ROOT", test_tmpdir(), 1);
    env_switches_read();
    const char *files[][2] = {{"class", NULL}, {"class/powercap", NULL},
                              {"class/powercap/intel-rapl:0", NULL},
                              {"class/powercap/intel-rapl:0/name", "package-0\n"},
                              {"class/powercap/intel-rapl:0/max_energy_range_uj", "262143328850\n"},
                              {"class/powercap/intel-rapl:0/energy_uj", "1000\n"}};
    mkdir(tree, 0755);
    for (int i = 0; i < 6; i++) {
        snprintf(path, sizeof path, "%s/%s", tree, files[i][0]);
        if (!files[i][1]) {
            mkdir(path, 0755);
            continue;
        }
        FILE *f = fopen(path, "w");
        fputs(files[i][1], f);
        fclose(f);
    }
    energy_run er;
    CHECKF(energy_run_begin(&er, &cfg, stderr, err, sizeof err) == 0, "%s", err);
    energy_run_epoch_begin(&er);
    FILE *f = fopen(path, "w");   /* energy_uj: 9 J more */
    fputs("9001000\n", f);
    fclose(f);
    rt_stats st = {.tasks = 40, .nkinds = 2};
    st.kinds[0] = (rt_kind_stats){.name = "conv_forward", .count = 10, .busy_s = 0.3};
    st.kinds[1] = (rt_kind_stats){.name = "sgd", .count = 30, .busy_s = 0.6};
    epoch_record e = {.epoch = 1, .train_loss = 1, .train_acc = 0.5, .test_loss = NAN,
                      .test_acc = NAN, .samples = 300};
    epoch_energy *en = &e.energy;
    energy_run_pass_end(&er, 300, &en->f);      /* the training pass */
    energy_run_pass_end(&er, 0, &en->test);     /* no test set: nothing more */
    energy_run_split_kinds(&er, &st, en);
    CHECK_NEAR(en->f.joules, 9.0, 1e-9, 0);
    CHECK_NEAR(en->kind_j[0], 3.0, 1e-9, 0);
    CHECK_NEAR(en->kind_j[1], 6.0, 1e-9, 0);
    CHECK_NEAR(en->f.joules_per_image, 0.03, 1e-12, 0);
    dataset d = {.n = 300, .c = 1, .h = 10, .w = 10, .classes = 10};
    model m;
    CHECK(model_build(&m, cfg.path, cfg.layers, cfg.nlayers, 1, 10, 10, 10, 0, err, sizeof err) == 0);
    exec_plan plan;
    plan_make(&plan, &cfg, &m, 0);
    run_log log = {0};
    char *csv = report_epoch_csv(&e), *json = report_epoch_json(&e, &er, &st);
    CHECK(run_log_add(&log, 1, csv, json) == 0);
    free(csv), free(json);
    report_input in = {&cfg, &d, NULL, &m, &plan, 2, &log, &st, &st, &er, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    snprintf(path, sizeof path, "%s/summary.json", test_tmpdir());
    CHECKF(report_write(path, &in, err, sizeof err) == 0, "%s", err);
    energy_run_end(&er);
    char *text = slurp(path, NULL);
    size_t n = text ? strlen(text) : 0;
    CHECK(strstr(text, "\"source\": \"measured: rapl package-0\"") && strstr(text, "\"estimated\": false"));
    CHECK(strstr(text, "\"energy\": {\"joules\": 9,") && strstr(text, "\"devices\": {\"package-0\": 9}"));
    CHECK(strstr(text, "{\"name\": \"sgd\", \"tasks\": 30, \"joules\": 6, \"joules_per_task\": 0.2}"));
    CHECK(strstr(text, "\"idle_baseline_watts\": 2") && strstr(text, "\"idle_baseline\": \"configured\""));
    CHECK(n > 2 && text[n - 2] == '}');
    free(text);
    run_log_free(&log);
}
