#include "engine/report/report.h"

#include "common/env_switches.h"
#include "common/json.h"
#include "engine/job/run_folder.h"
#include "engine/report/step_log.h"
#include "ops/cpu.h"
#include "common/clock.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char report_csv_header[] =
    "epoch,train_loss,train_acc,test_loss,test_acc,seconds,images_per_s,task_share,energy_j,"
    "power_w,mj_per_image,app_energy_j,edp_js,gco2e,energy_source,test_energy_j";

char *report_epoch_csv(const epoch_record *r)
{
    const energy_figures *f = &r->energy.f;
    char *out = NULL;
    if (asprintf(&out, "%d,%.6f,%.6f,%.6f,%.6f,%.4f,%.1f,%.4f,%.3f,%.3f,%.4f,%.3f,%.4g,%.6f,%s,%.3f",
                 r->epoch, r->train_loss, r->train_acc, r->test_loss, r->test_acc, r->seconds,
                 r->images_per_s, r->task_share, f->joules, f->watts, 1e3 * f->joules_per_image,
                 f->app_joules, f->edp, f->gco2e, r->estimated ? "estimated" : "measured",
                 r->energy.test.joules) < 0)
        return NULL;
    return out;
}

static void write_figures(FILE *f, const energy_figures *e)
{
    json_number_field(f, "joules", e->joules, 1);
    json_number_field(f, "watts", e->watts, 0);
    json_number_field(f, "joules_per_image", e->joules_per_image, 0);
    json_number_field(f, "edp_joule_seconds", e->edp, 0);
    json_number_field(f, "joules_above_idle", e->app_joules, 0);
    if (e->baseline_too_high)
        fputs(", \"baseline_above_mean_power\": true", f);
    json_number_field(f, "gco2e", e->gco2e, 0);
}

static void write_epoch_energy(FILE *f, const epoch_energy *en, const sensor *s, int n,
                               const rt_stats *st)
{
    fputs(", \"energy\": {", f);
    write_figures(f, &en->f);
    fputs(", \"test_pass\": {", f);
    write_figures(f, &en->test);
    fputs("}, \"devices\": {", f);
    for (int i = 0; i < n && i < en->f.ndevices; i++) {
        fputs(i ? ", " : "", f);
        json_string(f, s[i].name);
        fputs(": ", f);
        json_number(f, en->f.device_j[i]);
    }
    fputs("}, \"task_kinds\": [", f);
    for (int k = 0, first = 1; st && k < en->nkinds && k < st->nkinds; k++) {
        if (en->kind_j[k] <= 0 || !en->kind_tasks[k])
            continue;
        fputs(first ? "{\"name\": " : ", {\"name\": ", f);
        first = 0;
        json_string(f, st->kinds[k].name);
        fprintf(f, ", \"tasks\": %llu", (unsigned long long)en->kind_tasks[k]);
        json_number_field(f, "joules", en->kind_j[k], 0);
        json_number_field(f, "joules_per_task", en->kind_j[k] / (double)en->kind_tasks[k], 0);
        fputc('}', f);
    }
    fputs("]}", f);
}

char *report_epoch_json(const epoch_record *r, energy_run *er, const rt_stats *st)
{
    char *out = NULL;
    size_t len;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    fprintf(f, "{\"epoch\": %d", r->epoch);
    json_number_field(f, "train_loss", r->train_loss, 0);
    json_number_field(f, "train_acc", r->train_acc, 0);
    json_number_field(f, "test_loss", r->test_loss, 0);
    json_number_field(f, "test_acc", r->test_acc, 0);
    json_number_field(f, "seconds", r->seconds, 0);
    json_number_field(f, "images_per_s", r->images_per_s, 0);
    json_number_field(f, "task_share", r->task_share, 0);
    if (er) {
        sensor s[SENSOR_MAX];
        int n = energy_meter_sensors(er->meter, s, SENSOR_MAX);
        write_epoch_energy(f, &r->energy, s, n, st);
    }
    if (r->warning[0]) {
        fputs(", \"warning\": ", f);
        json_string(f, r->warning);
    }
    fputc('}', f);
    if (fclose(f)) {
        free(out);
        return NULL;
    }
    return out;
}

