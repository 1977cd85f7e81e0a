#include "engine/sim/profile.h"

#include "common/input_file.h"
#include "common/json_parse.h"
#include "common/text.h"
#include "energy/power_model.h"
#include "netio/secure_speed.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define PROFILE_MAX_BYTES (64 * 1024)
#define PROFILE_MAX_WATTS 100000.0

static int failf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int failf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* Keeps the speeds in increasing worker order; a worker count measured twice keeps the last. */
static int add_speed(sim_profile *p, int workers, double img_per_s)
{
    int at = 0;
    while (at < p->nspeeds && p->workers[at] < workers)
        at++;
    if (at < p->nspeeds && p->workers[at] == workers) {
        p->img_per_s[at] = img_per_s;
        return 0;
    }
    if (p->nspeeds == PROFILE_MAX_SPEEDS)
        return -1;
    memmove(&p->workers[at + 1], &p->workers[at], sizeof(int) * (size_t)(p->nspeeds - at));
    memmove(&p->img_per_s[at + 1], &p->img_per_s[at], sizeof(double) * (size_t)(p->nspeeds - at));
    p->workers[at] = workers, p->img_per_s[at] = img_per_s;
    p->nspeeds++;
    return 0;
}

static int profile_line(sim_profile *p, char *line, const char *path, int no, char *err, size_t errlen)
{
    char *eq = strchr(line, '=');
    if (!eq)
        return failf(err, errlen, "%s:%d: not KEY = VALUE", path, no);
    *eq = 0;
    char *key = text_trim(line), *value = text_trim(eq + 1), *end;
    if (!strcmp(key, "name")) {
        snprintf(p->name, sizeof p->name, "%s", value);
    } else if (!strcmp(key, "energy")) {
        snprintf(p->energy, sizeof p->energy, "%s", value);
    } else if (!strcmp(key, "cpus")) {
        long v = strtol(value, &end, 10);
        if (*end || v < 1 || v > 4096)
            return failf(err, errlen, "%s:%d: cpus: '%s' is not a count of 1 to 4096", path, no, value);
        p->cpus = (int)v;
    } else if (!strcmp(key, "flops_per_sample")) {
        p->flops_per_sample = strtod(value, &end);
        if (*end || !(p->flops_per_sample > 0) || !isfinite(p->flops_per_sample))
            return failf(err, errlen, "%s:%d: flops_per_sample: '%s' is not a positive number", path, no, value);
    } else if (!strcmp(key, "speed")) {
        long w = strtol(value, &end, 10);
        double v = strtod(end, &end);
        if (*text_trim(end) || w < 1 || w > 4096 || !(v > 0) || !isfinite(v))
            return failf(err, errlen, "%s:%d: speed: '%s' is not WORKERS IMAGES_PER_S", path, no, value);
        if (add_speed(p, (int)w, v))
            return failf(err, errlen, "%s:%d: more than %d speed lines", path, no, PROFILE_MAX_SPEEDS);
    } else if (!strcmp(key, "power")) {
        if (power_model_profile_parse(value, PROFILE_MAX_WATTS, p->power))
            return failf(err, errlen, "%s:%d: power: '%s' is not IDLE, ONE, ALL watts, each at least "
                         "the one before", path, no, value);
    } else if (!strcmp(key, "seal_mb_per_s") || !strcmp(key, "slowdown")) {
        double v = strtod(value, &end);
        if (*end || !(v > 0) || v > 1e9 || (!strcmp(key, "slowdown") && v < 1))
            return failf(err, errlen, "%s:%d: %s: '%s' is not a positive number%s", path, no, key, value,
                         !strcmp(key, "slowdown") ? " of at least 1" : "");
        if (!strcmp(key, "slowdown"))
            p->slowdown = v;
        else
            p->seal_bytes_per_s = v * 1e6;
    } else {
        return failf(err, errlen, "%s:%d: unknown key '%s' (keys: name, cpus, flops_per_sample, "
                     "speed, power, energy, seal_mb_per_s, slowdown)", path, no, key);
    }
    return 0;
}

