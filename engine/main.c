/* frugal: the command-line entry point. */
#include "engine/checkpoint.h"
#include "engine/config.h"
#include "engine/dataset.h"
#include "engine/energy_run.h"
#include "engine/model.h"
#include "engine/report.h"
#include "engine/train.h"
#include "energy/model.h"
#include "ops/cpu.h"
#include "ops/peak.h"
#include "runtime/clock.h"
#include "runtime/runtime.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_SETS 64

static int usage(FILE *f)
{
    fprintf(f, "usage: frugal COMMAND [ARGS]\n\n"
               "commands:\n"
               "  train JOB.cfg [--set section.key=value]... [--workers N] [--trace FILE] [--resume]\n"
               "            train the model the job file describes; a checkpoint is written\n"
               "            atomically after every epoch, --resume continues from it\n"
               "  eval CHECKPOINT IMAGES.idx LABELS.idx | CHECKPOINT CIFAR_BATCH[,BATCH...]\n"
               "            accuracy and confusion matrix of a trained model\n"
               "  predict CHECKPOINT IMAGES.idx | CHECKPOINT IMAGE.pgm|.ppm...\n"
               "            the class of each image\n"
               "  info      this machine: CPUs, timer, kernel path, measured peak\n"
               "  energy [--seconds N] [--rate HZ]\n"
               "            every energy sensor found (readable or not, and why), where the\n"
               "            figures come from, and N seconds of live power\n"
               "  help      this text\n");
    return f == stderr ? 2 : 0;
}

static int cmd_info(void)
{
    printf("cpus online: %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
    printf("task timer: %s\n", clock_source());
    ops_isa isa = ops_isa_active();
    printf("kernel path: %s (best this CPU supports: %s)\n", ops_isa_name(isa),
           ops_isa_name(ops_isa_supported()));
    printf("measured FMA peak, one core: %.1f GFLOP/s\n", ops_peak_gflops(isa, 0.2));
    return 0;
}

static int cmd_energy(int argc, char **argv)
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
    energy_meter *m = energy_meter_open(&(energy_options){rate, MODEL_IDLE_W, MODEL_CORE_W});
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

/* mkdir -p */
static int make_dirs(const char *path, char *err, size_t errlen)
{
    char buf[CONFIG_PATH];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        char c = *p;
        if (c == '/' || c == 0) {
            *p = 0;
            if (mkdir(buf, 0777) && errno != EEXIST) {
                snprintf(err, errlen, "%s: cannot create: %s", buf, strerror(errno));
                return -1;
            }
            *p = c;
        }
        if (!c)
            return 0;
    }
}

/* A live line on a terminal (at most 4 times a second); nothing when the output is a file. */
typedef struct progress { int tty; double last; energy_run *energy; } progress;

static void show_progress(void *ctx, int epoch, long done, long total, double seconds)
{
    progress *p = ctx;
    if (!p->tty || seconds - p->last < 0.25 || done <= 0)
        return;
    p->last = seconds;
    double rate = (double)done / seconds, joules, watts;
    energy_run_so_far(p->energy, &joules, &watts);
    printf("\r  epoch %d  %3.0f%%  %ld/%ld images  %.0f img/s  %.0f W  %.0f J  ETA %.0f s   ",
           epoch, 100.0 * (double)done / (double)total, done, total, rate, watts, joules,
           (double)(total - done) / rate);
    fflush(stdout);
}

static int load_data(const job_config *cfg, dataset *train, dataset *test, int *have_test,
                     char *err, size_t errlen)
{
    *have_test = 0;
    int rc = cfg->format == DATA_IDX
                 ? dataset_load_idx(train, cfg->train_images, cfg->train_labels, cfg->limit, err, errlen)
                 : dataset_load_cifar10(train, cfg->train_files, cfg->limit, err, errlen);
    if (rc || dataset_reshape(train, cfg->resize_h, cfg->resize_w, cfg->channels, err, errlen))
        return -1;
    if (cfg->format == DATA_IDX ? cfg->test_images[0] != 0 : cfg->test_file[0] != 0) {
        rc = cfg->format == DATA_IDX
                 ? dataset_load_idx(test, cfg->test_images, cfg->test_labels, cfg->test_limit, err, errlen)
                 : dataset_load_cifar10(test, cfg->test_file, cfg->test_limit, err, errlen);
        if (rc || dataset_reshape(test, train->h, train->w, train->c, err, errlen))
            return -1;
        *have_test = 1;
    }
    return 0;
}

