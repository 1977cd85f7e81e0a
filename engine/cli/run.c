/* frugal train, top to bottom:
 *
 *   run_open     the job, the data, the model, the output folder (locked), the checkpoint to
 *                resume from, the runtime, the trainer, the energy meter
 *   for each epoch:
 *     train_epoch the training pass (from where an interrupted epoch stopped; a point of loss and
 *                accuracy every few batches in steps.csv and TensorBoard), the test pass,
 *                their energy, the divergence check
 *     run_save   the checkpoint (with the run's log), then metrics.csv and summary.json from it,
 *                power.csv and report.html; then the epoch's TensorBoard events
 *   run_close    the last epoch's figures by task kind and sensor, the trace
 *
 * The checkpoint is written first and the other files are rewritten from its log, so they are
 * never ahead of it, whenever the process is killed. */
#include "engine/cli/run.h"

#include "engine/model/checkpoint.h"
#include "engine/job/config.h"
#include "engine/cluster/coordinator.h"
#include "engine/cluster/gossip.h"
#include "engine/placement/device_energy.h"
#include "engine/job/dataset.h"
#include "engine/job/devices.h"
#include "engine/cli/divergence.h"
#include "engine/cli/nodes_before.h"
#include "engine/cli/run_green.h"
#include "engine/job/energy_run.h"
#include "engine/report/html_report.h"
#include "engine/job/job_data.h"
#include "engine/model/model.h"
#include "engine/report/power_log.h"
#include "engine/report/report.h"
#include "engine/report/step_log.h"
#include "engine/job/run_folder.h"
#include "engine/job/run_log.h"
#include "engine/train/trainer.h"
#include "engine/placement/worker_control.h"
#include "ops/cpu.h"
#include "common/text.h"

#include <errno.h>
#include <stdatomic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HALT_BUDGET (-1)

typedef struct run {
    const run_options *o;
    FILE *out;
    job_config cfg;
    dataset train, test;
    int have_test;
    model m;
    int have_model;
    run_folder folder;
    char ckpt[700], weights[700], metrics[700], summary[700], power[700], report[700];
    char steps_csv[700], green_csv[700];
    run_log log;
    int resumed_after;                 /* epochs done when the run started */
    long resume_batch;                 /* batches of the next epoch done then */
    run_devices devices;
    coordinator *cluster;              /* when coordinating other machines */
    gossip_peer *gossip;               /* a peer among peers ([cluster] mode = gossip) */
    char gossip_csv[700];
    int first_epoch;                   /* 1, or where a gossip peer joining late starts */
    rt_runtime *rt;
    trainer *t;
    energy_run er;
    power_log power_log;               /* power.csv */
    tb_writer tb;                      /* TensorBoard events */
    step_log steps;                    /* steps.csv: points every few batches */
    worker_control placement;          /* the policy's choice of active workers */
    device_energy device_energy;       /* the policy's figures for placing tasks on devices */
    rt_stats st;                       /* the last epoch's */
    rt_stats total;                    /* every epoch this process ran */
    epoch_energy last_energy;
    run_green green;                   /* when to train: postponement, a budget, the green log */
    _Atomic int halt;                  /* the trainer stops: a signal's number, or HALT_BUDGET */
    long training_from;                /* the training pass under way: its first batch; -1: none */
    int green_begun;
    int tty;
    double progress_shown;
    char interrupted[256];
    char err[1024];
} run;

/* Errors go to stderr, whatever the run's output (r unused); 1, the exit status. */
#define fail(r, ...) ((void)(r), text_error(1, "frugal: ", __VA_ARGS__))

static void show_progress(void *ctx, long done, long total, double seconds);

static long batches_per_epoch(const run *r)
{
    return (r->train.n + r->cfg.batch - 1) / r->cfg.batch;
}

/* ---- opening ---- */

static int load_data(run *r)
{
    return job_load_train(&r->cfg, &r->train, r->err, sizeof r->err) ||
           job_load_test(&r->cfg, &r->train, &r->test, &r->have_test, r->err, sizeof r->err) ? -1 : 0;
}

