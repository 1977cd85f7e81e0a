#include "engine/report.h"

#include "common/json.h"

#include "ops/cpu.h"
#include "runtime/clock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void write_figures(FILE *f, const energy_figures *e)
{
    json_number_field(f, "joules", e->joules, 1);
    json_number_field(f, "watts", e->watts, 0);
    json_number_field(f, "joules_per_image", e->joules_per_image, 0);
    json_number_field(f, "edp_joule_seconds", e->edp, 0);
    json_number_field(f, "joules_above_idle", e->app_joules, 0);
    json_number_field(f, "gco2e", e->gco2e, 0);
}

static void write_epoch_energy(FILE *f, const epoch_energy *en, const sensor *s, int n,
                               const rt_stats *st)
{
    fputs(", \"energy\": {", f);
    write_figures(f, &en->f);
    fputs(", \"devices\": {", f);
    for (int i = 0; i < n && i < en->f.ndevices; i++) {
        fputs(i ? ", " : "", f);
        json_string(f, s[i].name);
        fputs(": ", f);
        json_number(f, en->f.device_j[i]);
    }
    fputs("}, \"task_kinds\": [", f);
    for (int k = 0, first = 1; k < en->nkinds && k < st->nkinds; k++) {
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

static void write_energy(FILE *f, energy_run *er, const sensor *s, int n,
                         const epoch_result *epochs, int nepochs)
{
    long images = 0;
    for (int e = 0; e < nepochs; e++)
        images += epochs[e].samples;
    energy_figures run;
    energy_run_total(er, images, &run);
    fputs(",\n  \"energy\": {\"source\": ", f);
    json_string(f, energy_meter_source(er->meter));
    fprintf(f, ", \"estimated\": %s", energy_meter_estimated(er->meter) ? "true" : "false");
    json_number_field(f, "idle_baseline_watts", er->baseline_w, 0);
    fputs(", \"idle_baseline\": ", f);
    json_string(f, er->baseline_how);
    json_number_field(f, "carbon_g_per_kwh", er->carbon_g_per_kwh, 0);
    json_number_field(f, "sampler_hz", energy_meter_rate(er->meter), 0);
    json_number_field(f, "sampler_cpu_share", energy_meter_sampler_share(er->meter), 0);
    fputs(",\n    \"run\": {", f);
    write_figures(f, &run);
    fputs("},\n    \"sensors\": [", f);
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

int report_write(const char *path, const job_config *cfg, const dataset *train,
                 const dataset *test, int grain, int workers, const epoch_result *epochs,
                 int nepochs, int first_epoch, const rt_stats *st, energy_run *er,
                 const epoch_energy *energies, char *err, size_t errlen)
{
    sensor sensors[SENSOR_MAX];
    int nsensors = er ? energy_meter_sensors(er->meter, sensors, SENSOR_MAX) : 0;
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        return -1;
    }
    fputs("{\n  \"job\": ", f);
    json_string(f, cfg->path);
    fprintf(f, ",\n  \"config\": {\"epochs\": %d, \"batch\": %d, \"seed\": %llu",
            cfg->epochs, cfg->batch, cfg->seed);
    json_number_field(f, "lr", cfg->lr, 0);
    json_number_field(f, "momentum", cfg->momentum, 0);
    json_number_field(f, "weight_decay", cfg->weight_decay, 0);
    fprintf(f, ", \"workers\": %d, \"grain\": %d, \"layers\": [", workers, grain);
    for (int l = 0; l < cfg->nlayers; l++) {
        fprintf(f, "%s", l ? ", " : "");
        json_string(f, layer_name(cfg->layers[l].type));
    }
    fprintf(f, "]},\n  \"data\": {\"train_samples\": %ld, \"test_samples\": %ld, \"height\": %d, "
               "\"width\": %d, \"channels\": %d, \"classes\": %d},\n",
            train->n, test ? test->n : 0L, train->h, train->w, train->c, train->classes);
    fprintf(f, "  \"machine\": {\"cpus\": %ld, \"kernel_path\": \"%s\", \"timer\": \"%s\"},\n",
            sysconf(_SC_NPROCESSORS_ONLN), ops_isa_name(ops_isa_active()), clock_source());
    fputs("  \"epochs\": [", f);
    for (int e = 0; e < nepochs; e++) {
        const epoch_result *r = &epochs[e];
        fprintf(f, "%s\n    {\"epoch\": %d", e ? "," : "", first_epoch + e);
        json_number_field(f, "train_loss", r->train_loss, 0);
        json_number_field(f, "train_acc", r->train_acc, 0);
        json_number_field(f, "test_loss", r->test_loss, 0);
        json_number_field(f, "test_acc", r->test_acc, 0);
        json_number_field(f, "seconds", r->seconds, 0);
        json_number_field(f, "images_per_s", r->images_per_s, 0);
        json_number_field(f, "task_share", r->task_share, 0);
        if (energies)
            write_epoch_energy(f, &energies[e], sensors, nsensors, st);
        fputc('}', f);
    }
    fprintf(f, "\n  ],\n  \"runtime_last_epoch\": {\"tasks\": %llu, \"steals\": %llu, "
               "\"parks\": %llu",
            (unsigned long long)st->tasks, (unsigned long long)st->steals,
            (unsigned long long)st->parks);
    json_number_field(f, "task_share", st->task_share, 0);
    fputs(", \"kinds\": [", f);
    for (int k = 0; k < st->nkinds; k++) {
        fprintf(f, "%s\n    {\"name\": ", k ? "," : "");
        json_string(f, st->kinds[k].name);
        fprintf(f, ", \"tasks\": %llu", (unsigned long long)st->kinds[k].count);
        json_number_field(f, "busy_s", st->kinds[k].busy_s, 0);
        fputc('}', f);
    }
    fputs("\n  ]}", f);
    if (er)
        write_energy(f, er, sensors, nsensors, epochs, nepochs);
    fputs("\n}\n", f);
    int bad = ferror(f);
    if (fflush(f) || fsync(fileno(f)))
        bad = 1;
    if (fclose(f) || bad || rename(tmp, path)) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}
