#include "engine/report/html_report.h"

#include "common/json_parse.h"
#include "engine/job/config.h"
#include "engine/report/csv_table.h"
#include "common/input_file.h"
#include "engine/job/run_folder.h"
#include "engine/report/svg_chart.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct run_data {
    char name[160];              /* the folder, as given */
    csv_table metrics, power;    /* power.nrows 0: no timeline */
    csv_table steps;             /* points every few batches; nrows 0: none */
    csv_table green;             /* green.csv: participation over time; nrows 0: none */
    json_value *summary;         /* NULL: none */
    char *job;                   /* the job file's text (job.cfg), or NULL */
} run_data;

/* Arrays the charts point into, freed once the page is written. */
typedef struct report {
    FILE *f;
    run_data *runs;
    int nruns;
    double *scratch[512];
    int nscratch;
} report;

static double *scratch(report *rp, int n)
{
    if (rp->nscratch == (int)(sizeof rp->scratch / sizeof rp->scratch[0]))
        return NULL;
    double *v = calloc((size_t)(n > 0 ? n : 1), sizeof *v);
    return v ? rp->scratch[rp->nscratch++] = v : NULL;
}

/* ---- reading a run folder ---- */

static int run_load(run_data *r, const char *dir, char *err, size_t errlen)
{
    char path[700], why[400];
    size_t len;
    snprintf(r->name, sizeof r->name, "%s", dir);
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    if (csv_read(&r->metrics, path, why, sizeof why)) {
        snprintf(err, errlen, "%.300s: not a frugal run folder (%.400s)", dir, why);
        return -1;
    }
    snprintf(path, sizeof path, "%s/summary.json", dir);
    if (access(path, F_OK) == 0) {   /* optional, but when there it must read */
        char *text = input_read_all(path, 256 << 20, "run summary", &len, why, sizeof why);
        if (text && !(r->summary = json_parse(text, len, why, sizeof why)))
            snprintf(err, errlen, "%s: %s", path, why);
        else if (!text)
            snprintf(err, errlen, "%s", why);
        free(text);
        if (!r->summary)
            return -1;
    }
    snprintf(path, sizeof path, "%s/power.csv", dir);
    if (csv_read(&r->power, path, why, sizeof why))
        memset(&r->power, 0, sizeof r->power);   /* no timeline: the page says so */
    snprintf(path, sizeof path, "%s/steps.csv", dir);
    if (csv_read(&r->steps, path, why, sizeof why))
        memset(&r->steps, 0, sizeof r->steps);   /* an older run: its epochs alone */
    snprintf(path, sizeof path, "%s/green.csv", dir);
    if (access(path, F_OK) || csv_read(&r->green, path, why, sizeof why))
        memset(&r->green, 0, sizeof r->green);   /* no participation decisions */
    snprintf(path, sizeof path, "%s/job.cfg", dir);
    r->job = access(path, F_OK) ? NULL : input_read_all(path, CONFIG_MAX_BYTES, "job file", &len, why, sizeof why);
    return 0;
}

static void run_free(run_data *r)
{
    csv_free(&r->metrics);
    csv_free(&r->power);
    csv_free(&r->steps);
    csv_free(&r->green);
    json_free(r->summary);
    free(r->job);
}

/* ---- any JSON value as HTML: objects as key/value tables, arrays of objects as tables ---- */

static void json_html(FILE *f, const json_value *v);

static void json_scalar(FILE *f, const json_value *v)
{
    switch (v->type) {
    case JSON_NULL: fputs("&ndash;", f); break;
    case JSON_FALSE: fputs("no", f); break;
    case JSON_TRUE: fputs("yes", f); break;
    case JSON_NUMBER: fprintf(f, "%.6g", v->number); break;
    case JSON_STRING: svg_text(f, v->string); break;
    default: json_html(f, v);
    }
}

/* The columns of an array of objects: every member name, in first-seen order (at most 32). */
static int columns_of(const json_value *a, const char **cols, int max)
{
    int n = 0;
    for (int i = 0; i < a->n; i++)
        for (int k = 0; a->items[i].type == JSON_OBJECT && k < a->items[i].n; k++) {
            int seen = 0;
            for (int c = 0; c < n && !seen; c++)
                seen = !strcmp(cols[c], a->items[i].keys[k]);
            if (!seen && n < max)
                cols[n++] = a->items[i].keys[k];
        }
    return n;
}

