#include "engine/sim/sim_report.h"

#include "common/json.h"
#include "engine/job/run_folder.h"
#include "engine/report/html_report.h"
#include "engine/report/report.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#define PREDICTS "predicts cost (time, energy, carbon, bytes), not accuracy"

static double mb(unsigned long long b) { return (double)b / 1e6; }

void sim_report_print(FILE *f, const sim_scenario *s, const sim_result *r)
{
    char mode[96];
    sim_mode_name(s, mode, sizeof mode);
    fprintf(f, "simulate %s: job %s, %s, %d machines, %d epochs of %ld samples (%ld parameters, "
            "%.4g FLOPs a sample, %d chunks a batch); %s\n", s->path, s->job_path, mode, r->n,
            r->nepochs, s->samples, r->nparams, r->flops_per_sample, r->nchunks, PREDICTS);
    for (int e = 0; e < r->nepochs; e++) {
        const sim_epoch *x = &r->epochs[e];
        fprintf(f, "epoch %d/%d  %.4g s  %.4g img/s  %.4g J  %.4g gCO2e (simulated)\n", e + 1, r->nepochs,
                x->seconds, x->seconds > 0 ? x->samples / x->seconds : 0, x->joules, x->grams);
    }
    int shown = r->n < 16 ? r->n : 16;
    for (int i = 0; i < shown; i++) {
        const sim_machine_result *m = &r->m[i];
        fprintf(f, "  %s: %.4g img/s, %ld chunks, %.1f%% of the samples, computing %.1f%% of %.4g s "
                "(idle %.4g s), %.4g J, %.4g gCO2e, %.3g MB sent, %.3g MB received, left out of %ld "
                "rounds\n", m->name, m->img_per_s,
                m->chunks, r->samples > 0 ? 100.0 * (double)m->samples / r->samples : 0,
                m->present_s > 0 ? 100 * m->compute_s / m->present_s : 0, m->present_s,
                m->present_s - m->compute_s, m->joules, m->grams, mb(m->bytes_sent), mb(m->bytes_received),
                m->rounds_out);
    }
    if (r->n > shown)
        fprintf(f, "  (%d machines more in summary.json)\n", r->n - shown);
    const sim_machine_result *b = &r->m[r->busiest];
    fprintf(f, "total: %.4g s, %.4g J, %.4g gCO2e; busiest link: %s, %.3g MB both ways\n", r->seconds,
            r->joules, r->grams, b->name, mb(b->bytes_sent + b->bytes_received));
}

static void write_machine(FILE *f, const sim_scenario *s, const sim_result *r, int i)
{
    const sim_machine_result *m = &r->m[i];
    const sim_group *g = &s->groups[m->group];
    fputs("{\"address\": ", f);
    json_string(f, m->name);
    fputs(", \"profile\": ", f);
    json_string(f, g->profile.name);
    fprintf(f, ", \"workers\": %d, \"chunks\": %ld, \"samples\": %ld", g->workers, m->chunks, m->samples);
    json_fixed_field(f, "share", r->samples > 0 ? (double)m->samples / r->samples : 0, 4);
    json_fixed_field(f, "img_per_s", m->img_per_s, 1);
    json_number_field(f, "chunk_s", m->chunk_s, 0);
    json_fixed_field(f, "compute_s", m->compute_s, 3);
    json_fixed_field(f, "idle_s", m->present_s - m->compute_s, 3);
    json_fixed_field(f, "present_s", m->present_s, 3);
    fprintf(f, ", \"bytes_sent\": %llu, \"bytes_received\": %llu", m->bytes_sent, m->bytes_received);
    json_fixed_field(f, "joules", m->joules, 3);
    json_number_field(f, "gco2e", m->grams, 0);
    fprintf(f, ", \"rounds_out\": %ld", m->rounds_out);
    fputs(", \"energy\": ", f);
    json_string(f, g->profile.energy);
    fputc('}', f);
}