static int cmd_train(int argc, char **argv)
{
    const char *job = NULL, *trace = NULL, *sets[MAX_SETS + 2];
    int resume = 0;
    char workers_set[64];
    int nsets = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--set") && i + 1 < argc && nsets < MAX_SETS)
            sets[nsets++] = argv[++i];
        else if (!strcmp(argv[i], "--workers") && i + 1 < argc) {
            snprintf(workers_set, sizeof workers_set, "execution.workers=%s", argv[++i]);
            sets[nsets++] = workers_set;
        } else if (!strcmp(argv[i], "--trace") && i + 1 < argc)
            trace = argv[++i];
        else if (!strcmp(argv[i], "--resume"))
            resume = 1;
        else if (!strcmp(argv[i], "--help"))
            return usage(stdout);
        else if (argv[i][0] != '-' && !job)
            job = argv[i];
        else {
            fprintf(stderr, "frugal train: unexpected argument '%s'\n", argv[i]);
            return usage(stderr);
        }
    }
    if (!job)
        return usage(stderr);
    sets[nsets] = NULL;

    static job_config cfg;
    char err[1024];
    dataset train = {0}, test = {0};
    int have_test;
    model m;
    if (config_load(&cfg, job, sets, err, sizeof err) ||
        load_data(&cfg, &train, &test, &have_test, err, sizeof err) ||
        config_check_shapes(&cfg, train.c, train.h, train.w, train.classes, err, sizeof err) ||
        model_build(&m, &cfg, train.c, train.h, train.w, train.classes, err, sizeof err) ||
        make_dirs(cfg.output, err, sizeof err)) {
        fprintf(stderr, "frugal: %s\n", err);
        dataset_free(&train);
        dataset_free(&test);
        return 1;
    }
    model_init(&m, cfg.seed);
    char ckpt[CONFIG_PATH + 32];
    snprintf(ckpt, sizeof ckpt, "%s/checkpoint.bin", cfg.output);
    int done = 0;
    if (resume && checkpoint_load(&m, &done, ckpt, err, sizeof err)) {
        fprintf(stderr, "frugal: cannot resume: %s\n", err);
        model_free(&m);
        dataset_free(&train);
        dataset_free(&test);
        return 1;
    }
    rt_runtime *rt = rt_create(&(rt_config){.workers = cfg.workers, .trace = trace != NULL});
    trainer *t = rt ? trainer_create(&cfg, &m, rt, &train, have_test ? &test : NULL, err, sizeof err)
                    : NULL;
    char csv_path[CONFIG_PATH + 32];
    snprintf(csv_path, sizeof csv_path, "%s/metrics.csv", cfg.output);
    FILE *csv = t ? fopen(csv_path, resume ? "a" : "w") : NULL;
    epoch_result *results = NULL;
    epoch_energy *energies = NULL;
    energy_run er = {0};
    int rc = 1;
    if (!t || !csv) {
        fprintf(stderr, "frugal: %s\n", !t ? err : strerror(errno));
        goto out;
    }
    if (!resume)
        fprintf(csv, "epoch,train_loss,train_acc,test_loss,test_acc,seconds,images_per_s,task_share,"
                     "energy_j,power_w,mj_per_image,app_energy_j,edp_js,gco2e,energy_source\n");
    else
        printf("resuming after epoch %d from %s\n", done, ckpt);
    printf("frugal train %s: %ld images %dx%dx%d, %s%ld test images; %d layers; batch %d, "
           "%d samples per task; %d workers, kernels %s\n",
           job, train.n, train.h, train.w, train.c, have_test ? "" : "no test set, ", test.n,
           m.nlayers, cfg.batch, train_grain(&cfg, &m), rt_workers(rt), ops_isa_name(ops_isa_active()));
    char summary[CONFIG_PATH + 32];
    snprintf(summary, sizeof summary, "%s/summary.json", cfg.output);
    results = calloc((size_t)cfg.epochs, sizeof *results);
    energies = calloc((size_t)cfg.epochs, sizeof *energies);
    int nresults = 0;
    long images = 0;
    if (!results || !energies) {
        fprintf(stderr, "frugal: out of memory\n");
        goto out;
    }
    if (energy_run_begin(&er, &cfg, stdout, err, sizeof err)) {
        fprintf(stderr, "frugal: %s\n", err);
        goto out;
    }
    const char *quality = energy_meter_estimated(er.meter) ? "estimated" : "measured";
    rt_stats st;
    progress prog = {isatty(STDOUT_FILENO), 0, &er};
    trainer_on_progress(t, show_progress, &prog);
    for (int e = done + 1; e <= cfg.epochs; e++) {
        epoch_result r;
        prog.last = 0;
        energy_run_epoch_begin(&er);
        if (trainer_epoch(t, e, &r, err, sizeof err)) {
            fprintf(stderr, "frugal: epoch %d: %s\n", e, err);
            goto out;
        }
        rt_stats_get(rt, &st);
        epoch_energy *en = &energies[nresults];
        energy_run_epoch_end(&er, r.samples, &st, en);
        images += r.samples;
        if (prog.tty)
            printf("\r%*s\r", 96, "");   /* clear the progress line */
        printf("epoch %d/%d  loss %.4f  train acc %.2f%%  test acc %.2f%%  %.2f s  %.0f img/s  "
               "tasks %.0f%% of worker time  %.1f J %s, %.1f W, %.2f mJ/img\n", e, cfg.epochs,
               r.train_loss, 100 * r.train_acc, 100 * r.test_acc, r.seconds, r.images_per_s,
               100 * r.task_share, en->f.joules, quality, en->f.watts, 1e3 * en->f.joules_per_image);
        fflush(stdout);
        fprintf(csv, "%d,%.6f,%.6f,%.6f,%.6f,%.4f,%.1f,%.4f,%.3f,%.3f,%.4f,%.3f,%.4g,%.6f,%s\n", e,
                r.train_loss, r.train_acc, r.test_loss, r.test_acc, r.seconds, r.images_per_s,
                r.task_share, en->f.joules, en->f.watts, 1e3 * en->f.joules_per_image,
                en->f.app_joules, en->f.edp, en->f.gco2e, quality);
        fflush(csv);
        results[nresults++] = r;
        if (checkpoint_save(&m, e, ckpt, err, sizeof err) ||
            report_write(summary, &cfg, &train, have_test ? &test : NULL, train_grain(&cfg, &m),
                         rt_workers(rt), results, nresults, done + 1, &st, &er, energies, err,
                         sizeof err)) {
            fprintf(stderr, "frugal: %s\n", err);
            goto out;
        }
    }
    rc = 0;
    rt_stats_get(rt, &st);   /* the last epoch's, by task kind */
    rt_stats_print(&st, stdout);
    if (nresults)
        energy_run_print(&er, &energies[nresults - 1], &st, images, stdout);
    if (trace && rt_trace_write(rt, trace)) {
        fprintf(stderr, "frugal: %s: cannot write the trace: %s\n", trace, strerror(errno));
        rc = 1;
    }
    printf("metrics: %s, summary: %s, checkpoint: %s\n", csv_path, summary, ckpt);