int profile_load(sim_profile *p, const char *path, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->power[0] = -1, p->slowdown = 1;
    size_t len;
    char *text = input_read_all(path, PROFILE_MAX_BYTES, "machine profile", &len, err, errlen);
    if (!text)
        return -1;
    int no = 0, rc = 0;
    for (char *line = text, *next; line && !rc; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        no++;
        line[strcspn(line, "#")] = 0;
        if (*text_trim(line))
            rc = profile_line(p, line, path, no, err, errlen);
    }
    free(text);
    if (!rc && (!p->nspeeds || p->power[0] < 0 || !p->cpus || !p->flops_per_sample))
        rc = failf(err, errlen, "%s: a profile needs cpus, flops_per_sample, power and a speed line "
                   "(frugal simulate --calibrate writes one)", path);
    if (!rc && !p->name[0])
        snprintf(p->name, sizeof p->name, "%s", path);
    return rc;
}

/* ---- calibration from run folders ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of field over the epochs (the first left out when there are more: warm-up). */
static double epochs_median(const json_value *epochs, const char *field)
{
    double v[256];
    int n = 0, first = epochs->n > 1;
    for (int i = first; i < epochs->n && n < 256; i++) {
        double x = json_num(json_get(&epochs->items[i], field), NAN);
        if (isfinite(x) && x > 0)
            v[n++] = x;
    }
    if (!n)
        return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One run's speed (*img, on *workers) and power (*busy_w; its idle watts in *idle, NAN when not
 * known); p gets its machine's figures. */
static int calibrate_one(sim_profile *p, const char *dir, double *busy_w, int *workers, double *img,
                         double *idle, char *err, size_t errlen)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    size_t len;
    char *text = input_read_all(path, 64u << 20, "run summary", &len, err, errlen);
    if (!text)
        return -1;
    json_value *s = json_parse(text, len, err, errlen);
    free(text);
    if (!s)
        return failf(err, errlen, "%s: not JSON", path);
    const json_value *epochs = json_get(s, "epochs");
    int rc = 0;
    *workers = (int)json_num(json_get(s, "config.workers"), 0);
    *img = epochs && epochs->type == JSON_ARRAY ? epochs_median(epochs, "images_per_s") : NAN;
    *busy_w = epochs && epochs->type == JSON_ARRAY ? epochs_median(epochs, "energy.watts") : NAN;
    double flops = json_num(json_get(s, "execution.model_flops_per_sample"), 0);
    if (json_get(s, "cluster") || json_get(s, "gossip"))
        rc = failf(err, errlen, "%s: a run of several machines: calibrate from runs on one machine", path);
    else if (*workers < 1 || !isfinite(*img) || !(flops > 0))
        rc = failf(err, errlen, "%s: no config.workers, epochs' images_per_s or "
                   "execution.model_flops_per_sample: not a finished training run", path);
    else if (p->flops_per_sample > 0 && fabs(flops / p->flops_per_sample - 1) > 1e-9)
        rc = failf(err, errlen, "%s: another model (%g FLOPs a sample, not %g): calibrate from "
                   "runs of one job", path, flops, p->flops_per_sample);
    if (!rc) {
        p->flops_per_sample = flops;
        p->cpus = p->cpus ? p->cpus : (int)json_num(json_get(s, "machine.cpus"), 1);
        p->slowdown = json_num(json_get(s, "execution.emulated_slowdown"), 1);
        snprintf(p->energy, sizeof p->energy, "%s", json_str(json_get(s, "energy.source"), "not measured"));
        double base = json_num(json_get(s, "energy.idle_baseline_watts"), 0);
        double idle_w, core_w;
        if (sscanf(p->energy, "estimated: model (%lf W idle + %lf W per busy core", &idle_w, &core_w) == 2)
            *idle = idle_w;      /* the fallback model's own figure */
        else
            *idle = base > 0 ? base : NAN;
    }
    json_free(s);
    return rc;
}