/* The trace is written at the end: make sure now that it can be. */
static int check_trace_path(run *r)
{
    const char *path = r->o->trace;
    FILE *f = path ? fopen(path, "w") : NULL;
    if (path && !f)
        return fail(r, "--trace %s: cannot create: %s", path, strerror(errno));
    if (f)
        fclose(f);
    return 0;
}

/* The checkpoint and log to continue from, checked against the job. */
static int resume_from_checkpoint(run *r)
{
    checkpoint_state st;
    if (checkpoint_load(&r->m, &st, r->ckpt, r->err, sizeof r->err))
        return fail(r, "cannot resume: %s", r->err);
    int rc = run_log_decode(&r->log, st.log, st.log_len, r->err, sizeof r->err);
    free(st.log);
    if (rc)
        return fail(r, "cannot resume: %s: %s", r->ckpt, r->err);
    if (r->log.nepochs != st.epoch || r->log.partial.batches != st.batch)
        return fail(r, "cannot resume: %s: its log has %d epochs and %ld batches, its header "
                    "says %d and %d", r->ckpt, r->log.nepochs, r->log.partial.batches, st.epoch,
                    st.batch);
    long batches = batches_per_epoch(r);
    if (st.epoch > r->cfg.epochs || (st.epoch == r->cfg.epochs && st.batch == 0))
        return fail(r, "nothing to resume: %s is after epoch %d of %d (raise job.epochs to "
                    "train more)", r->ckpt, st.epoch, r->cfg.epochs);
    if (st.batch >= batches)
        return fail(r, "cannot resume: %s stopped after batch %d of an epoch, the data has %ld "
                    "batches: not the same data or batch size", r->ckpt, st.batch, batches);
    r->resumed_after = st.epoch;
    r->resume_batch = st.batch;
    fprintf(r->out, "resuming after epoch %d%s from %s\n", st.epoch, st.batch ? " (and part of "
            "the next)" : "", r->ckpt);
    return 0;
}

/* [cluster] mode = gossip: this machine is a peer (engine/cluster/gossip.h). */
static int start_gossip(run *r)
{
    const run_options *o = r->o;
    if (r->cfg.cluster_mode != CLUSTER_GOSSIP)
        return fail(r, "--peer and --advertise are for a gossip run ([cluster] mode = gossip, or "
                    "--set cluster.mode=gossip)");
    if (!o->listen || !o->key)
        return fail(r, "a gossip run needs --listen ADDR:PORT and --key KEYFILE (and --peer "
                    "HOST:PORT for any peer already up)");
    if (o->allow)
        return fail(r, "--allow is the coordinator's: every gossip peer holds the key");
    gossip_options go = {.listen = o->listen, .advertise = o->advertise, .key_path = o->key,
                         .timeout_s = o->timeout_s > 0 ? o->timeout_s : 10,
                         .nparams = r->m.nparams, .stop = o->stop};
    for (int i = 0; i < o->npeers; i++)
        go.peers[i] = o->peers[i];
    run_folder_path(&r->folder, "gossip.csv", r->gossip_csv, sizeof r->gossip_csv);
    if (!(r->gossip = gossip_start(&go, &r->cfg, &r->train, r->out, r->err, sizeof r->err)))
        return fail(r, "%s", r->err);
    return 0;
}

/* The job file, its data, the model; the trace's path checked now, as it is written at the end. */
static int open_job(run *r)
{
    job_config *cfg = &r->cfg;
    if (config_load(cfg, r->o->job, r->o->overrides, r->err, sizeof r->err) || load_data(r))
        return fail(r, "%s", r->err);
    if (check_trace_path(r))
        return 1;
    if (model_build(&r->m, cfg->path, cfg->layers, cfg->nlayers, r->train.c, r->train.h,
                    r->train.w, r->train.classes, 1, r->err, sizeof r->err))
        return fail(r, "%s", r->err);
    r->have_model = 1;
    return 0;
}

/* The output folder (locked) and its files' paths; the checkpoint resumed from, or refused to
 * be overwritten without --overwrite; metrics.csv as the checkpoint says. */