static void json_html(FILE *f, const json_value *v)
{
    if (v->type == JSON_OBJECT) {
        fputs("<table class='kv'>", f);
        for (int i = 0; i < v->n; i++) {
            fputs("<tr><th>", f);
            svg_text(f, v->keys[i]);
            fputs("</th><td>", f);
            json_scalar(f, &v->items[i]);
            fputs("</td></tr>", f);
        }
        fputs("</table>", f);
    } else if (v->type == JSON_ARRAY && v->n && v->items[0].type == JSON_OBJECT) {
        const char *cols[32];
        int nc = columns_of(v, cols, 32);
        fputs("<table class='grid'><tr>", f);
        for (int c = 0; c < nc; c++) {
            fputs("<th>", f);
            svg_text(f, cols[c]);
            fputs("</th>", f);
        }
        for (int i = 0; i < v->n; i++) {
            fputs("</tr><tr>", f);
            for (int c = 0; c < nc; c++) {
                fputs("<td>", f);
                const json_value *cell = v->items[i].type == JSON_OBJECT ? json_get(&v->items[i], cols[c]) : NULL;
                if (cell)
                    json_scalar(f, cell);
                fputs("</td>", f);
            }
        }
        fputs("</tr></table>", f);
    } else if (v->type == JSON_ARRAY) {
        for (int i = 0; i < v->n; i++) {
            fputs(i ? ", " : "", f);
            json_scalar(f, &v->items[i]);
        }
    } else {
        json_scalar(f, v);
    }
}

/* A heading and a summary.json section of each run that has it. */
static void json_section(report *rp, const char *title, const char *path)
{
    for (int i = 0; i < rp->nruns; i++) {
        const json_value *v = json_get(rp->runs[i].summary, path);
        if (!v)
            continue;
        fputs("<h3>", rp->f);
        svg_text(rp->f, title);
        if (rp->nruns > 1) {
            fputs(": ", rp->f);
            svg_text(rp->f, rp->runs[i].name);
        }
        fputs("</h3>\n<div class='scroll'>", rp->f);
        json_html(rp->f, v);
        fputs("</div>\n", rp->f);
    }
}

/* ---- charts ---- */

static void series_name(char *buf, size_t n, const report *rp, int run, const char *what)
{
    if (rp->nruns > 1)
        snprintf(buf, n, "%.60s: %.90s", rp->runs[run].name, what);
    else
        snprintf(buf, n, "%.150s", what);
}

/* Per-epoch figures from metrics.csv: one series per run and column. */
/* Whether a column holds a figure: finite, and not zero. */
static int any_figure(const double *y, int n)
{
    for (int i = 0; i < n; i++)
        if (isfinite(y[i]) && y[i] != 0)
            return 1;
    return 0;
}

#define MARKED_STEPS 120   /* a longer series of steps is a plain line */

/* steps.csv's column (the training figure every few batches) as a series of run i, at its
 * fractional epoch. */
static void steps_series(report *rp, chart *c, int i, const char *col, const char *label)
{
    const csv_table *t = &rp->runs[i].steps;
    const double *x = csv_values(t, "epochs"), *y = csv_values(t, col);
    char name[160], key[96];
    series_name(name, sizeof name, rp, i, label);
    snprintf(key, sizeof key, "steps/%s", col);
    chart_series *s = x && y && t->nrows ? svg_chart_add(c, name, key, i, t->nrows, x, y) : NULL;
    if (s)
        s->points = t->nrows <= MARKED_STEPS;
}

/* Per-epoch figures from metrics.csv (one series per run and column), and steps.csv's column
 * step_col (NULL: none) drawn between them. */
