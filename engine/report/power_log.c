#include "engine/report/power_log.h"

#include "common/input_file.h"
#include "engine/job/run_folder.h"
#include "common/clock.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The header names the sensors, so a resume can tell whether the rows still line up. */
static int usable(const sensor *s) { return s->status != SENSOR_UNREADABLE; }

static void write_header(FILE *f, const sensor *s, int n)
{
    fputs("unix_s,seconds,total_w", f);
    for (int i = 0; i < n; i++) {
        if (!usable(&s[i]))
            continue;
        fputc(',', f);
        for (const char *c = s[i].name; *c; c++)
            fputc(*c == ',' || *c == '\n' || *c == '"' ? ' ' : *c, f);
        fputs(" w", f);
    }
    fputc('\n', f);
}

static char *header_text(energy_meter *m)
{
    sensor s[SENSOR_MAX];
    int n = energy_meter_sensors(m, s, SENSOR_MAX);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    write_header(f, s, n);
    if (fclose(f)) {
        free(text);
        return NULL;
    }
    return text;
}

void power_log_begin(power_log *pl, const char *path, int resumed, energy_meter *m, FILE *out)
{
    memset(pl, 0, sizeof *pl);
    size_t len = 0;
    char why[256];
    char *text = resumed && access(path, F_OK) == 0
                     ? input_read_all(path, 64 << 20, "power timeline", &len, why, sizeof why) : NULL;
    if (!text)
        return;   /* none, or unreadable: it starts afresh */
    char *header = header_text(m);
    size_t hlen = header ? strlen(header) : 0;
    if (header && len >= hlen && !memcmp(text, header, hlen)) {
        size_t keep = len;
        while (keep > hlen && text[keep - 1] != '\n')
            keep--;   /* a row cut short by a kill */
        pl->earlier_len = keep - hlen;
        memmove(text, text + hlen, pl->earlier_len);
        pl->earlier = text;
    } else {
        if (len > 0)
            fprintf(out, "%s: written by a run with other sensors: its power timeline starts "
                    "afresh\n", path);
        free(text);
    }
    free(header);
}

static void write_rows(FILE *f, energy_meter *m, const history_point *p, int n)
{
    sensor s[SENSOR_MAX];
    int ns = energy_meter_sensors(m, s, SENSOR_MAX);
    double t0 = energy_meter_opened_unix(m);
    for (int k = 1; k < n; k++) {
        double dt = p[k].t - p[k - 1].t;
        if (dt <= 0)
            continue;
        fprintf(f, "%.3f,%.3f,%.3f", t0 + p[k].t, p[k].t, (p[k].total_j - p[k - 1].total_j) / dt);
        for (int i = 0; i < ns; i++)
            if (usable(&s[i]))
                fprintf(f, ",%.3f", (p[k].joules[i] - p[k - 1].joules[i]) / dt);
        fputc('\n', f);
    }
}

/* The timeline ends now, not at its last kept point. */
static int with_now(energy_meter *m, history_point *p, int n)
{
    energy_reading now;
    energy_meter_read(m, &now);
    if (n && now.t <= p[n - 1].t)
        return n;
    p[n] = (history_point){.t = now.t, .total_j = now.total_j};
    memcpy(p[n].joules, now.joules, sizeof now.joules);
    return n + 1;
}

typedef struct power_rows {
    const power_log *pl;
    energy_meter *m;
    const char *header;
    history_point *points;
} power_rows;

static void fill_rows(FILE *f, const void *arg)
{
    const power_rows *r = arg;
    fputs(r->header, f);
    if (r->pl->earlier)
        fwrite(r->pl->earlier, 1, r->pl->earlier_len, f);
    write_rows(f, r->m, r->points, with_now(r->m, r->points, energy_meter_history(r->m, r->points, HISTORY_POINTS)));
}

int power_log_write(const power_log *pl, const char *path, energy_meter *m, char *err, size_t errlen)
{
    power_rows r = {pl, m, header_text(m), malloc((HISTORY_POINTS + 1) * sizeof(history_point))};
    int rc = r.header && r.points ? run_folder_write_atomic_with(path, fill_rows, &r, err, errlen)
                                  : (snprintf(err, errlen, "%s: out of memory", path), -1);
    free((char *)r.header);
    free(r.points);
    return rc;
}

void power_log_trace(energy_meter *m, rt_runtime *rt)
{
    history_point *p = malloc((HISTORY_POINTS + 1) * sizeof *p);
    if (!p)
        return;
    int n = with_now(m, p, energy_meter_history(m, p, HISTORY_POINTS));
    double now = clock_now_s(), offset = now - p[n - 1].t;   /* the meter's clock to the runtime's */
    sensor s[SENSOR_MAX];
    int ns = energy_meter_sensors(m, s, SENSOR_MAX);
    for (int k = 1; k < n; k++) {
        double dt = p[k].t - p[k - 1].t, t = offset + p[k - 1].t;
        if (dt <= 0)
            continue;
        rt_trace_counter(rt, "power: total (W)", t, (p[k].total_j - p[k - 1].total_j) / dt);
        for (int i = 0; i < ns; i++) {
            char name[96];
            snprintf(name, sizeof name, "power: %.60s (W)", s[i].name);
            if (usable(&s[i]))
                rt_trace_counter(rt, name, t, (p[k].joules[i] - p[k - 1].joules[i]) / dt);
        }
    }
    free(p);
}

void power_log_free(power_log *pl)
{
    free(pl->earlier);
    pl->earlier = NULL;
}
