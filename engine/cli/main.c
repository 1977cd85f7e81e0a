/* frugal: the command-line entry point. */
#include "common/clock.h"
#include "common/env_switches.h"
#include "common/text.h"
#include "energy/account.h"
#include "energy/carbon.h"
#include "energy/power_model.h"
#include "engine/cli/average_cmd.h"
#include "engine/cli/energy_cmd.h"
#include "engine/cli/launch_run.h"
#include "engine/cli/run.h"
#include "engine/cli/signals.h"
#include "engine/cli/simulate_cmd.h"
#include "engine/cluster/node.h"
#include "engine/job/dataset.h"
#include "engine/job/devices.h"
#include "engine/model/checkpoint.h"
#include "engine/placement/operating_point.h"
#include "engine/report/html_report.h"
#include "engine/train/trainer.h"
#include "netio/key.h"
#include "netio/secure_speed.h"
#include "ops/cpu.h"
#include "ops/peak.h"
#include "runtime/runtime.h"
#include "version.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int usage(FILE *f)
{
    fprintf(f, "usage: frugal COMMAND [ARGS]\n\n"
               "commands:\n"
               "  train JOB.cfg [--set section.key=value]... [--workers N] [--devices D] [--trace FILE]\n"
               "            [--policy P] [--resume | --overwrite] [--verbose]\n"
               "            train the model the job file describes; a checkpoint is written\n"
               "            atomically after every epoch (and on SIGINT, SIGTERM or SIGHUP, at\n"
               "            the next batch), --resume continues from it; D: auto, cpu, opencl or\n"
               "            cpu+opencl; P (time, energy, edp or carbon) decides how many workers\n"
               "            to keep from what it measures\n"
               "            --listen ADDR:PORT --key KEYFILE [--allow FILE] [--timeout S] [--wait-for N]:\n"
               "            other machines may join (at any time; N of them waited for, up to 60 s)\n"
               "            and compute part of every batch (same weights as on one machine); with\n"
               "            --allow, only the identities listed in FILE (re-read as it changes)\n"
               "            with [cluster] mode = gossip: --listen ADDR:PORT --key KEYFILE\n"
               "            [--peer HOST:PORT]... [--advertise HOST:PORT]: a peer among peers, no\n"
               "            coordinator; any one peer up introduces the rest\n"
               "            started by srun, mpirun or inside an OAR job: rank 0 coordinates (or\n"
               "            every rank is a gossip peer) and the others join it, with no other\n"
               "            command ([--port P] [--rendezvous DIR] [--launch-timeout S]\n"
               "            [--launcher auto|none] [--identity FILE, each node's, with --allow];\n"
               "            --key FILE, else rank 0 makes one in DIR, default .frugal-launch,\n"
               "            which every host must share); docs/batch-systems.md\n"
               "  simulate SCENARIO.cfg [--set scenario.KEY=VALUE]... [-o DIR] [--search]\n"
               "            time, joules, gCO2e and bytes of a job on the scenario's machines\n"
               "            (simulated from their profiles; predicts cost, not accuracy); --search:\n"
               "            how many machines, which ones and which mode, for its policy\n"
               "            --calibrate RUN_DIR... -o PROFILE: a machine's profile from its runs\n"
               "  average MODEL.bin MODEL.bin... -o OUT.bin\n"
               "            the mean of models of one job (e.g. the peers' of a gossip run)\n"
               "  join HOST:PORT --key KEYFILE [--identity FILE] [--workers N] [--devices D] [--timeout S]\n"
               "            [--linger S]: how long to try to join a coordinator not up yet, or to rejoin\n"
               "            one lost or paused (Ctrl-C on it; default: the timeout)\n"
               "            [--slowdown F] [--power-profile IDLE,ONE,ALL]\n"
               "            [--carbon G | --carbon-file FILE | --carbon-trace FILE]\n"
               "            [--renewable-trace FILE] [--power-budget W] [--operating-point SETTING]\n"
               "            compute chunks for the coordinator at HOST:PORT until it ends training,\n"
               "            on this machine's CPU and the OpenCL devices D (default: the job's);\n"
               "            this machine's power profile (watts) and grid carbon (g CO2e/kWh, or a\n"
               "            file re-read for it, or traces replayed on the job's clock) feed the\n"
               "            coordinator's placement and participation policies; under its\n"
               "            own power budget it parks workers (unless --workers pins them); its\n"
               "            power caps and clocks as SETTING says ([placement] operating_point's\n"
               "            form; default: the job's)\n"
               "  report RUN_DIR [RUN_DIR...] [-o REPORT.html]\n"
               "            one self-contained HTML page (charts, no network) of the runs' output\n"
               "            folders, overlaid; default RUN_DIR/report.html for one run, report.html\n"
               "            for several (frugal train writes RUN_DIR/report.html after each epoch)\n"
               "  keygen KEYFILE | keygen --identity FILE\n"
               "            a new key for a cluster: copy it to every machine (mode 600); or this\n"
               "            machine's identity (FILE, and its public line in FILE.pub for --allow)\n"
               "  eval CHECKPOINT IMAGES.idx LABELS.idx | CHECKPOINT CIFAR_BATCH[,BATCH...]\n"
               "            accuracy and confusion matrix of a trained model\n"
               "  predict CHECKPOINT IMAGES.idx | CHECKPOINT IMAGE.pgm|.ppm...\n"
               "            the class of each image\n"
               "  info      this machine: CPUs, timer, kernel path, measured peak, cipher speeds,\n"
               "            OpenCL devices\n"
               "  --version the commit, the compiler and the kernel paths built in\n"
               "  energy [--seconds N] [--rate HZ]\n"
               "            every energy sensor found (readable or not, and why), where the\n"
               "            figures come from, and N seconds of live power\n"
               "  help      this text\n");
    return f == stderr ? 2 : 0;
}