static void epoch_chart(report *rp, const char *title, const char *ylabel, const char *const *cols,
                        const char *const *labels, int ncols, int from_zero, const char *step_col)
{
    chart c;
    svg_chart_init(&c, title, "epoch", ylabel);
    c.whole_x = 1, c.from_zero = from_zero;
    for (int i = 0; i < rp->nruns; i++) {
        if (step_col)
            steps_series(rp, &c, i, step_col, "every few batches (training)");
        const csv_table *m = &rp->runs[i].metrics;
        const double *x = csv_values(m, "epoch");
        for (int k = 0; k < ncols && x; k++) {
            const double *y = csv_values(m, cols[k]);
            if (k > 0 && y && !any_figure(y, m->nrows))
                continue;   /* a test pass's figures, with no test set: no flat line of zeros */
            char name[160];
            series_name(name, sizeof name, rp, i, labels[k]);
            chart_series *s = y ? svg_chart_add(&c, name, cols[k], i, m->nrows, x, y) : NULL;
            if (s)
                s->points = 1, s->dashed = k > 0;
        }
    }
    svg_chart_draw(rp->f, &c);
}

static void training_section(report *rp)
{
    fputs("<h2>Training</h2>\n<div class='charts'>\n", rp->f);
    epoch_chart(rp, "Loss", "cross-entropy", (const char *[]){"train_loss", "test_loss"},
                (const char *[]){"train loss", "test loss"}, 2, 0, "train_loss");
    epoch_chart(rp, "Accuracy", "share correct", (const char *[]){"train_acc", "test_acc"},
                (const char *[]){"train accuracy", "test accuracy"}, 2, 0, "train_acc");
    epoch_chart(rp, "Images per second (training pass)", "images/s",
                (const char *[]){"images_per_s"}, (const char *[]){"img/s"}, 1, 1, NULL);
    epoch_chart(rp, "Share of worker time in tasks", "share", (const char *[]){"task_share"},
                (const char *[]){"task share"}, 1, 1, NULL);
    fputs("</div>\n", rp->f);
}

/* Bars gathered over the runs (at most BARS: the tables hold the rest), then drawn. */
#define BARS 128
typedef struct bar_list {
    int n;
    char names[BARS][160];
    const char *labels[BARS];
    double values[BARS];
    int runs[BARS];
} bar_list;

static void bar_add(bar_list *b, const report *rp, int run, const char *what, double value)
{
    if (b->n == BARS)
        return;
    series_name(b->names[b->n], sizeof b->names[b->n], rp, run, what);
    b->labels[b->n] = b->names[b->n], b->values[b->n] = value, b->runs[b->n++] = run;
}

static void bars_draw(report *rp, const bar_list *b, const char *title, const char *unit)
{
    if (b->n)
        svg_bars(rp->f, title, unit, b->n, b->labels, b->values, b->runs);
}

static void task_kinds_chart(report *rp)
{
    bar_list b;
    b.n = 0;
    for (int i = 0; i < rp->nruns; i++) {
        const json_value *kinds = json_get(rp->runs[i].summary, "runtime_this_process.kinds");
        for (int k = 0; kinds && kinds->type == JSON_ARRAY && k < kinds->n; k++)
            bar_add(&b, rp, i, json_str(json_get(&kinds->items[k], "name"), "?"),
                    json_num(json_get(&kinds->items[k], "busy_s"), 0));
    }
    bars_draw(rp, &b, "Time per task kind (this process's epochs)", "s");
}

static int same_column(const csv_table *t, int a, int b)
{
    return !memcmp(t->cells + (size_t)a * (size_t)t->nrows, t->cells + (size_t)b * (size_t)t->nrows,
                   sizeof(double) * (size_t)t->nrows);
}