int report_epoch_tensorboard(tb_writer *tb, const epoch_record *r, long step, energy_run *er,
                             double wall_time)
{
    const energy_figures *f = &r->energy.f;
    const struct { const char *tag; double value; } scalars[] = {
        {"loss/train", r->train_loss}, {"loss/test", r->test_loss},
        {"accuracy/train", r->train_acc}, {"accuracy/test", r->test_acc},
        {"speed/images_per_s", r->images_per_s}, {"speed/task_share", r->task_share},
        {"energy/joules_train", f->joules}, {"energy/joules_test", r->energy.test.joules},
        {"energy/watts", f->watts}, {"energy/millijoules_per_image", 1e3 * f->joules_per_image},
        {"energy/gco2e", f->gco2e}, {"epoch", r->epoch},
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
        rc |= tensorboard_scalar(tb, scalars[i].tag, scalars[i].value, step, wall_time);
    sensor s[SENSOR_MAX];
    int n = er ? energy_meter_sensors(er->meter, s, SENSOR_MAX) : 0;
    for (int i = 0; i < n && i < f->ndevices; i++) {
        char tag[96];
        snprintf(tag, sizeof tag, "energy_by_device/%.60s", s[i].name);
        rc |= tensorboard_scalar(tb, tag, f->device_j[i], step, wall_time);
    }
    return rc;
}

/* The energy of every epoch in the log (the training and test passes), across resumes. */
static void write_log_totals(FILE *f, const run_log *log)
{
    double joules = 0, train_joules = 0, seconds = 0;
    for (int i = 0; i < log->nepochs; i++) {
        epoch_figures e = run_log_figures(&log->epochs[i]);
        if (isfinite(e.seconds) && isfinite(e.train_joules))
            seconds += e.seconds, train_joules += e.train_joules, joules += e.train_joules;
        if (isfinite(e.test_joules))
            joules += e.test_joules;
    }
    fprintf(f, ",\n    \"all_epochs\": {\"epochs\": %d", log->nepochs);
    json_number_field(f, "joules", joules, 0);
    json_number_field(f, "training_joules", train_joules, 0);
    json_number_field(f, "training_seconds", seconds, 0);
    fputc('}', f);
}

static void write_energy(FILE *f, const report_input *in, const sensor *s, int n)
{
    energy_run *er = in->er;
    long images = 0;
    for (int i = 0; i < in->log->nepochs; i++)
        images += in->train->n;
    energy_figures run;
    energy_run_total(er, images, &run);
    fputs(",\n  \"energy\": {\"source\": ", f);
    json_string(f, energy_meter_source(er->meter));
    fprintf(f, ", \"estimated\": %s", energy_meter_estimated(er->meter) ? "true" : "false");
    json_number_field(f, "idle_baseline_watts", er->baseline_w, 0);
    fputs(", \"idle_baseline\": ", f);
    json_string(f, er->baseline_how);
    json_number_field(f, "carbon_g_per_kwh", er->carbon.value, 0);
    if (er->carbon.path[0]) {
        fputs(", \"carbon_file\": ", f);
        json_string(f, er->carbon.path);
    }
    json_number_field(f, "sampler_hz", energy_meter_rate(er->meter), 0);
    json_number_field(f, "sampler_cpu_share", energy_meter_sampler_share(er->meter), 0);
    json_number_field(f, "sampler_samples", (double)energy_meter_samples(er->meter), 0);
    fputs(",\n    \"this_process\": {", f);
    write_figures(f, &run);
    fputc('}', f);
    write_log_totals(f, in->log);
    fputs(",\n    \"sensors\": [", f);
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s\n      {\"name\": ", i ? "," : "");
        json_string(f, s[i].name);
        fputs(", \"source\": ", f);
        json_string(f, s[i].source);
        fputs(", \"scope\": ", f);
        json_string(f, sensor_scope_name(s[i].scope));
        fputs(", \"status\": ", f);
        json_string(f, sensor_status_name(s[i].status));
        fprintf(f, ", \"counted\": %s", s[i].in_total ? "true" : "false");
        json_number_field(f, "joules", i < run.ndevices ? run.device_j[i] : 0, 0);
        fputs(", \"note\": ", f);
        json_string(f, s[i].why);
        fputc('}', f);
    }
    fputs("\n    ]}", f);
}

static void write_runtime(FILE *f, const char *key, const rt_stats *st)
{
    fprintf(f, ",\n  \"%s\": {\"tasks\": %llu, \"steals\": %llu, \"parks\": %llu", key,
            (unsigned long long)st->tasks, (unsigned long long)st->steals,
            (unsigned long long)st->parks);
    json_number_field(f, "task_share", st->task_share, 0);
    fprintf(f, ", \"copies_to_devices\": %llu, \"copies_to_host\": %llu",
            (unsigned long long)st->to_device.count, (unsigned long long)st->to_host.count);
    fputs(", \"kinds\": [", f);
    for (int k = 0; k < st->nkinds; k++) {
        fprintf(f, "%s\n    {\"name\": ", k ? "," : "");
        json_string(f, st->kinds[k].name);
        fprintf(f, ", \"tasks\": %llu", (unsigned long long)st->kinds[k].count);
        json_number_field(f, "busy_s", st->kinds[k].busy_s, 0);
        fputs(", \"where\": {", f);
        for (int w = 0, first = 1; w < RT_WORKER_KINDS; w++)
            if (st->kinds[k].count_by[w]) {
                fprintf(f, "%s\"%s\": %llu", first ? "" : ", ",
                        rt_worker_kind_name((rt_worker_kind)w),
                        (unsigned long long)st->kinds[k].count_by[w]);
                first = 0;
            }
        fputs("}}", f);
    }
    fputs("\n  ]}", f);
}