int profile_calibrate(sim_profile *p, const char *const *dirs, int ndirs, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    double idle = NAN, slope = 0;   /* watts a busy worker adds, the largest run's */
    double img[PROFILE_MAX_SPEEDS] = {0};
    int workers[PROFILE_MAX_SPEEDS], runs[PROFILE_MAX_SPEEDS] = {0}, n = 0, top = 0;
    for (int i = 0; i < ndirs; i++) {
        double busy_w = NAN, run_idle = NAN, run_img = 0;
        int w = 0, k = 0;
        if (calibrate_one(p, dirs[i], &busy_w, &w, &run_img, &run_idle, err, errlen))
            return -1;
        while (k < n && workers[k] != w)
            k++;
        if (k == PROFILE_MAX_SPEEDS)
            return failf(err, errlen, "%s: more than %d worker counts", dirs[i], PROFILE_MAX_SPEEDS);
        n += k == n, workers[k] = w, img[k] += run_img, runs[k]++;   /* runs alike: their mean */
        idle = isfinite(run_idle) ? run_idle : idle;
        if (w >= top && isfinite(busy_w))
            top = w, slope = busy_w;
    }
    for (int k = 0; k < n; k++)
        add_speed(p, workers[k], img[k] / runs[k]);
    if (!top)
        return failf(err, errlen, "%s: no epoch's energy.watts: the runs measured no power", dirs[0]);
    /* no idle figure (no sensor's baseline): half the busy power, said in `energy` */
    if (!isfinite(idle)) {
        idle = slope / 2;
        size_t l = strlen(p->energy);
        snprintf(p->energy + l, sizeof p->energy - l, "; idle taken as half the busy power (no baseline measured)");
    }
    double per_worker = slope > idle ? (slope - idle) / top : 0;
    p->power[0] = idle, p->power[1] = idle + per_worker, p->power[2] = idle + per_worker * p->cpus;
    const char *slash = strrchr(dirs[0], '/');
    snprintf(p->name, sizeof p->name, "%s", slash && slash[1] ? slash + 1 : dirs[0]);
    double aes = secure_speed(1, 0.2);   /* what a node's traffic is sealed with, where it can be */
    p->seal_bytes_per_s = 2 * (aes > 0 ? aes : secure_speed(0, 0.2));   /* seal and open: half each */
    if (p->seal_bytes_per_s < 0)
        p->seal_bytes_per_s = 0;
    return 0;
}

void profile_write(FILE *f, const sim_profile *p, const char *from)
{
    fprintf(f, "# frugal machine profile (frugal simulate --calibrate) from %s\n", from);
    fprintf(f, "name = %s\ncpus = %d\nflops_per_sample = %.17g\n", p->name, p->cpus, p->flops_per_sample);
    for (int i = 0; i < p->nspeeds; i++)
        fprintf(f, "speed = %d %.6g\n", p->workers[i], p->img_per_s[i]);
    fprintf(f, "power = %.6g, %.6g, %.6g\nenergy = %s\n", p->power[0], p->power[1], p->power[2], p->energy);
    if (p->seal_bytes_per_s > 0)
        fprintf(f, "seal_mb_per_s = %.6g\n", p->seal_bytes_per_s / 1e6);
    if (p->slowdown > 1)
        fprintf(f, "slowdown = %g\n", p->slowdown);
}

int profile_workers(const sim_profile *p) { return p->workers[p->nspeeds - 1]; }

double profile_img_per_s(const sim_profile *p, int workers, double flops_per_sample)
{
    int n = p->nspeeds, w = workers < p->cpus || p->cpus < 1 ? workers : p->cpus;
    double img;
    if (w <= p->workers[0])
        img = p->img_per_s[0] * w / p->workers[0];
    else if (w >= p->workers[n - 1])
        img = p->img_per_s[n - 1] * w / p->workers[n - 1];
    else {
        int i = 1;
        while (p->workers[i] < w)
            i++;
        double f = (double)(w - p->workers[i - 1]) / (p->workers[i] - p->workers[i - 1]);
        img = p->img_per_s[i - 1] + f * (p->img_per_s[i] - p->img_per_s[i - 1]);
    }
    return p->flops_per_sample > 0 && flops_per_sample > 0 ? img * p->flops_per_sample / flops_per_sample : img;
}