/* Power over time: the total and each sensor of each run, its idle baseline dashed. */
static void power_chart(report *rp)
{
    chart c;
    svg_chart_init(&c, "Power over time", "seconds since the run started", "watts");
    c.from_zero = 1;
    for (int i = 0; i < rp->nruns; i++) {
        const csv_table *p = &rp->runs[i].power;
        const double *unix_s = csv_values(p, "unix_s");
        double *x = unix_s ? scratch(rp, p->nrows) : NULL;
        for (int r = 0; x && r < p->nrows; r++)
            x[r] = unix_s[r] - unix_s[0];
        for (int k = 2; x && k < p->ncols; k++) {
            if (k > 2 && same_column(p, 2, k))
                continue;   /* a sensor that is the whole total says nothing more */
            char name[160];
            series_name(name, sizeof name, rp, i, k == 2 ? "total" : p->names[k]);
            char key[96];
            snprintf(key, sizeof key, "power/%.80s", p->names[k]);
            svg_chart_add(&c, name, key, i, p->nrows, x, p->cells + (size_t)k * (size_t)p->nrows);
        }
        double base = json_num(json_get(rp->runs[i].summary, "energy.idle_baseline_watts"), 0);
        double *bx = x && base > 0 && p->nrows ? scratch(rp, 2) : NULL, *by = bx ? scratch(rp, 2) : NULL;
        if (by) {
            bx[1] = x[p->nrows - 1], by[0] = by[1] = base;
            char name[160];
            series_name(name, sizeof name, rp, i, "idle baseline");
            chart_series *s = svg_chart_add(&c, name, "power/idle_baseline", i, 2, bx, by);
            if (s)
                s->dashed = 1;
        }
    }
    svg_chart_draw(rp->f, &c);
}

/* Joules per epoch of each device (sensor), from summary.json's epochs. */
static void device_joules_chart(report *rp)
{
    chart c;
    svg_chart_init(&c, "Joules per epoch, by device (sensor)", "epoch", "joules");
    c.whole_x = 1;
    for (int i = 0; i < rp->nruns; i++) {
        const json_value *ep = json_get(rp->runs[i].summary, "epochs");
        if (!ep || ep->type != JSON_ARRAY || !ep->n)
            continue;
        const json_value *first = json_get(&ep->items[0], "energy.devices");
        for (int d = 0; first && first->type == JSON_OBJECT && d < first->n; d++) {
            double *x = scratch(rp, ep->n), *y = scratch(rp, ep->n);
            for (int e = 0; y && e < ep->n; e++) {
                x[e] = json_num(json_get(&ep->items[e], "epoch"), NAN);
                const json_value *devs = json_get(&ep->items[e], "energy.devices");
                y[e] = json_num(json_member(devs, first->keys[d]), NAN);
            }
            char name[160], key[96];
            series_name(name, sizeof name, rp, i, first->keys[d]);
            snprintf(key, sizeof key, "device_joules/%.80s", first->keys[d]);
            chart_series *s = y ? svg_chart_add(&c, name, key, i, ep->n, x, y) : NULL;
            if (s)
                s->points = 1;
        }
    }
    svg_chart_draw(rp->f, &c);
}

static void sources_table(report *rp)
{
    fputs("<table class='grid'><tr><th>run</th><th>energy source</th><th>idle baseline</th>"
          "<th>grid intensity</th></tr>\n", rp->f);
    for (int i = 0; i < rp->nruns; i++) {
        const json_value *e = json_get(rp->runs[i].summary, "energy");
        fputs("<tr><td>", rp->f);
        svg_text(rp->f, rp->runs[i].name);
        fputs("</td><td>", rp->f);
        svg_text(rp->f, json_str(json_get(e, "source"), "not recorded"));
        fprintf(rp->f, "</td><td>%.4g W (", json_num(json_get(e, "idle_baseline_watts"), NAN));
        svg_text(rp->f, json_str(json_get(e, "idle_baseline"), "?"));
        fprintf(rp->f, ")</td><td>%.4g gCO2e/kWh</td></tr>\n",
                json_num(json_get(e, "carbon_g_per_kwh"), NAN));
    }
    fputs("</table>\n", rp->f);
}

static void energy_section(report *rp)
{
    fputs("<h2>Energy</h2>\n", rp->f);
    sources_table(rp);
    fputs("<p>Figures marked <em>estimated</em> come from the model named above; "
          "<em>measured</em> ones from the sensors listed below.</p>\n<div class='charts'>\n", rp->f);
    power_chart(rp);
    device_joules_chart(rp);
    epoch_chart(rp, "Energy per epoch (training pass)", "joules", (const char *[]){"energy_j", "test_energy_j"},
                (const char *[]){"training joules", "test joules"}, 2, 0, NULL);
    epoch_chart(rp, "Energy per image", "millijoules", (const char *[]){"mj_per_image"},
                (const char *[]){"mJ per training image"}, 1, 0, NULL);
    epoch_chart(rp, "Carbon per epoch", "gCO2e", (const char *[]){"gco2e"}, (const char *[]){"gCO2e"}, 1, 0, NULL);
    task_kinds_chart(rp);
    fputs("</div>\n", rp->f);
    json_section(rp, "Sensors", "energy.sensors");
}

