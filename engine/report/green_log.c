#include "engine/report/green_log.h"

#include "common/clock.h"
#include "common/json.h"
#include "engine/job/run_folder.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void green_log_init(green_log *g, const char *policy)
{
    memset(g, 0, sizeof *g);
    pthread_mutex_init(&g->lock, NULL);
    g->policy = policy;
    g->start_clock = clock_now_s();
    g->stride = 1;
    g->grams = g->grams_at_once = -1;
}

void green_log_free(green_log *g)
{
    free(g->points);
    g->points = NULL;
    pthread_mutex_destroy(&g->lock);
}

int green_log_machine(green_log *g, const char *name)
{
    pthread_mutex_lock(&g->lock);
    int i = 0;
    while (i < g->nmachines && strcmp(g->machines[i].name, name))
        i++;
    if (i == g->nmachines && i < GREEN_MAX_MACHINES) {
        snprintf(g->machines[i].name, sizeof g->machines[i].name, "%s", name);
        g->machines[i].on = -1;
        g->nmachines++;
    }
    pthread_mutex_unlock(&g->lock);
    return i < GREEN_MAX_MACHINES ? i : -1;
}

/* Locked: full, every other point dropped and later rounds thinned as much. */
static void thin(green_log *g)
{
    int k = 0;
    for (int i = 0; i < g->npoints; i += 2)
        g->points[k++] = g->points[i];
    g->npoints = k, g->stride *= 2;
}

int green_log_round(green_log *g, unsigned long long round, double trace_t, int machine,
                    double g_per_kwh, double renewable_w, double watts, int on)
{
    if (machine < 0 || machine >= GREEN_MAX_MACHINES)
        return -1;
    pthread_mutex_lock(&g->lock);
    g->used = 1;
    green_machine *m = &g->machines[machine];
    int was = m->on, changed = was != on;
    m->on = on;
    if (on)
        m->rounds_on++;
    else
        m->rounds_off++;
    if (!g->points)
        g->points = malloc(sizeof *g->points * GREEN_MAX_POINTS);
    if (g->points && (changed || round % (unsigned)g->stride == 0)) {
        if (g->npoints == GREEN_MAX_POINTS)
            thin(g);
        g->points[g->npoints++] = (green_point){clock_now_s() - g->start_clock, trace_t,
                                                (float)g_per_kwh, (float)renewable_w, (float)watts,
                                                (short)machine, (char)on};
    }
    pthread_mutex_unlock(&g->lock);
    return was;
}

void green_log_event(green_log *g, FILE *out, double trace_t, const char *fmt, ...)
{
    char line[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    char when[40] = "";
    time_t t = (time_t)trace_t;
    struct tm tm;
    if (trace_t > 1e8 && gmtime_r(&t, &tm))
        strftime(when, sizeof when, "[%Y-%m-%d %H:%M] ", &tm);
    char full[340];
    snprintf(full, sizeof full, "%s%s", when, line);
    if (out) {
        fprintf(out, "green: %s\n", full);
        fflush(out);
    }
    pthread_mutex_lock(&g->lock);
    g->used = 1;
    if (g->nevents < GREEN_MAX_EVENTS)
        snprintf(g->events[g->nevents++], sizeof g->events[0], "%s", full);
    g->events_total++;
    pthread_mutex_unlock(&g->lock);
}

void green_log_postponed(green_log *g, double trace_s, double wall_s)
{
    pthread_mutex_lock(&g->lock);
    g->used = 1;
    g->postponements++;
    g->postponed_trace_s += trace_s, g->postponed_s += wall_s;
    pthread_mutex_unlock(&g->lock);
}

static void fill_csv(FILE *f, const void *arg)
{
    const green_log *g = arg;
    fputs("run_s,trace_unix_s,machine,g_per_kwh,renewable_w,watts,on\n", f);
    for (int i = 0; i < g->npoints; i++) {
        const green_point *p = &g->points[i];
        fprintf(f, "%.3f,%.0f,%d,%.2f,%.1f,%.2f,%d\n", p->run_s, p->trace_t, p->machine,
                p->g_per_kwh, p->renewable_w, p->watts, p->on);
    }
}

int green_log_write_csv(green_log *g, const char *path, char *err, size_t errlen)
{
    pthread_mutex_lock(&g->lock);
    int rc = run_folder_write_atomic_with(path, fill_csv, g, err, errlen);
    pthread_mutex_unlock(&g->lock);
    return rc;
}

void green_log_json(FILE *f, green_log *g)
{
    pthread_mutex_lock(&g->lock);
    fputs("\"participation\": ", f);
    json_string(f, g->policy);
    const job_config *c = g->cfg;
    if (c) {
        fprintf(f, ", \"green_g_per_kwh\": %g, \"budget_g\": %g, \"deadline\": ",
                c->green_g_per_kwh, c->budget_g);
        json_string(f, c->deadline_text);
        json_fixed_field(f, "deadline_trace_s", g->deadline, 0);
        fprintf(f, ", \"postpone\": \"%s\", \"carbon_trace\": ", c->postpone ? "on" : "off");
        json_string(f, c->carbon_trace);
        fputs(", \"renewable_trace\": ", f);
        json_string(f, c->renewable_trace);
        json_fixed_field(f, "trace_start_s", g->trace_start, 0);
        json_number_field(f, "trace_speed", g->trace_speed, 0);
    }
    fprintf(f, ", \"postponements\": %d", g->postponements);
    json_fixed_field(f, "postponed_trace_s", g->postponed_trace_s, 0);
    json_fixed_field(f, "postponed_s", g->postponed_s, 3);
    if (g->grams >= 0)
        json_fixed_field(f, "gco2e_epochs", g->grams, 6);
    if (g->grams_at_once >= 0) {
        json_fixed_field(f, "gco2e_at_once", g->grams_at_once, 6);
        json_fixed_field(f, "gco2e_saved", g->grams_at_once - g->grams, 6);
    }
    if (g->stopped[0]) {
        fputs(", \"stopped\": ", f);
        json_string(f, g->stopped);
    }
    fputs(", \"machines\": [", f);
    for (int i = 0; i < g->nmachines; i++) {
        const green_machine *m = &g->machines[i];
        fprintf(f, "%s{\"index\": %d, \"name\": ", i ? ", " : "", i);
        json_string(f, m->name);
        fprintf(f, ", \"rounds_on\": %ld, \"rounds_off\": %ld}", m->rounds_on, m->rounds_off);
    }
    fprintf(f, "], \"decisions_total\": %ld, \"decisions\": [", g->events_total);
    for (int i = 0; i < g->nevents; i++) {
        fputs(i ? ", " : "", f);
        json_string(f, g->events[i]);
    }
    fputs("], \"timeline\": \"green.csv\"", f);
    pthread_mutex_unlock(&g->lock);
}