static void write_summary(FILE *f, const void *arg)
{
    const void *const *a = arg;
    const sim_scenario *s = a[0];
    const sim_result *r = a[1];
    char mode[96];
    sim_mode_name(s, mode, sizeof mode);
    fputs("{\"job\": ", f);
    json_string(f, s->job_path);
    fputs(", \"simulated\": {\"scenario\": ", f);
    json_string(f, s->path);
    fprintf(f, ", \"mode\": \"%s\", \"machines\": %d, \"epochs\": %d, \"samples\": %ld, \"parameters\": %ld",
            mode, r->n, r->nepochs, s->samples, r->nparams);
    json_number_field(f, "flops_per_sample", r->flops_per_sample, 0);
    fprintf(f, ", \"chunks_per_batch\": %d, \"rounds\": %ld", r->nchunks, r->rounds);
    json_fixed_field(f, "seconds", r->seconds, 4);
    json_fixed_field(f, "joules", r->joules, 3);
    json_number_field(f, "gco2e", r->grams, 0);
    fprintf(f, ", \"busiest\": \"%s\", \"note\": \"%s\"}", r->m[r->busiest].name, PREDICTS);
    fputs(", \"epochs\": [", f);
    for (int e = 0; e < r->nepochs; e++) {
        const sim_epoch *x = &r->epochs[e];
        fprintf(f, "%s{\"epoch\": %d", e ? ", " : "", e + 1);
        json_number_field(f, "seconds", x->seconds, 0);
        json_number_field(f, "images_per_s", x->seconds > 0 ? x->samples / x->seconds : 0, 0);
        fputs(", \"energy\": {\"joules\": ", f);
        json_number(f, x->joules);
        json_number_field(f, "watts", x->seconds > 0 ? x->joules / x->seconds : 0, 0);
        json_number_field(f, "gco2e", x->grams, 0);
        fputs("}}", f);
    }
    fputs("], \"energy\": {\"source\": \"simulated from the machines' profiles\", \"estimated\": true}, "
          "\"cluster\": {\"mode\": ", f);
    json_string(f, mode);
    json_fixed_field(f, "joules_every_machine", r->joules, 3);
    fputs(", \"nodes\": [", f);
    for (int i = 0; i < r->n; i++) {
        fputs(i ? ", " : "", f);
        write_machine(f, s, r, i);
    }
    fputc(']', f);
    report_cluster_traffic_json(f, r->traffic, r->ntraffic);
    fputs("}}\n", f);
}

static void write_metrics(FILE *f, const void *arg)
{
    const sim_result *r = ((const void *const *)arg)[1];
    fputs("epoch,train_loss,train_acc,test_loss,test_acc,seconds,images_per_s,task_share,energy_j,power_w,"
          "mj_per_image,app_energy_j,edp_js,gco2e,energy_source,test_energy_j\n", f);
    for (int e = 0; e < r->nepochs; e++) {
        const sim_epoch *x = &r->epochs[e];
        double ips = x->seconds > 0 ? x->samples / x->seconds : 0;
        fprintf(f, "%d,nan,nan,nan,nan,%.6g,%.6g,nan,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,simulated,0\n", e + 1,
                x->seconds, ips, x->joules, x->seconds > 0 ? x->joules / x->seconds : 0,
                x->samples > 0 ? 1e3 * x->joules / x->samples : 0, x->joules, x->joules * x->seconds, x->grams);
    }
}

int sim_report_write(const char *dir, const sim_scenario *s, const sim_result *r, char *err, size_t errlen)
{
    if (mkdir(dir, 0755) && errno != EEXIST)
        return snprintf(err, errlen, "%s: %s", dir, strerror(errno)), -1;
    const void *arg[2] = {s, r};
    char path[1024];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    if (run_folder_write_atomic_with(path, write_summary, arg, err, errlen))
        return -1;
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    if (run_folder_write_atomic_with(path, write_metrics, arg, err, errlen))
        return -1;
    snprintf(path, sizeof path, "%s/report.html", dir);
    const char *dirs[1] = {dir};
    return html_report_write(path, dirs, 1, err, errlen);
}