/* Workers chosen over time by the placement policy, with the reasons in a table. */
static void placement_chart(report *rp)
{
    chart c;
    svg_chart_init(&c, "Active workers chosen over time", "seconds", "workers");
    for (int i = 0; i < rp->nruns; i++) {
        const json_value *d = json_get(rp->runs[i].summary, "execution.placement.decisions");
        if (!d || d->type != JSON_ARRAY || !d->n)
            continue;
        double *x = scratch(rp, d->n), *y = scratch(rp, d->n);
        for (int k = 0; y && k < d->n; k++) {
            x[k] = json_num(json_get(&d->items[k], "t"), NAN);
            y[k] = json_num(json_get(&d->items[k], "workers"), NAN);
        }
        char name[160];
        series_name(name, sizeof name, rp, i, "active workers");
        chart_series *s = y ? svg_chart_add(&c, name, "placement/workers", i, d->n, x, y) : NULL;
        if (s)
            s->points = 1;
    }
    if (c.nseries)
        svg_chart_draw(rp->f, &c);
}

/* Each part's limit over time (operating_point.changes), as a share of its own value so that
 * watts and MHz share an axis; the power beside it is the power chart's. */
static void operating_point_chart(report *rp)
{
    chart c;
    svg_chart_init(&c, "Operating points over time (% of each part's own limit)",
                   "seconds since training began", "% of its own limit");
    c.from_zero = 1;
    for (int i = 0; i < rp->nruns; i++) {
        const json_value *parts = json_get(rp->runs[i].summary, "execution.operating_point.parts");
        const json_value *changes = json_get(rp->runs[i].summary, "execution.operating_point.changes");
        for (int g = 0; parts && changes && parts->type == JSON_ARRAY && g < parts->n; g++) {
            const char *part = json_str(json_get(&parts->items[g], "part"), "");
            double own = json_num(json_get(&parts->items[g], "own_value"), 0);
            double *x = own > 0 ? scratch(rp, changes->n + 1) : NULL, *y = x ? scratch(rp, changes->n + 1) : NULL;
            int n = 1;
            for (int k = 0; y && k < changes->n; k++)
                if (!strcmp(json_str(json_get(&changes->items[k], "part"), ""), part)) {
                    x[n] = json_num(json_get(&changes->items[k], "t"), NAN);
                    y[n++] = 100 * json_num(json_get(&changes->items[k], "value"), NAN) / own;
                }
            if (!y || n == 1)
                continue;
            x[0] = 0, y[0] = 100;
            char name[160];
            series_name(name, sizeof name, rp, i, part);
            char key[96];
            snprintf(key, sizeof key, "operating_point/%.60s", part);
            chart_series *s = svg_chart_add(&c, name, key, i, n, x, y);
            if (s)
                s->points = 1;
        }
    }
    if (c.nseries)
        svg_chart_draw(rp->f, &c);
}

/* One figure of every machine of each cluster run: the coordinator's (here_key, if any), then
 * each node's, scaled (bytes to MB). */
static void node_bars(report *rp, const char *title, const char *unit, const char *here_key,
                      const char *const *keys, double scale)
{
    bar_list b;
    b.n = 0;
    for (int i = 0; i < rp->nruns; i++) {
        const json_value *cl = json_get(rp->runs[i].summary, "cluster");
        const json_value *nodes = json_get(cl, "nodes");
        if (cl && here_key)
            bar_add(&b, rp, i, "coordinator", json_num(json_get(cl, here_key), 0));
        for (int k = 0; nodes && nodes->type == JSON_ARRAY && k < nodes->n; k++) {
            double value = 0;
            for (int j = 0; keys[j]; j++)
                value += scale * json_num(json_get(&nodes->items[k], keys[j]), 0);
            bar_add(&b, rp, i, json_str(json_get(&nodes->items[k], "address"), "?"), value);
        }
    }
    bars_draw(rp, &b, title, unit);
}