/* What protecting a cluster's traffic costs this CPU (netio/secure_speed.h). */
static void print_cipher_speeds(void)
{
    double aes = secure_speed(1, 0.1), chacha = secure_speed(0, 0.1);
    printf("cluster traffic, sealed and opened by one core: aes256gcm ");
    if (aes > 0)
        printf("%.2f GB/s (used where both ends have AES-NI)", aes / 1e9);
    else
        printf(aes == 0 ? "not here (no AES-NI)" : "unmeasured (libsodium failed)");
    if (chacha > 0)
        printf(", xchacha20poly1305 %.2f GB/s\n", chacha / 1e9);
    else
        printf(", xchacha20poly1305 unmeasured (libsodium failed)\n");
}

static int cmd_info(void)
{
    printf("cpus online: %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
    printf("task timer: %s\n", clock_source());
    ops_isa isa = ops_isa_active();
    printf("kernel path: %s (best this CPU supports: %s)\n", ops_isa_name(isa),
           ops_isa_name(ops_isa_supported()));
    printf("measured FMA peak, one core: %.1f GFLOP/s\n", ops_peak_gflops(isa, 0.2));
    print_cipher_speeds();
    fflush(stdout);
    return devices_print_info(stdout);
}

/* `frugal keygen --identity FILE`: this machine's key pair, and its public line for the
 * coordinator's allow file, in FILE.pub and on stdout. */
static int keygen_identity(const char *path)
{
    char err[600], line[200], pub[760];
    if (netio_identity_generate(path, line, sizeof line, err, sizeof err)) {
        fprintf(stderr, "frugal keygen: %s\n", err);
        return 1;
    }
    snprintf(pub, sizeof pub, "%s.pub", path);
    FILE *f = fopen(pub, "wx");
    int ok = f && fprintf(f, "%s\n", line) > 0;
    if (f && fclose(f))
        ok = 0;
    printf("identity written to %s (keep it on this machine, mode 600); its public line%s%s%s:\n%s\n"
           "add that line to the coordinator's allow file (frugal train --allow FILE)\n", path,
           ok ? ", also in " : "", ok ? pub : "", ok ? "" : " (not saved: FILE.pub exists or cannot be written)", line);
    return 0;
}

static int cmd_keygen(int argc, char **argv)
{
    char err[600];
    if (argc == 4 && !strcmp(argv[2], "--identity"))
        return keygen_identity(argv[3]);
    if (argc == 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
        printf("usage: frugal keygen KEYFILE | frugal keygen --identity FILE\n"
               "  writes a new cluster key (or this machine's identity) to the file, mode 600\n");
        return 0;
    }
    if (argc != 3 || argv[2][0] == '-') {   /* an option mistyped is not a file to write */
        fprintf(stderr, "usage: frugal keygen KEYFILE | frugal keygen --identity FILE\n");
        return 2;
    }
    if (netio_key_generate(argv[2], err, sizeof err)) {
        fprintf(stderr, "frugal keygen: %s\n", err);
        return 1;
    }
    printf("key written to %s: copy it to every machine of the cluster (keep it mode 600)\n",
           argv[2]);
    return 0;
}

/* A wrong command line: "frugal " and what is wrong on stderr; 2, its exit status. */
#define wrong(...) text_error(2, "frugal ", __VA_ARGS__)

/* s, the value of option opt of `frugal cmd`, as a number from lo to hi: else -1, having said
 * what it should be (expects). A whole number where whole. */
static int number_arg(const char *cmd, const char *opt, const char *s, double lo, double hi,
                      int whole, const char *expects, double *out)
{
    char *end;
    double v = whole ? (double)strtol(s, &end, 10) : strtod(s, &end);
    if (!*s || *end || !(v >= lo && v <= hi)) {
        wrong("%s: %s %s: %s", cmd, opt, s, expects);
        return -1;
    }
    *out = v;
    return 0;
}

/* A time limit: seconds from 0.1 to 3600. */
static int seconds_arg(const char *cmd, const char *opt, const char *s, double *out)
{
    return number_arg(cmd, opt, s, 0.1, 3600, 0, "seconds from 0.1 to 3600", out);
}

/* One of join's options that take a value (opt v) into o: 0, 2 when v is wrong (said so), -1
 * when opt is none of them. */
static int join_option(node_options *o, const char *opt, const char *v)
{
    double x;
    char expects[96], why[200];
    op_setting checked;
    if (!strcmp(opt, "--key")) {
        o->key_path = v;
    } else if (!strcmp(opt, "--identity")) {
        o->identity_path = v;
    } else if (!strcmp(opt, "--workers")) {   /* as in train: 0, one per core */
        snprintf(expects, sizeof expects, "a number from 0 (one per core) to %d",
                 CONFIG_MAX_WORKERS);
        if (number_arg("join", opt, v, 0, CONFIG_MAX_WORKERS, 1, expects, &x))
            return 2;
        o->workers = x ? (int)x : o->workers;
        o->workers_pinned = 1;
    } else if (!strcmp(opt, "--power-budget")) {
        if (number_arg("join", opt, v, DBL_MIN, 1e6, 0, "watts, above 0", &o->power_budget_w))
            return 2;
    } else if (!strcmp(opt, "--operating-point")) {
        o->operating_point = v;
        if (op_setting_parse(v, &checked, why, sizeof why))
            return wrong("join: %s %s: %s", opt, v, why);
    } else if (!strcmp(opt, "--timeout")) {
        if (seconds_arg("join", opt, v, &o->timeout_s))
            return 2;
    } else if (!strcmp(opt, "--linger")) {
        if (seconds_arg("join", opt, v, &o->linger_s))
            return 2;
    } else if (!strcmp(opt, "--slowdown")) {
        if (number_arg("join", opt, v, 1, 100, 0, "a factor from 1 to 100", &o->slowdown))
            return 2;
    } else if (!strcmp(opt, "--power-profile")) {
        if (power_model_profile_parse(v, 1e5, o->profile_w))
            return wrong("join: %s %s: expected IDLE,ONE,ALL in watts (idle, one core busy, all "
                         "busy), each at least the one before", opt, v);
    } else if (!strcmp(opt, "--carbon")) {
        snprintf(expects, sizeof expects, "grams of CO2e per kWh, 0 to %g", CARBON_MAX);
        if (number_arg("join", opt, v, 0, CARBON_MAX, 0, expects, &o->carbon_g_per_kwh))
            return 2;
    } else if (!strcmp(opt, "--carbon-file")) {
        o->carbon_file = v;
    } else if (!strcmp(opt, "--carbon-trace")) {
        o->carbon_trace = v;
    } else if (!strcmp(opt, "--renewable-trace")) {
        o->renewable_trace = v;
    } else if (!strcmp(opt, "--devices")) {
        o->devices = v;
        if (config_devices(v) < 0)
            return wrong("join: %s %s: expected %s", opt, v, CONFIG_DEVICES);
    } else {
        return -1;
    }
    return 0;
}

static int cmd_join(int argc, char **argv)
{
    node_options o = {.workers = (int)sysconf(_SC_NPROCESSORS_ONLN), .timeout_s = 10, .slowdown = 1,
                      .carbon_g_per_kwh = CARBON_G_PER_KWH, .out = stdout};
    for (int i = 2; i < argc; i++) {
        int taken = i + 1 < argc ? join_option(&o, argv[i], argv[i + 1]) : -1;
        if (taken > 0)
            return taken;
        if (taken == 0) {
            i++;
        } else if (argv[i][0] != '-' && !o.coordinator) {
            o.coordinator = argv[i];
        } else {
            fprintf(stderr, "frugal join: unexpected argument '%s'\n", argv[i]);
            return usage(stderr);
        }
    }
    if (o.carbon_file && o.carbon_trace) {
        fprintf(stderr, "frugal join: --carbon-file and --carbon-trace: one source of the grid's "
                        "intensity, not both\n");
        return 2;
    }
    if (!o.coordinator || !o.key_path) {
        fprintf(stderr, "usage: frugal join HOST:PORT --key KEYFILE [--identity FILE] [--workers N] [--devices D] "
                        "[--timeout S] [--slowdown F] [--power-profile IDLE,ONE,ALL] [--carbon G | "
                        "--carbon-file FILE | --carbon-trace FILE] [--renewable-trace FILE] "
                        "[--power-budget W] [--operating-point SETTING]\n");
        return 2;
    }
    if (o.workers < 1)
        o.workers = 1;
    return launch_run_join(&o);
}

/* The command that continues this run: this one, quoted for a shell, with --resume instead of
 * --overwrite (NULL when out of memory). */
static char *resume_command(int argc, char **argv)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    fputs("frugal", f);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--resume") || !strcmp(argv[i], "--overwrite"))
            continue;
        fputc(' ', f);
        text_shell_word(f, argv[i]);
    }
    fputs(" --resume", f);
    if (fclose(f)) {
        free(text);
        return NULL;
    }
    return text;
}

