#include "engine/job/energy_run.h"

#include <math.h>
#include <string.h>
#include <time.h>

int energy_run_carbon_traces(carbon_source *cs, const job_config *cfg, const char *carbon,
                             const char *renewable, char *err, size_t errlen)
{
    if ((!carbon || !carbon[0]) && (!renewable || !renewable[0]))
        return 0;
    double start = cfg->trace_start >= 0 ? cfg->trace_start : (double)time(NULL);
    char why[600];
    if (carbon_follow_traces(cs, carbon && carbon[0] ? carbon : NULL,
                             renewable && renewable[0] ? renewable : NULL, start, cfg->trace_speed,
                             why, sizeof why))
        return snprintf(err, errlen, "%s", why), -1;
    carbon_update(cs, 0, 0, why, sizeof why);
    return 0;
}

/* The grid's carbon intensity: a constant, a file read now and then, or traces replayed. */
static int carbon_begin(energy_run *er, const job_config *cfg, char *err, size_t errlen)
{
    carbon_init(&er->carbon, cfg->carbon_g_per_kwh, cfg->carbon_file);
    char why[600];
    if (carbon_update(&er->carbon, 0, 0, why, sizeof why)) {
        snprintf(err, errlen, "[energy] carbon_file: %s", why);
        return -1;
    }
    if (energy_run_carbon_traces(&er->carbon, cfg, cfg->carbon_trace, cfg->renewable_trace, why,
                                 sizeof why)) {
        snprintf(err, errlen, "[energy] carbon_trace or renewable_trace: %s", why);
        return -1;
    }
    if (carbon_follows_traces(&er->carbon))
        fprintf(er->log, "energy: replaying %s%s%s from trace time %.0f at %g trace seconds a "
                "second\n", cfg->carbon_trace,
                cfg->carbon_trace[0] && cfg->renewable_trace[0] ? " and " : "",
                cfg->renewable_trace, er->carbon.replay.start, cfg->trace_speed);
    return 0;
}

/* The meter open and sampling; where its total comes from and each unreadable sensor, said. */
static int meter_begin(energy_run *er, const job_config *cfg, char *err, size_t errlen)
{
    er->meter = energy_meter_open(&(energy_options){
        cfg->energy_rate_hz, cfg->model_idle_watts, cfg->model_core_watts,
        {cfg->power_profile[0], cfg->power_profile[1], cfg->power_profile[2]}});
    if (!er->meter) {
        snprintf(err, errlen, "out of memory opening the energy meter");
        return -1;
    }
    fprintf(er->log, "energy: %s\n", energy_meter_source(er->meter));
    sensor s[SENSOR_MAX];
    int n = energy_meter_sensors(er->meter, s, SENSOR_MAX);
    for (int i = 0; i < n; i++)
        if (s[i].status == SENSOR_UNREADABLE)
            fprintf(er->log, "energy: %s %s unreadable: %s\n", s[i].source, s[i].name, s[i].why);
    if (energy_meter_start(er->meter, err, errlen)) {
        energy_meter_close(er->meter);
        er->meter = NULL;
        return -1;
    }
    return 0;
}

/* The idle power subtracted from the run's: configured, measured now over the job's
 * baseline_seconds (the machine's and each sensor's), or none. */
static void baseline_begin(energy_run *er, const job_config *cfg)
{
    if (cfg->baseline_watts >= 0) {
        er->baseline_w = cfg->baseline_watts;
        snprintf(er->baseline_how, sizeof er->baseline_how, "configured");
    } else if (cfg->baseline_seconds > 0) {
        energy_reading a, b;
        energy_meter_read(er->meter, &a);
        double whole;
        double frac = modf(cfg->baseline_seconds, &whole);
        nanosleep(&(struct timespec){(time_t)whole, (long)(frac * 1e9)}, NULL);
        energy_meter_read(er->meter, &b);
        er->baseline_w = b.t > a.t ? (b.total_j - a.total_j) / (b.t - a.t) : 0;
        for (int i = 0; i < b.n && i < a.n && b.t > a.t; i++)
            er->sensor_idle_w[i] = (b.joules[i] - a.joules[i]) / (b.t - a.t);
        er->idle_measured = b.t > a.t;
        snprintf(er->baseline_how, sizeof er->baseline_how, "measured idle over %.1f s",
                 b.t - a.t);
    } else {
        snprintf(er->baseline_how, sizeof er->baseline_how, "none");
    }
    fprintf(er->log, "energy: idle baseline %.1f W (%s), sampling at %g Hz\n", er->baseline_w,
            er->baseline_how, energy_meter_rate(er->meter));
}

int energy_run_begin(energy_run *er, const job_config *cfg, FILE *log, char *err, size_t errlen)
{
    memset(er, 0, sizeof *er);
    er->log = log;
    if (carbon_begin(er, cfg, err, errlen) || meter_begin(er, cfg, err, errlen))
        return -1;
    baseline_begin(er, cfg);
    energy_meter_read(er->meter, &er->run_start);
    er->epoch_start = er->pass_start = er->run_start;
    er->run_start_grams = er->pass_start_grams = carbon_grams(&er->carbon, er->run_start.total_j);
    return 0;
}

void energy_run_epoch_begin(energy_run *er)
{
    energy_meter_read(er->meter, &er->epoch_start);
    er->pass_start = er->epoch_start;
    er->pass_start_grams = carbon_grams(&er->carbon, er->epoch_start.total_j);
}