static void machine_charts(report *rp)
{
    node_bars(rp, "Share of the chunks computed, by machine", "", "coordinator_share",
              (const char *[]){"share", NULL}, 1);
    node_bars(rp, "Images per second, by node", "img/s", NULL, (const char *[]){"img_per_s", NULL}, 1);
    node_bars(rp, "Joules, by machine (each measures its own)", "J", "joules_here",
              (const char *[]){"joules", NULL}, 1);
    node_bars(rp, "Bytes over the network, by node (both ways)", "MB", NULL,
              (const char *[]){"bytes_sent", "bytes_received", NULL}, 1e-6);
}

static int any_section(report *rp, const char *path)
{
    for (int i = 0; i < rp->nruns; i++)
        if (json_get(rp->runs[i].summary, path))
            return 1;
    return 0;
}

static void placement_section(report *rp)
{
    if (!any_section(rp, "execution.devices") && !any_section(rp, "cluster") &&
        !any_section(rp, "execution.placement"))
        return;
    fputs("<h2>Devices, machines and placement</h2>\n<div class='charts'>\n", rp->f);
    machine_charts(rp);
    placement_chart(rp);
    operating_point_chart(rp);
    fputs("</div>\n", rp->f);
    json_section(rp, "OpenCL devices", "execution.devices");
    json_section(rp, "Machines (per node: share, img/s, bytes, energy)", "cluster");
    json_section(rp, "Placement (workers, and the figures behind each decision)", "execution.placement");
    json_section(rp, "Operating points (each part's limits, the caps measured, every change)",
                 "execution.operating_point");
}

/* What a green series shows of a machine: its intensity, its presence (its number + 1 while it
 * takes part, a gap while not), its power while computing. */
typedef enum green_figure { GREEN_INTENSITY, GREEN_ON, GREEN_WATTS } green_figure;

/* green.csv's rows of one machine as a series, x in trace hours from the run's first row. */
static void green_series(report *rp, chart *c, int run, int machine, green_figure what)
{
    static const char *const keys[] = {"g_per_kwh", "on", "watts"};
    const csv_table *t = &rp->runs[run].green;
    const double *m = csv_values(t, "machine"), *tt = csv_values(t, "trace_unix_s");
    const double *v = csv_values(t, what == GREEN_ON ? "on" : what == GREEN_WATTS ? "watts" : "g_per_kwh");
    double *x = m && tt && v ? scratch(rp, t->nrows) : NULL, *y = x ? scratch(rp, t->nrows) : NULL;
    int n = 0;
    for (int k = 0; y && k < t->nrows; k++)
        if ((int)m[k] == machine)
            x[n] = (tt[k] - tt[0]) / 3600, y[n++] = what != GREEN_ON ? v[k] : v[k] > 0 ? machine + 1 : NAN;
    const json_value *names = json_get(rp->runs[run].summary, "green.machines");
    const char *who = names && names->type == JSON_ARRAY && machine < names->n
                          ? json_str(json_get(&names->items[machine], "name"), "?") : "?";
    char name[160], key[64];
    series_name(name, sizeof name, rp, run, who);
    snprintf(key, sizeof key, "green/%s/%d", keys[what], machine);
    chart_series *sr = n ? svg_chart_add(c, name, key, run, n, x, y) : NULL;
    if (sr && what == GREEN_ON)   /* each decision a point (its tooltip: when) */
        sr->points = 1;
}

static void green_section(report *rp)
{
    if (!any_section(rp, "green"))
        return;
    fputs("<h2>Where and when it trained</h2>\n<div class='charts'>\n", rp->f);
    chart g, on, w;
    svg_chart_init(&g, "Grid intensity of each machine", "trace hours", "g CO2e per kWh");
    svg_chart_init(&on, "Machines taking part (a gap: left out)", "trace hours", "machine");
    svg_chart_init(&w, "Power of each machine while computing (as last measured)", "trace hours", "watts");
    for (int i = 0; i < rp->nruns; i++) {
        const double *m = csv_values(&rp->runs[i].green, "machine");
        int machines = 0;
        for (int k = 0; m && k < rp->runs[i].green.nrows; k++)
            machines = (int)m[k] + 1 > machines ? (int)m[k] + 1 : machines;
        for (int k = 0; k < machines; k++) {
            green_series(rp, &g, i, k, GREEN_INTENSITY);
            green_series(rp, &on, i, k, GREEN_ON);
            green_series(rp, &w, i, k, GREEN_WATTS);
        }
    }
    if (g.nseries)
        svg_chart_draw(rp->f, &g), svg_chart_draw(rp->f, &on), svg_chart_draw(rp->f, &w);
    fputs("</div>\n", rp->f);
    json_section(rp, "Participation and postponement (the figures behind each decision)", "green");
}