/* train's --set options, and the ones it turns into --set (--workers N: execution.workers=N),
 * in order; argc bounds how many there can be. */
typedef struct train_sets {
    const char **sets;
    char **owned;   /* the ones made here */
    int nsets, nowned;
} train_sets;

/* --OPT V as --set KEY=V: 0, or 2 when out of memory. */
static int set_as(train_sets *ts, const char *key, const char *v)
{
    if (asprintf(&ts->owned[ts->nowned], "%s=%s", key, v) < 0)
        return wrong("train: out of memory");
    ts->sets[ts->nsets++] = ts->owned[ts->nowned++];
    return 0;
}

/* One of train's options that take a value (opt v) into o, lr or ts: 0, 2 when v is wrong
 * (said so), -1 when opt is none of them. */
static int train_option(run_options *o, launch_request *lr, train_sets *ts, const char *opt,
                        const char *v)
{
    double x;
    if (!strcmp(opt, "--set"))
        ts->sets[ts->nsets++] = v;
    else if (!strcmp(opt, "--workers"))
        return set_as(ts, "execution.workers", v);
    else if (!strcmp(opt, "--devices"))
        return set_as(ts, "execution.devices", v);
    else if (!strcmp(opt, "--policy"))
        return set_as(ts, "placement.policy", v);
    else if (!strcmp(opt, "--trace"))
        o->trace = v;
    else if (!strcmp(opt, "--listen"))
        o->listen = v, lr->manual = "--listen";
    else if (!strcmp(opt, "--key"))
        o->key = lr->key = v;
    else if (!strcmp(opt, "--identity"))
        lr->identity = v;
    else if (!strcmp(opt, "--rendezvous"))
        lr->rendezvous = v;
    else if (!strcmp(opt, "--launch-timeout"))
        return seconds_arg("train", opt, v, &lr->wait_s) ? 2 : 0;
    else if (!strcmp(opt, "--port")) {
        if (number_arg("train", opt, v, 1, 65535, 1, "a port from 1 to 65535", &x))
            return 2;
        lr->port = (int)x;
    } else if (!strcmp(opt, "--launcher")) {
        lr->off = !strcmp(v, "none");
        if (!lr->off && strcmp(v, "auto"))
            return wrong("train: --launcher %s: auto or none", v);
    } else if (!strcmp(opt, "--allow"))
        o->allow = v;
    else if (!strcmp(opt, "--peer")) {
        if (o->npeers == RUN_MAX_PEERS)
            return wrong("train: at most %d --peer (the rest are learned from them)",
                         RUN_MAX_PEERS);
        o->peers[o->npeers++] = v;
        lr->manual = lr->manual ? lr->manual : "--peer";
    } else if (!strcmp(opt, "--advertise"))
        o->advertise = v;
    else if (!strcmp(opt, "--timeout"))
        return seconds_arg("train", opt, v, &o->timeout_s) ? 2 : 0;
    else if (!strcmp(opt, "--wait-for")) {   /* 0: none waited for */
        if (number_arg("train", opt, v, 0, 64, 1, "a number of nodes from 0 to 64", &x))
            return 2;
        o->wait_for = (int)x;
    } else
        return -1;
    return 0;
}