out:
    if (er.meter)
        energy_run_end(&er);
    free(results);
    free(energies);
    if (csv)
        fclose(csv);
    trainer_destroy(t);
    rt_destroy(rt);
    model_free(&m);
    dataset_free(&train);
    dataset_free(&test);
    return rc;
}

/* eval and predict: the model from the checkpoint, the images shaped like its input, one forward
 * pass on the runtime. */
static int cmd_classify(int argc, char **argv, int with_labels)
{
    int pnm = !with_labels && argc >= 4 &&
              (strstr(argv[3], ".pgm") || strstr(argv[3], ".ppm") || argc > 4);
    if (argc < 4 || (argc > 5 && !pnm)) {
        fprintf(stderr, "usage: frugal %s\n", with_labels
                ? "eval CHECKPOINT IMAGES.idx LABELS.idx | CHECKPOINT CIFAR_BATCH[,BATCH...]"
                : "predict CHECKPOINT IMAGES.idx | CHECKPOINT IMAGE.pgm|.ppm...");
        return 2;
    }
    char err[1024];
    model m;
    int epoch = 0;
    dataset d = {0};
    if (checkpoint_open_model(&m, &epoch, argv[2], err, sizeof err)) {
        fprintf(stderr, "frugal: %s\n", err);
        return 1;
    }
    const layer *in = &m.layers[0];
    int rc = pnm ? dataset_load_pnm(&d, (const char *const *)argv + 3, argc - 3, in->in_c,
                                    in->in_h, in->in_w, m.classes, err, sizeof err)
             : !with_labels ? dataset_load_idx(&d, argv[3], NULL, 0, err, sizeof err)
             : argc == 5  ? dataset_load_idx(&d, argv[3], argv[4], 0, err, sizeof err)
                          : dataset_load_cifar10(&d, argv[3], 0, err, sizeof err);
    if (!rc && d.classes != m.classes) {
        snprintf(err, sizeof err, "the data has %d classes, the model %d", d.classes, m.classes);
        rc = -1;
    }
    if (rc || dataset_reshape(&d, in->in_h, in->in_w, in->in_c, err, sizeof err)) {
        fprintf(stderr, "frugal: %s\n", err);
        model_free(&m);
        dataset_free(&d);
        return 1;
    }
    static job_config cfg;   /* only what evaluation uses */
    cfg.batch = 64;
    cfg.epochs = 1;
    rt_runtime *rt = rt_create(&(rt_config){.workers = 0});
    trainer *t = trainer_create(&cfg, &m, rt, &d, NULL, err, sizeof err);
    int *pred = calloc((size_t)d.n, sizeof *pred);
    double loss, acc;
    rc = 1;
    if (!t || !pred || trainer_evaluate(t, &d, pred, &loss, &acc, err, sizeof err)) {
        fprintf(stderr, "frugal: %s\n", t && pred ? err : "out of memory");
        goto out;
    }
    if (!with_labels) {
        for (long i = 0; i < d.n; i++)
            if (pnm)
                printf("%s %d\n", argv[3 + i], pred[i]);
            else
                printf("%ld %d\n", i, pred[i]);
    } else {
        printf("%s (after epoch %d) on %ld images: accuracy %.2f%%, loss %.4f\n", argv[2], epoch,
               d.n, 100 * acc, loss);
        printf("confusion matrix (rows: true class, columns: predicted)\n     ");
        for (int k = 0; k < m.classes; k++)
            printf(" %5d", k);
        printf("\n");
        for (int r = 0; r < m.classes; r++) {
            printf("%4d ", r);
            for (int k = 0; k < m.classes; k++) {
                long count = 0;
                for (long i = 0; i < d.n; i++)
                    count += d.labels[i] == r && pred[i] == k;
                printf(" %5ld", count);
            }
            printf("\n");
        }
    }
    rc = 0;
out:
    free(pred);
    trainer_destroy(t);
    rt_destroy(rt);
    model_free(&m);
    dataset_free(&d);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage(stderr);
    if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
        return usage(stdout);
    if (!strcmp(argv[1], "info"))
        return cmd_info();
    if (!strcmp(argv[1], "energy"))
        return cmd_energy(argc, argv);
    if (!strcmp(argv[1], "train"))
        return cmd_train(argc, argv);
    if (!strcmp(argv[1], "eval"))
        return cmd_classify(argc, argv, 1);
    if (!strcmp(argv[1], "predict"))
        return cmd_classify(argc, argv, 0);
    fprintf(stderr, "frugal: unknown command '%s'\n", argv[1]);
    return usage(stderr);
}