static void job_section(report *rp)
{
    fputs("<h2>Job and machine</h2>\n", rp->f);
    for (int i = 0; i < rp->nruns; i++) {
        run_data *r = &rp->runs[i];
        fputs("<h3>", rp->f);
        svg_text(rp->f, r->name);
        fputs(": ", rp->f);
        svg_text(rp->f, json_str(json_get(r->summary, "job"), "job file not recorded"));
        fputs("</h3>\n<pre>", rp->f);
        svg_text(rp->f, r->job ? r->job : "(no job.cfg in the run folder)");
        fputs("</pre>\n", rp->f);
    }
    json_section(rp, "Machine", "machine");
    json_section(rp, "Data", "data");
    json_section(rp, "Configuration", "config");
    json_section(rp, "Execution", "execution");
    json_section(rp, "Run", "run");
}

static const char STYLE[] =
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:1400px}"
    "h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;margin-top:28px}"
    "h3{font-size:14px}.charts{display:flex;flex-wrap:wrap;gap:8px}figure{margin:0}"
    "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:2px 6px;"
    "text-align:left;vertical-align:top}.scroll{overflow-x:auto}pre{background:#f6f6f6;padding:8px;"
    "font-size:12px;overflow-x:auto}";

static void page(report *rp)
{
    FILE *f = rp->f;
    fprintf(f, "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>frugal report"
            "</title><style>%s</style></head><body>\n<h1>frugal report</h1>\n<table class='grid'>"
            "<tr><th>run</th><th>job</th><th>epochs</th><th>last test accuracy</th><th>interrupted"
            "</th></tr>\n", STYLE);
    for (int i = 0; i < rp->nruns; i++) {
        run_data *r = &rp->runs[i];
        const double *acc = csv_values(&r->metrics, "test_acc");
        fputs("<tr><td>", f);
        svg_text(f, r->name);
        fputs("</td><td>", f);
        svg_text(f, json_str(json_get(r->summary, "job"), "?"));
        double last = acc && r->metrics.nrows ? acc[r->metrics.nrows - 1] : NAN;
        fprintf(f, "</td><td>%d</td><td>", r->metrics.nrows);
        if (isfinite(last))
            fprintf(f, "%.2f%%", 100 * last);
        else
            fputs("no test set", f);
        fputs("</td><td>", f);
        svg_text(f, json_str(json_get(r->summary, "run.interrupted"), "no"));
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
    training_section(rp);
    energy_section(rp);
    placement_section(rp);
    green_section(rp);
    job_section(rp);
    fputs("</body></html>\n", f);
}

static void fill_page(FILE *f, const void *arg)
{
    report *rp = (report *)arg;   /* the page's scratch arrays belong to it */
    rp->f = f;
    page(rp);
}

int html_report_write(const char *path, const char *const *dirs, int ndirs, char *err, size_t errlen)
{
    if (ndirs < 1 || ndirs > REPORT_MAX_RUNS) {
        snprintf(err, errlen, "a report covers 1 to %d runs, not %d", REPORT_MAX_RUNS, ndirs);
        return -1;
    }
    run_data runs[REPORT_MAX_RUNS];
    memset(runs, 0, sizeof runs);
    report rp = {.runs = runs, .nruns = ndirs};
    int rc = 0;
    for (int i = 0; i < ndirs && !rc; i++)
        rc = run_load(&runs[i], dirs[i], err, errlen);
    if (!rc)
        rc = run_folder_write_atomic_with(path, fill_page, &rp, err, errlen);
    for (int i = 0; i < rp.nscratch; i++)
        free(rp.scratch[i]);
    for (int i = 0; i < ndirs; i++)
        run_free(&runs[i]);
    return rc;
}