/* One of train's switches (no value) into o: 0, or -1 when opt is none of them. */
static int train_switch(run_options *o, const char *opt)
{
    if (!strcmp(opt, "--resume"))
        o->resume = 1;
    else if (!strcmp(opt, "--overwrite"))
        o->overwrite = 1;
    else if (!strcmp(opt, "--verbose"))
        o->verbose = 1;
    else
        return -1;
    return 0;
}

/* frugal train's arguments into o and lr (2 when wrong, said so; 1 for --help, shown). */
static int train_arguments(int argc, char **argv, run_options *o, launch_request *lr,
                           train_sets *ts)
{
    for (int i = 2; i < argc; i++) {
        int has_value = i + 1 < argc;
        int taken = has_value ? train_option(o, lr, ts, argv[i], argv[i + 1]) : -1;
        if (taken > 0)
            return taken;
        if (taken == 0)
            i++;
        else if (!strcmp(argv[i], "--help")) {
            usage(stdout);
            return 1;   /* shown: nothing to run */
        }
        else if (train_switch(o, argv[i]) == 0)
            continue;
        else if (argv[i][0] != '-' && !o->job)
            o->job = argv[i];
        else {
            wrong("train: %s '%s'", has_value || argv[i][0] != '-' ? "unexpected argument"
                                                                   : "missing value after", argv[i]);
            return usage(stderr);
        }
    }
    if (!o->job) {
        wrong("train: no job file given");
        return usage(stderr);
    }
    return 0;
}