static int open_folder(run *r)
{
    const run_options *o = r->o;
    const char *output = r->cfg.output;
    if (run_folder_open(&r->folder, output, o->job, r->err, sizeof r->err))
        return fail(r, "%s", r->err);
    run_folder_path(&r->folder, "checkpoint.bin", r->ckpt, sizeof r->ckpt);
    run_folder_path(&r->folder, "model.bin", r->weights, sizeof r->weights);
    run_folder_path(&r->folder, "metrics.csv", r->metrics, sizeof r->metrics);
    run_folder_path(&r->folder, "summary.json", r->summary, sizeof r->summary);
    run_folder_path(&r->folder, "power.csv", r->power, sizeof r->power);
    run_folder_path(&r->folder, "report.html", r->report, sizeof r->report);
    run_folder_path(&r->folder, "steps.csv", r->steps_csv, sizeof r->steps_csv);
    run_folder_path(&r->folder, "green.csv", r->green_csv, sizeof r->green_csv);
    if (run_folder_keep_job(&r->folder, o->job, r->err, sizeof r->err))
        return fail(r, "%s", r->err);
    model_init(&r->m, r->cfg.seed);
    if (o->resume && resume_from_checkpoint(r))
        return 1;
    if (!o->resume && access(r->ckpt, F_OK) == 0 && !o->overwrite)
        return fail(r, "%s holds a run already: --resume continues it, --overwrite starts "
                    "afresh there (its checkpoint, metrics and summary replaced), or give "
                    "another folder (--set job.output=DIR)", output);
    if (!o->resume && access(r->ckpt, F_OK) == 0)
        fprintf(r->out, "starting afresh in %s (--overwrite): its checkpoint, metrics and summary "
                "will be replaced\n", output);
    if (report_write_metrics(r->metrics, &r->log, r->err, sizeof r->err))
        return fail(r, "%s", r->err);
    return 0;
}

/* The OpenCL devices, then this machine's part in a cluster: a gossip peer, a coordinator, or
 * alone. rc: the runtime's configuration, which the devices and a coordinator fill in. */
static int open_devices_and_peers(run *r, rt_config *rc)
{
    const run_options *o = r->o;
    if (devices_open(&r->devices, &r->cfg, rc, r->out, r->err, sizeof r->err))
        return fail(r, "%s", r->err);
    if (r->cfg.cluster_mode == CLUSTER_GOSSIP || o->npeers || o->advertise)
        return start_gossip(r);
    if (!o->listen && !o->key && !o->allow)
        return 0;
    if (!o->listen || !o->key)
        return fail(r, "a cluster needs both --listen ADDR:PORT and --key KEYFILE");
    coordinator_options co = {o->listen, o->key, o->timeout_s > 0 ? o->timeout_s : 10, o->job,
                              o->overrides, o->stop, o->allow};
    r->cluster = coordinator_start(&co, &r->cfg, &r->train, rc, r->out, r->err, sizeof r->err);
    if (!r->cluster)
        return fail(r, "%s", r->err);
    if (o->resume)
        nodes_before_say(r->summary, r->out);
    return 0;
}

/* A coordinator with --wait-for N: up to RUN_WAIT_FOR_S seconds for N nodes before training. */
static void wait_for_nodes(run *r)
{
    int want = r->o->wait_for;
    fprintf(r->out, "cluster: waiting up to %d s for %d node%s (--wait-for)\n", RUN_WAIT_FOR_S,
            want, want > 1 ? "s" : "");
    fflush(r->out);
    int got = coordinator_wait_for(r->cluster, want, RUN_WAIT_FOR_S);
    if (got < want)
        fprintf(r->out, "cluster: %d of the %d nodes waited for joined within %d s; training "
                "%s (others may join at any time)\n", got, want, RUN_WAIT_FOR_S,
                got ? "with those" : "without them");
}