/* summary.json's "config": the job's settings that shape the run. */
static void write_config(FILE *f, const report_input *in)
{
    const job_config *cfg = in->cfg;
    fprintf(f, "  \"config\": {\"epochs\": %d, \"batch\": %d, \"seed\": %llu", cfg->epochs,
            cfg->batch, cfg->seed);
    if (cfg->batch_asked)   /* more than the data set: made the whole set */
        fprintf(f, ", \"batch_asked\": %d", cfg->batch_asked);
    json_number_field(f, "lr", cfg->lr, 0);
    json_number_field(f, "momentum", cfg->momentum, 0);
    json_number_field(f, "weight_decay", cfg->weight_decay, 0);
    long per_epoch = (in->train->n + cfg->batch - 1) / cfg->batch;
    fprintf(f, ", \"log_every_batches\": %d, \"log_every_auto\": %s",
            step_log_every(cfg->log_every, per_epoch), cfg->log_every ? "false" : "true");
    fprintf(f, ", \"workers\": %d, \"grain\": %d, \"layers\": [", in->workers, in->plan->grain);
    for (int l = 0; l < cfg->nlayers; l++) {
        fprintf(f, "%s", l ? ", " : "");
        json_string(f, layer_name(cfg->layers[l].type));
    }
    fputs("]},\n", f);
}

/* summary.json's "execution": how the tasks ran, on which devices, as placement chose. */
static void write_execution(FILE *f, const report_input *in)
{
    fputs("  \"execution\": {", f);
    plan_write_json(in->plan, in->m, f);
    if (in->cfg->slowdown > 1)
        fprintf(f, ", \"emulated_slowdown\": %g", in->cfg->slowdown);
    if (in->devices) {
        fputs(", ", f);
        devices_write_json(in->devices, f);
    }
    if (in->placement) {
        fputs(", ", f);
        worker_control_json(in->placement, f);
    }
    fputs("},\n", f);
}

/* summary.json's optional sections: the cluster, the green schedule, the gossip peers. */
static void write_parts(FILE *f, const report_input *in)
{
    if (in->cluster) {
        fputs("  \"cluster\": {", f);
        report_cluster_json(f, in->cluster);
        fputs("},\n", f);
    }
    if (in->green) {
        fputs("  \"green\": {", f);
        green_log_json(f, in->green);
        fputs("},\n", f);
    }
    if (in->gossip) {
        fputs("  \"gossip\": {", f);
        report_gossip_json(f, in->gossip);
        fputs("},\n", f);
    }
}

static void write_job(FILE *f, const report_input *in)
{
    fputs("{\n  \"job\": ", f);
    json_string(f, in->cfg->path);
    fputs(",\n", f);
    write_config(f, in);
    fprintf(f, "  \"data\": {\"train_samples\": %ld, \"test_samples\": %ld, \"height\": %d, "
               "\"width\": %d, \"channels\": %d, \"classes\": %d},\n",
            in->train->n, in->test ? in->test->n : 0L, in->train->h, in->train->w, in->train->c,
            in->train->classes);
    fprintf(f, "  \"machine\": {\"cpus\": %ld, \"kernel_path\": \"%s\", \"timer\": \"%s\"},\n",
            sysconf(_SC_NPROCESSORS_ONLN), ops_isa_name(ops_isa_active()), clock_source());
    fputs("  \"environment\": ", f);   /* the switches that changed what ran (env_switches.h) */
    env_switches_write_json(f);
    fputs(",\n", f);
    if (in->launch)   /* the batch system or MPI launcher found (engine/cli/launch.h) */
        fprintf(f, "  \"launch\": %s,\n", in->launch);
    write_execution(f, in);
    write_parts(f, in);
    fprintf(f, "  \"run\": {\"resumed_after_epoch\": %d, \"interrupted\": ", in->resumed_after);
    if (in->interrupted)
        json_string(f, in->interrupted);
    else
        fputs("null", f);
    fputs("},\n", f);
}

static void fill_summary(FILE *f, const void *arg)
{
    const report_input *in = arg;
    write_job(f, in);
    fputs("  \"epochs\": [", f);
    for (int e = 0; e < in->log->nepochs; e++)
        fprintf(f, "%s\n    %s", e ? "," : "", in->log->epochs[e].json);
    fputs("\n  ]", f);
    write_runtime(f, "runtime_last_epoch", in->st);
    write_runtime(f, "runtime_this_process", in->total);
    if (in->er) {
        sensor sensors[SENSOR_MAX];
        int n = energy_meter_sensors(in->er->meter, sensors, SENSOR_MAX);
        write_energy(f, in, sensors, n);
    }
    fputs("\n}\n", f);
}

static void fill_metrics(FILE *f, const void *arg)
{
    const run_log *log = arg;
    fprintf(f, "%s\n", report_csv_header);
    for (int i = 0; i < log->nepochs; i++)
        fprintf(f, "%s\n", log->epochs[i].csv);
}

int report_write(const char *path, const report_input *in, char *err, size_t errlen)
{
    return run_folder_write_atomic_with(path, fill_summary, in, err, errlen);
}

int report_write_metrics(const char *path, const run_log *log, char *err, size_t errlen)
{
    return run_folder_write_atomic_with(path, fill_metrics, log, err, errlen);
}