static void follow_carbon(energy_run *er, const energy_reading *now)
{
    char why[600];
    if (carbon_update(&er->carbon, now->t, now->total_j, why, sizeof why))
        fprintf(er->log, "energy: %s; keeping %g g CO2e/kWh\n", why, er->carbon.value);
}

/* Called every batch: the sampler's latest figures, as a fresh sample can take milliseconds. */
void energy_run_follow_carbon(energy_run *er)
{
    energy_reading now;
    energy_meter_latest(er->meter, &now);
    follow_carbon(er, &now);
}

void energy_run_pass_end(energy_run *er, long images, energy_figures *out)
{
    energy_reading now;
    energy_meter_read(er->meter, &now);
    follow_carbon(er, &now);
    energy_figures_between(&er->pass_start, &now, images, er->baseline_w, er->carbon.value, out);
    out->gco2e = carbon_grams(&er->carbon, now.total_j) - er->pass_start_grams;
    er->pass_start = now;
    er->pass_start_grams = carbon_grams(&er->carbon, now.total_j);
}

/* Tasks run on the CPU today: CPU-side sensors (system, packages, DRAM, board) are split among
 * the kinds; a GPU sensor's energy is not, as no task ran there. */
static double cpu_side_joules(energy_run *er, const energy_figures *f)
{
    sensor s[SENSOR_MAX];
    int n = energy_meter_sensors(er->meter, s, SENSOR_MAX);
    double j = 0;
    for (int i = 0; i < n && i < f->ndevices; i++)
        if (s[i].in_total && s[i].scope != SCOPE_GPU)
            j += f->device_j[i];
    return j;
}

/* The peer worker's time is left out: it waits for chunks other machines compute (each node
 * measures its own energy), and its own work (packing parameters to send) is microseconds. */
void energy_run_split_kinds(energy_run *er, const rt_stats *st, epoch_energy *e)
{
    double busy[RT_MAX_KINDS];
    e->nkinds = st->nkinds;
    for (int k = 0; k < st->nkinds; k++) {
        busy[k] = st->kinds[k].busy_s - st->kinds[k].busy_by[RT_WORKER_PEER];
        busy[k] = busy[k] > 0 ? busy[k] : 0;
        e->kind_tasks[k] = st->kinds[k].count;
    }
    energy_split_by_busy(cpu_side_joules(er, &e->f) + cpu_side_joules(er, &e->test), busy,
                         st->nkinds, e->kind_j);
}

void energy_run_so_far(energy_run *er, double *joules, double *watts)
{
    energy_reading now;
    energy_meter_latest(er->meter, &now);
    *joules = now.total_j - er->epoch_start.total_j;   /* the epoch so far */
    *watts = now.total_w;
}

void energy_run_total(energy_run *er, long images, energy_figures *out)
{
    energy_reading now;
    energy_meter_read(er->meter, &now);
    energy_figures_between(&er->run_start, &now, images, er->baseline_w, er->carbon.value, out);
    out->gco2e = carbon_grams(&er->carbon, now.total_j) - er->run_start_grams;
}

void energy_run_print(energy_run *er, const epoch_energy *last, const rt_stats *st, long images,
                      int verbose, FILE *f)
{
    energy_figures run;
    energy_run_total(er, images, &run);
    fprintf(f, "energy (%s)\n", energy_meter_source(er->meter));
    fprintf(f, "  run: %.1f J in %.1f s, %.1f W, %.3f mJ/image, %.1f J above the %.1f W idle "
               "baseline, EDP %.3g J*s, %.3f gCO2e at %g g/kWh\n",
            run.joules, run.seconds, run.watts, 1e3 * run.joules_per_image, run.app_joules,
            er->baseline_w, run.edp, run.gco2e, er->carbon.value);
    if (run.baseline_too_high)
        fprintf(f, "  the idle baseline (%.1f W) is above the run's mean power (%.1f W): it was "
                   "measured while something else loaded the machine; give a known figure "
                   "([energy] baseline_watts) or measure it quiet\n", er->baseline_w, run.watts);
    if (!verbose)
        return;
    sensor s[SENSOR_MAX];
    int n = energy_meter_sensors(er->meter, s, SENSOR_MAX);
    for (int i = 0; i < n && i < run.ndevices; i++)
        fprintf(f, "  %-28s %-7s %10.1f J  %s%s%s\n", s[i].name, s[i].source, run.device_j[i],
                s[i].in_total ? "counted" : s[i].status == SENSOR_OK ? "not added: inside the total"
                                                                     : sensor_status_name(s[i].status),
                s[i].why[0] ? ": " : "", s[i].why);
    if (last->nkinds) {
        fprintf(f, "  last epoch by task kind (its energy split by busy time here):\n");
        for (int k = 0; k < last->nkinds && k < st->nkinds; k++)
            if (last->kind_tasks[k] && st->kinds[k].count_by[RT_WORKER_PEER] == st->kinds[k].count)
                fprintf(f, "    %-24s  none: tasks of the cluster's peer worker (each node "
                        "measures its own energy)\n", st->kinds[k].name);
            else if (last->kind_tasks[k])
                fprintf(f, "    %-24s %10.2f J  %9.3f mJ/task\n", st->kinds[k].name,
                        last->kind_j[k], 1e3 * last->kind_j[k] / (double)last->kind_tasks[k]);
    }
    fprintf(f, "  sampler: %ld samples at %g Hz, %.3f%% of one core\n",
            energy_meter_samples(er->meter), energy_meter_rate(er->meter),
            100 * energy_meter_sampler_share(er->meter));
}

void energy_run_end(energy_run *er)
{
    energy_meter_close(er->meter);
    er->meter = NULL;
    carbon_free(&er->carbon);
}