/* The runtime and the trainer, attached to the cluster; the first epoch to train. */
static int open_trainer(run *r, const rt_config *rc)
{
    r->rt = rt_create(rc);
    if (!r->rt)
        return fail(r, "cannot start the runtime's %d workers", r->cfg.workers);
    devices_models_load(&r->devices, r->rt, r->cfg.deterministic, r->out);
    if (!r->cfg.grain && !r->cluster)   /* no other machine shares this one's chunks */
        r->cfg.grain = JOB_GRAIN_PER_DEVICE;
    r->t = trainer_create(&r->cfg, &r->m, r->rt, &r->train, r->have_test ? &r->test : NULL,
                          r->err, sizeof r->err);
    if (!r->t)
        return fail(r, "%s", r->err);
    if (r->cluster && coordinator_attach(r->cluster, r->t, r->rt, r->err, sizeof r->err))
        return fail(r, "%s", r->err);
    r->first_epoch = r->resumed_after + 1;
    int joined_at = 1;
    if (r->gossip &&
        gossip_attach(r->gossip, r->t, r->gossip_csv, &joined_at, r->err, sizeof r->err))
        return fail(r, "%s", r->err);
    if (joined_at > r->first_epoch)
        r->first_epoch = joined_at;
    if (r->cluster && r->o->wait_for > 0)
        wait_for_nodes(r);
    trainer_stop_when(r->t, &r->halt);
    trainer_on_progress(r->t, show_progress, r);
    return 0;
}

/* The energy meter and what follows it: the green schedule, power.csv, TensorBoard and
 * steps.csv, the placement policy (keyed by the job, the machine and its devices). */
static int open_meters(run *r)
{
    const job_config *cfg = &r->cfg;
    int resume = r->o->resume;
    if (energy_run_begin(&r->er, cfg, r->out, r->err, sizeof r->err))
        return fail(r, "%s", r->err);
    run_green_begin(&r->green, cfg, &r->er, r->cluster, r->gossip != NULL,
                    r->have_test ? r->test.n : 0, r->out);
    r->green_begun = 1;
    power_log_begin(&r->power_log, r->power, resume, r->er.meter, r->out);
    long per_epoch = batches_per_epoch(r);
    if (tensorboard_open(&r->tb, cfg->output, resume, r->err, sizeof r->err) ||
        step_log_open(&r->steps, r->steps_csv, &r->tb, step_log_every(cfg->log_every, per_epoch),
                      per_epoch, resume, r->resumed_after * per_epoch + r->resume_batch,
                      r->err, sizeof r->err))
        return fail(r, "%s", r->err);
    char key[128], devices[OCL_MAX_DEVICES * 256] = "";
    for (int i = 0; i < r->devices.n && rt_devices(r->rt); i++)
        snprintf(devices + strlen(devices), sizeof devices - strlen(devices), "%s;",
                 r->devices.used[i]->name);
    worker_control_key(key, sizeof key, cfg, r->train.c, r->train.h, r->train.w,
                       ops_isa_name(ops_isa_active()), devices);
    worker_control_begin(&r->placement, cfg, r->rt, r->t, r->er.meter, key, r->out);
    if (r->cluster)
        coordinator_use_meter(r->cluster, r->er.meter);
    if (r->gossip) {
        gossip_use_meter(r->gossip, r->er.meter);
        gossip_use_green(r->gossip, &r->er.carbon, &r->green.log);
    }
    device_energy_begin(&r->device_energy, &r->devices, r->rt, cfg, &r->er, r->out);
    return 0;
}

/* What is about to be trained, and how: one line (and one more where the batch was cut). */
static void say_start(const run *r)
{
    const job_config *cfg = &r->cfg;
    int devices = rt_devices(r->rt);
    if (cfg->batch_asked)
        fprintf(r->out, "data: the job's batch of %d is more than the %ld training images: each "
                "batch is the whole set\n", cfg->batch_asked, r->train.n);
    fprintf(r->out, "frugal train %s: %ld images %dx%dx%d, %s%ld test images; %d layers; batch %d, "
            "%d samples per task; %d workers%s%s, kernels %s\n", r->o->job, r->train.n,
            r->train.h, r->train.w, r->train.c, r->have_test ? "" : "no test set, ", r->test.n,
            r->m.nlayers, cfg->batch, trainer_plan(r->t)->grain, rt_workers(r->rt),
            devices ? " + OpenCL " : "", devices ? r->devices.used[0]->name : "",
            ops_isa_name(ops_isa_active()));
}

static int run_open(run *r, const run_options *o)
{
    r->o = o;
    r->out = o->out ? o->out : stdout;
    r->tty = isatty(fileno(r->out));
    if (open_job(r) || open_folder(r))
        return 1;
    rt_config rc = {.workers = r->cfg.workers, .trace = o->trace != NULL,
                    .slowdown = r->cfg.slowdown};
    if (open_devices_and_peers(r, &rc) || open_trainer(r, &rc) || open_meters(r))
        return 1;
    say_start(r);
    return 0;
}