/* frugal train: arguments into run options, signals caught while it runs. */
static int cmd_train(int argc, char **argv)
{
    train_sets ts = {calloc((size_t)argc + 1, sizeof *ts.sets),
                     calloc((size_t)argc + 1, sizeof *ts.owned), 0, 0};
    run_options o = {.out = stdout, .stop = &signals_stop};
    launch_request lr = {0};
    int rc = 2;
    if (!ts.sets || !ts.owned)
        fprintf(stderr, "frugal: out of memory\n");
    else if (!(rc = train_arguments(argc, argv, &o, &lr, &ts))) {
        o.overrides = ts.sets;
        o.resume_command = resume_command(argc, argv);
        rc = launch_run_train(&o, &lr);
        free((char *)o.resume_command);
    } else if (rc == 1) {
        rc = 0;   /* --help */
    }
    for (int i = 0; i < ts.nowned; i++)
        free(ts.owned[i]);
    free(ts.owned);
    free(ts.sets);
    return rc;
}

static void print_confusion(const dataset *d, const int32_t *pred, int classes)
{
    printf("confusion matrix (rows: true class, columns: predicted)\n     ");
    for (int k = 0; k < classes; k++)
        printf(" %5d", k);
    printf("\n");
    for (int r = 0; r < classes; r++) {
        printf("%4d ", r);
        for (int k = 0; k < classes; k++) {
            long count = 0;
            for (long i = 0; i < d->n; i++)
                count += d->labels[i] == r && pred[i] == k;
            printf(" %5ld", count);
        }
        printf("\n");
    }
}