/* ---- an epoch ---- */

/* The step points of the batches tallied so far, and a live line on a terminal (at most 4 times
 * a second; nothing when the output is a file). */
static void show_progress(void *ctx, long done, long total, double seconds)
{
    run *r = ctx;
    if (r->o->stop && atomic_load(r->o->stop))
        atomic_store(&r->halt, atomic_load(r->o->stop));
    else if (r->green_begun && r->training_from >= 0 &&
             run_green_budget_spent(&r->green, done / r->cfg.batch - r->training_from))
        atomic_store(&r->halt, HALT_BUDGET);
    step_log_follow(&r->steps, r->t);
    energy_run_follow_carbon(&r->er);
    if (!r->tty || seconds - r->progress_shown < 0.25 || done <= 0)
        return;
    r->progress_shown = seconds;
    double rate = (double)done / seconds, joules, watts;
    energy_run_so_far(&r->er, &joules, &watts);
    fprintf(r->out, "\r  %3.0f%%  %ld/%ld images  %.0f img/s  %.0f W  %.0f J  ETA %.0f s   ",
            100.0 * (double)done / (double)total, done, total, rate, watts, joules,
            (double)(total - done) / rate);
    fflush(r->out);
}

/* Adds what an interrupted process did of this epoch (its log's partial record) to figures. */
static void add_partial(const partial_epoch *p, pass_result *pass, energy_figures *f)
{
    pass->loss += p->loss, pass->correct += p->correct, pass->samples += p->samples;
    pass->seconds += p->seconds;
    f->joules += p->joules;
    f->seconds += p->seconds;
    f->joules_per_image = pass->samples ? f->joules / (double)pass->samples : NAN;
    f->watts = f->seconds > 0 ? f->joules / f->seconds : 0;
}

/* Returns 0 with the epoch in rec, 1 on an error, or -1 when stopped (the log's partial record
 * then holds the epoch so far). */
static int train_epoch(run *r, int e, epoch_record *rec)
{
    memset(rec, 0, sizeof *rec);
    r->progress_shown = 0;
    energy_run_epoch_begin(&r->er);
    rt_stats_reset(r->rt);
    pass_result train, test = {0};
    long first = e == r->resumed_after + 1 ? r->resume_batch : 0;
    worker_control_pass(&r->placement, 1);
    step_log_epoch(&r->steps, e);
    r->training_from = first;
    int failed = r->gossip ? gossip_train_epoch(r->gossip, e, first, &train, r->err, sizeof r->err)
               : r->cluster ? coordinator_train_epoch(r->cluster, e, first, &train, r->err, sizeof r->err)
                            : trainer_train(r->t, e, first, &train, r->err, sizeof r->err);
    r->training_from = -1;
    if (failed)
        return fail(r, "epoch %d: %s", e, r->err);
    epoch_energy *en = &rec->energy;
    energy_run_pass_end(&r->er, train.samples, &en->f);
    rt_stats_get(r->rt, &r->st);
    partial_epoch *p = &r->log.partial;
    if (train.stopped) {   /* keep what was done for the checkpoint */
        step_log_stopped(&r->steps);
        *p = (partial_epoch){p->batches + train.batches, p->loss + train.loss,
                             p->correct + train.correct, p->samples + train.samples,
                             p->seconds + train.seconds, p->joules + en->f.joules};
        return -1;
    }
    add_partial(p, &train, &en->f);
    *p = (partial_epoch){0};
    worker_control_pass(&r->placement, 0);
    if (r->have_test && trainer_evaluate(r->t, NULL, NULL, &test, r->err, sizeof r->err))
        return fail(r, "epoch %d, test pass: %s", e, r->err);
    energy_run_pass_end(&r->er, test.samples, &en->test);
    rt_stats_get(r->rt, &r->st);
    rt_stats fallback;   /* chunks taken back from nodes ran on a second engine, on these cores */
    if (r->cluster && coordinator_extra_work(r->cluster, &fallback))
        rt_stats_add_work(&r->st, &fallback);
    rt_stats_add(&r->total, &r->st);
    energy_run_split_kinds(&r->er, &r->st, en);
    device_energy_epoch(&r->device_energy, &r->devices, r->rt, &r->er, &r->st, en, r->out);
    *rec = (epoch_record){.epoch = e, .samples = train.samples, .energy = *en,
                          .estimated = energy_meter_estimated(r->er.meter)};
    rec->train_loss = train.samples ? train.loss / (double)train.samples : NAN;
    rec->train_acc = train.samples ? (double)train.correct / (double)train.samples : NAN;
    rec->test_loss = test.samples ? test.loss / (double)test.samples : NAN;
    rec->test_acc = test.samples ? (double)test.correct / (double)test.samples : NAN;
    rec->seconds = train.seconds;
    rec->images_per_s = (double)train.samples / train.seconds;
    rec->task_share = r->st.task_share;
    double first_loss = r->log.nepochs ? run_log_figures(&r->log.epochs[0]).train_loss : NAN;
    if (!isfinite(first_loss))
        first_loss = rec->train_loss;
    divergence_check(e, first_loss, rec->train_loss, rec->train_acc, r->m.classes,
                     divergence_chance(r->train.labels, r->train.n, r->train.classes), r->cfg.lr,
                     rec->warning, sizeof rec->warning);
    return 0;
}

static void print_epoch(run *r, const epoch_record *rec)
{
    const energy_figures *f = &rec->energy.f;
    if (r->tty)
        fprintf(r->out, "\r%*s\r", 96, "");   /* clear the progress line */
    char test[40] = "no test set";
    if (isfinite(rec->test_acc))
        snprintf(test, sizeof test, "test acc %.2f%%", 100 * rec->test_acc);
    fprintf(r->out, "epoch %d/%d  loss %.4f  train acc %.2f%%  %s  %.2f s  %.0f img/s  "
            "tasks %.0f%% of worker time  %.1f J %s, %.1f W, %.2f mJ/img\n", rec->epoch,
            r->cfg.epochs, rec->train_loss, 100 * rec->train_acc, test, rec->seconds,
            rec->images_per_s, 100 * rec->task_share, f->joules,
            rec->estimated ? "estimated" : "measured", f->watts, 1e3 * f->joules_per_image);
    if (rec->warning[0])
        fprintf(r->out, "%s\n", rec->warning);
    if (r->cluster) {
        energy_figures so_far;
        energy_run_total(&r->er, 0, &so_far);
        coordinator_print_nodes(r->cluster, r->out, so_far.joules, rec->estimated);
    }
    if (r->gossip)
        gossip_print(r->gossip, r->out);
    fflush(r->out);
}

/* ---- saving ---- */

/* The cluster for summary.json, with this machine's joules so far (malloc'd). */
static cluster_summary *summarize_cluster(run *r)
{
    cluster_summary *s = malloc(sizeof *s);
    energy_figures here;
    energy_run_total(&r->er, 0, &here);
    if (s)
        coordinator_summarize(r->cluster, here.joules, energy_meter_estimated(r->er.meter), s);
    return s;
}