/* The images to classify, shaped like the model's input. */
static int load_for(const layer *in, int classes, int argc, char **argv, int with_labels,
                    int pnm, dataset *d, char *err, size_t errlen)
{
    int rc;
    if (pnm)
        rc = dataset_load_pnm(d, (const char *const *)argv + 3, argc - 3, in->in_c, in->in_h,
                              in->in_w, classes, err, errlen);
    else if (!with_labels)
        rc = dataset_load_idx(d, argv[3], NULL, 0, err, errlen);
    else if (argc == 5)
        rc = dataset_load_idx(d, argv[3], argv[4], 0, err, errlen);
    else if (dataset_looks_idx(argv[3])) {
        snprintf(err, errlen, "%s is an IDX image file: eval needs its labels too "
                 "(frugal eval CHECKPOINT IMAGES LABELS)", argv[3]);
        rc = -1;
    } else
        rc = dataset_load_cifar10(d, argv[3], 0, err, errlen);
    if (!rc && d->classes != classes) {
        snprintf(err, errlen, "the data has %d classes, the model %d", d->classes, classes);
        rc = -1;
    }
    return rc ? rc : dataset_reshape(d, in->in_h, in->in_w, in->in_c, err, errlen);
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
    checkpoint_state st;
    dataset d = {0};
    if (checkpoint_open_model(&m, &st, argv[2], err, sizeof err)) {
        fprintf(stderr, "frugal: %s\n", err);
        return 1;
    }
    free(st.log);
    if (load_for(&m.layers[0], m.classes, argc, argv, with_labels, pnm, &d, err, sizeof err)) {
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
    int32_t *pred = calloc((size_t)d.n, sizeof *pred);
    pass_result r;
    int rc = 1;
    if (!t || !pred || trainer_evaluate(t, &d, pred, &r, err, sizeof err)) {
        fprintf(stderr, "frugal: %s\n", t && pred ? err : !t ? err : "out of memory");
        goto out;
    }
    if (!with_labels) {
        for (long i = 0; i < d.n; i++)
            if (pnm)
                printf("%s %d\n", argv[3 + i], pred[i]);
            else
                printf("%ld %d\n", i, pred[i]);
    } else {
        printf("%s (after epoch %d) on %ld images: accuracy %.2f%%, loss %.4f\n", argv[2],
               st.epoch, d.n, 100.0 * (double)r.correct / (double)r.samples,
               r.loss / (double)r.samples);
        print_confusion(&d, pred, m.classes);
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

static int cmd_report(int argc, char **argv)
{
    const char *dirs[REPORT_MAX_RUNS], *out = NULL;
    int n = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc) {
            out = argv[++i];
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "frugal report: unknown option %s\n", argv[i]);
            return 2;
        } else if (n == REPORT_MAX_RUNS) {
            fprintf(stderr, "frugal report: at most %d runs at once\n", REPORT_MAX_RUNS);
            return 2;
        } else {
            dirs[n++] = argv[i];
        }
    }
    if (!n) {
        fprintf(stderr, "usage: frugal report RUN_DIR [RUN_DIR...] [-o REPORT.html]\n");
        return 2;
    }
    char path[700], err[1024];
    if (!out)
        out = n == 1 ? (snprintf(path, sizeof path, "%s/report.html", dirs[0]), path) : "report.html";
    if (html_report_write(out, dirs, n, err, sizeof err)) {
        fprintf(stderr, "frugal report: %s\n", err);
        return 1;
    }
    printf("report: %s\n", out);
    return 0;
}

#ifdef __clang__
#define MAIN_COMPILER "clang " __clang_version__
#else
#define MAIN_COMPILER "gcc " __VERSION__
#endif

/* `frugal --version`: the commit, the compiler, the oldest glibc it starts on (the one whose
 * symbols it was linked against: the build machine's, or 2.17 for ./build.sh portable), the
 * kernel paths built in and this CPU's. */
static int cmd_version(void)
{
    printf("frugal %s, built with %s for baseline x86-64 and glibc %d.%d or later; kernel paths: "
           "%s, %s, %s (this CPU: %s)\n", FRUGAL_COMMIT, MAIN_COMPILER, __GLIBC__, __GLIBC_MINOR__,
           ops_isa_name(OPS_ISA_PORTABLE), ops_isa_name(OPS_ISA_AVX2),
           ops_isa_name(OPS_ISA_AVX512), ops_isa_name(ops_isa_supported()));
    return 0;
}

int main(int argc, char **argv)
{
    env_switches_read();   /* once, before any thread: summary.json records them */
    if (argc < 2)
        return usage(stderr);
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version"))
        return cmd_version();
    if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
        return usage(stdout);
    if (!strcmp(argv[1], "info"))
        return cmd_info();
    if (!strcmp(argv[1], "energy"))
        return energy_cmd_main(argc, argv);
    if (!strcmp(argv[1], "train") || !strcmp(argv[1], "join"))
        operating_point_recover(stdout);   /* limits a run that died left changed */
    if (!strcmp(argv[1], "train"))
        return cmd_train(argc, argv);
    if (!strcmp(argv[1], "join"))
        return cmd_join(argc, argv);
    if (!strcmp(argv[1], "report"))
        return cmd_report(argc, argv);
    if (!strcmp(argv[1], "keygen"))
        return cmd_keygen(argc, argv);
    if (!strcmp(argv[1], "eval"))
        return cmd_classify(argc, argv, 1);
    if (!strcmp(argv[1], "average"))
        return average_cmd_main(argc, argv);
    if (!strcmp(argv[1], "simulate"))
        return simulate_cmd_main(argc, argv);
    if (!strcmp(argv[1], "predict"))
        return cmd_classify(argc, argv, 0);
    fprintf(stderr, "frugal: unknown command '%s'\n", argv[1]);
    return usage(stderr);
}