static int run_save(run *r)
{
    checkpoint_state st = {.epoch = r->log.nepochs, .batch = (int)r->log.partial.batches};
    if (trainer_sync(r->t, r->err, sizeof r->err) ||
        !(st.log = run_log_encode(&r->log, &st.log_len)))
        return fail(r, "%s", r->err[0] ? r->err : "out of memory encoding the run's log");
    /* model.bin: the same without the log (and its timings), so the same weights give the same
     * bytes however they were computed (one machine or several). */
    checkpoint_state weights_only = {.epoch = st.epoch, .batch = st.batch};
    int rc = checkpoint_save(&r->m, &st, r->ckpt, r->err, sizeof r->err) ||
             checkpoint_save(&r->m, &weights_only, r->weights, r->err, sizeof r->err) ||
             report_write_metrics(r->metrics, &r->log, r->err, sizeof r->err);
    free(st.log);
    cluster_summary *cluster = NULL;   /* large: not on the stack */
    gossip_summary *gossip = NULL;
    if (!rc && r->cluster && !(cluster = summarize_cluster(r)))
        rc = -1, snprintf(r->err, sizeof r->err, "out of memory for the cluster's summary");
    if (!rc && r->gossip && (gossip = malloc(sizeof *gossip)))
        gossip_summarize(r->gossip, gossip);
    else if (!rc && r->gossip)
        rc = -1, snprintf(r->err, sizeof r->err, "out of memory for the gossip's summary");
    green_log *green = r->green_begun && r->green.log.used ? &r->green.log : NULL;
    report_input in = {&r->cfg, &r->train, r->have_test ? &r->test : NULL, &r->m,
                       trainer_plan(r->t), rt_workers(r->rt), &r->log, &r->st, &r->total,
                       &r->er, r->resumed_after, r->interrupted[0] ? r->interrupted : NULL, &r->devices,
                       cluster, gossip, &r->placement, green, r->o->launch_json};
    rc = rc || report_write(r->summary, &in, r->err, sizeof r->err) ||
         (green && green_log_write_csv(green, r->green_csv, r->err, sizeof r->err));
    free(cluster);
    free(gossip);
    if (rc ||
        power_log_write(&r->power_log, r->power, r->er.meter, r->err, sizeof r->err))
        return fail(r, "%s", r->err);
    const char *dir = r->cfg.output;
    if (html_report_write(r->report, &dir, 1, r->err, sizeof r->err))   /* derived: the run goes on */
        fprintf(r->out, "warning: the report was not written: %s\n", r->err);
    return 0;
}

/* After the checkpoint: TensorBoard's events are never ahead of it. */
static int log_tensorboard(run *r, const epoch_record *rec)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    r->err[0] = 0;
    if (report_epoch_tensorboard(&r->tb, rec, rec->epoch * batches_per_epoch(r), &r->er,
                                 (double)now.tv_sec + 1e-9 * (double)now.tv_nsec) ||
        tensorboard_flush(&r->tb, r->err, sizeof r->err))
        return fail(r, "%s: cannot write the TensorBoard events: %s", r->tb.path,
                    r->err[0] ? r->err : "write failed");
    return 0;
}

static int record_epoch(run *r, const epoch_record *rec)
{
    char *csv = report_epoch_csv(rec), *json = report_epoch_json(rec, &r->er, &r->st);
    int rc = !csv || !json || run_log_add(&r->log, rec->epoch, csv, json);
    free(csv);
    free(json);
    return rc ? fail(r, "out of memory recording epoch %d", rec->epoch) : 0;
}

/* A gossip peer's end: the peers' last models averaged, tested, and saved as this run's. */
static int gossip_end(run *r)
{
    pass_result test = {0};
    if (gossip_finish(r->gossip, r->err, sizeof r->err) ||
        (r->have_test && trainer_evaluate(r->t, NULL, NULL, &test, r->err, sizeof r->err)))
        return fail(r, "gossip: the final average: %s", r->err);
    double acc = test.samples ? (double)test.correct / (double)test.samples : NAN;
    double loss = test.samples ? test.loss / (double)test.samples : NAN;
    gossip_note_final_test(r->gossip, acc, loss);
    if (test.samples)
        fprintf(r->out, "gossip: the averaged model: test loss %.4f, test acc %.2f%%\n", loss, 100 * acc);
    return run_save(r);
}

/* ---- closing ---- */

static void write_trace(run *r)
{
    if (r->er.meter)
        power_log_trace(r->er.meter, r->rt);
    if (rt_trace_write(r->rt, r->o->trace)) {
        fail(r, "%s: cannot write the trace: %s", r->o->trace, strerror(errno));
        return;
    }
    uint64_t dropped = rt_trace_dropped(r->rt);
    fprintf(r->out, "trace: %s%s", r->o->trace, dropped ? "" : "\n");
    if (dropped)
        fprintf(r->out, " is capped at about %d events: %llu more were left out to keep it "
                "small\n", RT_TRACE_MAX_EVENTS, (unsigned long long)dropped);
}

static void run_close(run *r, int finished)
{
    if (finished) {   /* the tables by task kind and sensor: with --verbose (and summary.json) */
        if (r->o->verbose) {
            fprintf(r->out, "tasks of the %s, by kind and where they ran:\n",
                    r->resumed_after ? "epochs since the resume" : "whole run");
            rt_stats_print(&r->total, r->out);
            if (r->devices.n && r->devices.used[0]->done_when_enqueued)
                fprintf(r->out, "(a device's task is timed until its kernels are enqueued: the "
                        "device runs them in its queue's order; FRUGAL_OPENCL_PIPELINE=off times "
                        "them to their completion)\n");
        }
        if (r->log.nepochs)
            energy_run_print(&r->er, &r->last_energy, &r->st, r->train.n, r->o->verbose, r->out);
        if (!r->o->verbose)
            fprintf(r->out, "(--verbose adds the tasks and energy by kind, and each sensor)\n");
        if (r->o->trace)
            write_trace(r);
        fprintf(r->out, "metrics: %s, summary: %s, checkpoint: %s, weights: %s\n", r->metrics,
                r->summary, r->ckpt, r->weights);
        fprintf(r->out, "report: %s, power: %s, every few batches: %s, TensorBoard: %s/tb\n",
                r->report, r->power, r->steps_csv, r->cfg.output);
    }
    worker_control_end(&r->placement);
    if (r->green_begun)
        run_green_end(&r->green);
    step_log_close(&r->steps);
    tensorboard_close(&r->tb);
    power_log_free(&r->power_log);
    if (r->cluster)
        coordinator_use_meter(r->cluster, NULL);
    if (r->er.meter)
        energy_run_end(&r->er);
    if (r->t)
        rt_wait_all(r->rt);   /* no chunk still out on a node */
    if (r->gossip)
        gossip_stop(r->gossip, finished ? NULL : r->interrupted[0] ? r->interrupted : "stopped");
    coordinator_stop(r->cluster, finished ? "training finished" : r->interrupted[0]
                     ? "training paused (the coordinator saved, and may be resumed)"
                     : "the coordinator stopped", !finished && r->interrupted[0]);
    trainer_destroy(r->t);
    if (r->rt)
        devices_models_save(&r->devices, r->rt, r->out);
    rt_destroy(r->rt);
    devices_close(&r->devices);
    if (r->have_model)
        model_free(&r->m);
    dataset_free(&r->train);
    dataset_free(&r->test);
    run_log_free(&r->log);
    run_folder_close(&r->folder);
}

int run_train(const run_options *o)
{
    run *r = calloc(1, sizeof *r);
    if (!r)
        return fail(NULL, "out of memory");
    r->folder.lock_fd = -1, r->training_from = -1;
    int rc = run_open(r, o);
    for (int e = r->first_epoch; !rc && e <= r->cfg.epochs; e++) {
        epoch_record rec;
        int got = run_green_before_epoch(&r->green, e, o->stop) ? -1 : train_epoch(r, e, &rec);
        if (got > 0) {
            rc = 1;
        } else if (got < 0 && atomic_load(&r->halt) == HALT_BUDGET) {   /* a budget spent */
            snprintf(r->interrupted, sizeof r->interrupted, "%s, in epoch %d after batch %ld",
                     r->green.log.stopped, e, r->log.partial.batches);
            rc = run_save(r);
            fprintf(r->out, "stopped (%s): checkpoint, metrics and summary saved in %s; a larger "
                    "budget_g and --resume go on\n", r->interrupted, r->cfg.output);
            break;
        } else if (got < 0) {   /* stopped: save where it stopped, and say how to go on */
            long batches = batches_per_epoch(r);
            snprintf(r->interrupted, sizeof r->interrupted, "stopped by signal %d in epoch %d "
                     "after batch %ld of %ld", atomic_load(o->stop), e, r->log.partial.batches, batches);
            rc = run_save(r) ? 1 : 128 + atomic_load(o->stop);
            fprintf(r->out, "%s: checkpoint, metrics and summary saved in %s; continue with: "
                    "%s\n", r->interrupted, r->cfg.output,
                    o->resume_command ? o->resume_command : "the same command and --resume");
        } else {
            print_epoch(r, &rec);
            r->last_energy = rec.energy;
            run_green_after_epoch(&r->green, rec.seconds, rec.energy.f.joules, rec.energy.test.gco2e);
            rc = record_epoch(r, &rec) || run_save(r) || log_tensorboard(r, &rec);
        }
    }
    if (!rc && r->gossip)
        rc = gossip_end(r);
    run_close(r, rc == 0);
    free(r);
    return rc;
}
