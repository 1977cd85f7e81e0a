#include "engine/placement/worker_control.h"

#include "common/json.h"
#include "engine/job/cache_dir.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SKIP_WINDOWS 1   /* after the start (caches and pages warming up) and after a change */

static void decide(worker_control *c, int workers, const char *why)
{
    rt_set_active_workers(c->rt, workers);
    double t = c->win_t - c->start_t;
    fprintf(c->log, "placement: %s\n", why);
    if (c->ndecisions < CONTROL_MAX_DECISIONS) {
        worker_decision *d = &c->decisions[c->ndecisions++];
        *d = (worker_decision){.t = t, .workers = workers};
        snprintf(d->why, sizeof d->why, "%s", why);
        for (int k = 1; k <= c->tuner.max_workers && d->nseen < CONTROL_MAX_SEEN; k++)
            if (c->tuner.opt[k - 1].samples) {
                d->seen_workers[d->nseen] = k;
                d->seen[d->nseen++] = c->tuner.opt[k - 1];
            }
    }
    c->decisions_total++;
}

static void load_models(worker_control *c)
{
    char dir[300], host[128], why[300];
    if (cache_dir(dir, sizeof dir, why, sizeof why)) {
        snprintf(c->note, sizeof c->note, "learned figures not kept: %.300s", why);
        return;
    }
    cache_host_name(host, sizeof host);
    snprintf(c->models, sizeof c->models, "%.300s/workers-%.127s.txt", dir, host);
    FILE *f = fopen(c->models, "r");
    int used = f ? worker_tuner_load(&c->tuner, c->key, f) : 0;
    if (f)
        fclose(f);
    if (used)
        snprintf(c->note, sizeof c->note, "started from %d worker counts learned before, in "
                 "%.300s", used, c->models);
    else
        snprintf(c->note, sizeof c->note, "nothing learned before for this workload: exploring; "
                 "kept in %.300s", c->models);
}

static void *control_thread(void *arg);

/* This machine's budget: the whole job's or its own, the lower where both are set. */
static double machine_budget(const job_config *cfg)
{
    double job = cfg->power_budget_watts, own = cfg->node_power_budget_watts;
    return job > 0 && (own <= 0 || job < own) ? job : own;
}

/* The worker count's policy, and the one the operating points are searched under (energy when
 * the job names none: the fastest cap is the part's own). */
static void limits_of(const job_config *cfg, double budget_w, policy_limits *workers,
                      policy_limits *op)
{
    *workers = (policy_limits){cfg->policy < 0 ? POLICY_TIME : (placement_policy)cfg->policy,
                               budget_w, cfg->max_slowdown, cfg->carbon_g_per_kwh};
    *op = *workers;
    if (cfg->policy < 0)
        op->policy = POLICY_ENERGY;
}

/* Says why the worker count is not learned; 0 when it is. */
static int workers_untouched(worker_control *c, const job_config *cfg, double budget_w, FILE *log)
{
    if (cfg->policy < 0 && budget_w <= 0) {
        snprintf(c->note, sizeof c->note, "off: every worker runs (set [placement] policy or a "
                 "power budget to have the worker count learned)");
        return 1;
    }
    if (cfg->workers > 0) {
        snprintf(c->note, sizeof c->note, "workers pinned by hand ([execution] workers = %d): "
                 "the policy leaves them", cfg->workers);
        fprintf(log, "placement: %s\n", c->note);
        return 1;
    }
    return 0;
}

static void begin_tuning(worker_control *c, const policy_limits *l, const char *key, FILE *log)
{
    worker_tuner_init(&c->tuner, l, rt_workers(c->rt));
    snprintf(c->key, sizeof c->key, "%s", key);
    load_models(c);
    char limits[96] = "";
    if (l->budget_w > 0)
        snprintf(limits, sizeof limits, ", power budget %g W", l->budget_w);
    if (l->max_slowdown >= 0 && l->policy != POLICY_TIME)
        snprintf(limits + strlen(limits), sizeof limits - strlen(limits),
                 ", at most %g%% slower than the fastest", 100 * l->max_slowdown);
    fprintf(log, "placement: policy %s%s; %s\n", policy_name(l->policy), limits, c->note);
    c->tune_workers = 1;
}

void worker_control_begin(worker_control *c, const job_config *cfg, rt_runtime *rt,
                          const trainer *t, energy_meter *meter, const char *key, FILE *log)
{
    memset(c, 0, sizeof *c);
    c->rt = rt, c->trainer = t, c->meter = meter, c->log = log;
    double budget_w = machine_budget(cfg);
    policy_limits l, op_l;
    limits_of(cfg, budget_w, &l, &op_l);
    operating_point_begin(&c->op, cfg, &op_l, log);
    if (!workers_untouched(c, cfg, budget_w, log))
        begin_tuning(c, &l, key, log);
    else if (!operating_point_wants_windows(&c->op))
        return;
    c->window_s = cfg->window_seconds;
    c->budget_w = c->tune_workers ? budget_w : 0;
    c->skip = SKIP_WINDOWS;
    c->start_t = -1;
    if (c->tune_workers && c->tuner.current != rt_workers(rt)) {
        char why[200];
        snprintf(why, sizeof why, "%d workers, from what was learned before", c->tuner.current);
        decide(c, c->tuner.current, why);
    }
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->wake, NULL);
    c->on = 1;
    if (pthread_create(&c->thread, NULL, control_thread, c)) {
        fprintf(log, "placement: cannot start its thread: every worker runs, every limit as it "
                "was\n");
        rt_set_active_workers(rt, rt_workers(rt));
        operating_point_end(&c->op);
        c->on = 0;
        return;
    }
    c->running = 1;
}

#define FNV_START 1469598103934665603ULL
#define FNV_STEP(hash, v) (((hash) ^ (v)) * 1099511628211ULL)
#define DEVICES_MARK "+devices-"

void worker_control_key(char *out, size_t n, const job_config *cfg, int c, int h, int w,
                        const char *isa, const char *devices)
{
    uint64_t hash = FNV_START;   /* over the layers' shapes (not their lines) */
    for (int l = 0; l < cfg->nlayers; l++) {
        const layer_config *lc = &cfg->layers[l];
        int shape[] = {lc->type, lc->filters, lc->size, lc->stride, lc->padding, lc->outputs};
        for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++)
            hash = FNV_STEP(hash, (uint32_t)shape[i]);
    }
    int len = snprintf(out, n, "%dx%dx%d-%016llx-b%d-%s-s%g", h, w, c, (unsigned long long)hash,
                       cfg->batch, isa, (double)cfg->slowdown);
    if (!devices || !devices[0] || len < 0 || (size_t)len >= n)
        return;
    uint64_t names = FNV_START;   /* the names have spaces: the key is one word of a line */
    for (const char *d = devices; *d; d++)
        names = FNV_STEP(names, (uint8_t)*d);
    snprintf(out + len, n - (size_t)len, DEVICES_MARK "%016llx", (unsigned long long)names);
}

/* Under the lock: a stretch of the window from reading r on (NULL: the meter now). */
static void stretch_start(worker_control *c, const energy_reading *r, long samples)
{
    energy_reading now;
    if (!r) {
        energy_meter_read(c->meter, &now);
        r = &now;
    }
    c->win_t = r->t, c->win_j = r->total_j, c->win_samples = samples;
    if (c->start_t < 0)
        c->start_t = r->t;
}

/* Under the lock: the stretch since stretch_start ends at r and is added to the window. */
static void stretch_end(worker_control *c, const energy_reading *r, long done)
{
    c->part_s += r->t - c->win_t;
    c->part_j += r->total_j - c->win_j;
    c->part_samples += done - c->win_samples;
}

void worker_control_pass(worker_control *c, int training)
{
    if (!c->on)
        return;
    pthread_mutex_lock(&c->lock);
    if (training) {
        stretch_start(c, NULL, 0);
    } else if (c->training) {   /* the window goes on with the next training pass */
        energy_reading r;
        energy_meter_read(c->meter, &r);
        stretch_end(c, &r, trainer_samples_done(c->trainer));
    }
    c->training = training;
    pthread_mutex_unlock(&c->lock);
}

/* The measured count that draws the least power. */
static int least_power_count(const worker_tuner *t)
{
    int best = t->current;
    for (int k = 1; k <= t->max_workers; k++)
        if (t->opt[k - 1].samples && t->opt[k - 1].watts < t->opt[best - 1].watts)
            best = k;
    return best;
}

/* Under the lock. A budget's last resort: when the count that draws the least power is still
 * over it, the devices are parked too (for the rest of the run: their power is not told apart
 * to know when they would fit again). The counts were measured with the devices working
 * beside them (a device's host threads can make one worker draw what two do), so they are
 * measured again. */
static void park_devices_if_over(worker_control *c, double watts)
{
    if (c->budget_w <= 0 || watts <= c->budget_w || c->devices_parked || !rt_devices(c->rt) ||
        c->tuner.exploring || c->tuner.current != least_power_count(&c->tuner))
        return;
    rt_park_devices(c->rt, 1);
    c->devices_parked = 1;
    worker_tuner_forget(&c->tuner);
    char *devices = strstr(c->key, DEVICES_MARK);   /* what is measured now is saved as the */
    if (devices)                                     /* workers' alone */
        *devices = 0;
    c->skip = SKIP_WINDOWS;   /* the device's tasks already placed still finish */
    char why[200];
    snprintf(why, sizeof why, "%d workers draw %.1f W, over the %g W budget even so: the devices "
             "are parked for the rest of the run; measuring the counts again", c->tuner.current,
             watts, c->budget_w);
    decide(c, c->tuner.current, why);
}

/* Under the lock: a window measured at the current limits goes to the operating points while
 * they search (once the worker count has settled), else to the worker tuner. */
static void observe(worker_control *c, double t, double seconds, double joules, long samples)
{
    if (operating_point_wants_windows(&c->op) && !(c->tune_workers && c->tuner.exploring)) {
        int got = operating_point_observe(&c->op, t, seconds, joules, samples);
        if (got == 2 && c->tune_workers)   /* the work changed: the counts are measured again */
            worker_tuner_forget(&c->tuner);
        if (got)
            c->skip = SKIP_WINDOWS;
        return;
    }
    if (!c->tune_workers)
        return;
    char why[200] = "";
    int before = c->tuner.current;
    int workers = worker_tuner_observe(&c->tuner, seconds, joules, samples, why, sizeof why);
    if (workers != before || why[0])
        decide(c, workers, why);
    if (workers != before)
        c->skip = SKIP_WINDOWS;   /* the next window still has the old count's tasks finishing */
    else
        park_devices_if_over(c, joules / seconds);
}

/* Under the lock: a window has ended when its stretches are long enough together. */
static void measure(worker_control *c)
{
    long done = trainer_samples_done(c->trainer);
    if (done < c->win_samples) {   /* a new pass began unannounced (a node's): a new stretch */
        stretch_start(c, NULL, done);
        return;
    }
    energy_reading r;
    energy_meter_read(c->meter, &r);
    double seconds = c->part_s + r.t - c->win_t, joules = c->part_j + r.total_j - c->win_j;
    long samples = c->part_samples + done - c->win_samples;
    if (seconds < c->window_s || samples <= 0)
        return;
    c->measured_s += seconds;
    if (c->budget_w > 0 && joules / seconds > c->budget_w)
        c->over_budget_s += seconds;
    if (c->skip > 0)
        c->skip--;
    else
        observe(c, r.t - c->start_t, seconds, joules, samples);
    c->part_s = c->part_j = 0, c->part_samples = 0;
    stretch_start(c, &r, done);
}

static void *control_thread(void *arg)
{
    worker_control *c = arg;
    pthread_mutex_lock(&c->lock);
    while (!c->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        long ns = until.tv_nsec + (long)(c->window_s / 4 * 1e9);
        until.tv_sec += ns / 1000000000L;
        until.tv_nsec = ns % 1000000000L;
        pthread_cond_timedwait(&c->wake, &c->lock, &until);
        if (c->training && !c->stopping)
            measure(c);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

void worker_control_end(worker_control *c)
{
    if (c->ended)
        return;
    c->ended = 1;
    if (c->running) {
        pthread_mutex_lock(&c->lock);
        c->stopping = 1;
        pthread_cond_signal(&c->wake);
        pthread_mutex_unlock(&c->lock);
        pthread_join(c->thread, NULL);
        c->running = 0;
    }
    operating_point_end(&c->op);
    if (!c->tune_workers || !c->models[0])
        return;
    char tmp[760];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", c->models, (long)getpid());
    FILE *in = fopen(c->models, "r"), *out = fopen(tmp, "w");
    int bad = !out || worker_tuner_save(&c->tuner, c->key, in, out);
    if (in)
        fclose(in);
    if (out && fclose(out))
        bad = 1;
    if (bad || rename(tmp, c->models)) {
        fprintf(c->log, "placement: cannot write %s: %s\n", c->models, strerror(errno));
        unlink(tmp);
    }
}

/* {"workers": K, "samples": ..., "img_per_s": ..., ...}: what K workers were measured at. */
static void figures_json(const policy_limits *l, int k, const option_figures *o, FILE *f)
{
    fprintf(f, "{\"workers\": %d, \"samples\": %ld", k, o->samples);
    json_number_field(f, "img_per_s", 1 / o->s_per_sample, 0);
    json_number_field(f, "watts", o->watts, 0);
    json_number_field(f, "j_per_sample", o->watts * o->s_per_sample, 0);
    json_number_field(f, "cost", policy_cost(l, o), 0);
    fputc('}', f);
}

static void decision_json(const policy_limits *l, const worker_decision *d, FILE *f)
{
    fprintf(f, "{\"workers\": %d", d->workers);
    json_fixed_field(f, "t", d->t, 3);
    fputs(", \"why\": ", f);
    json_string(f, d->why);
    fputs(", \"seen\": [", f);
    for (int i = 0; i < d->nseen; i++) {
        fputs(i ? ", " : "", f);
        figures_json(l, d->seen_workers[i], &d->seen[i], f);
    }
    fputs("]}", f);
}

void worker_control_json(worker_control *c, FILE *f)
{
    if (c->running)
        pthread_mutex_lock(&c->lock);
    fputs("\"placement\": {\"workers_decided\": ", f);
    fputs(c->tune_workers ? "true" : "false", f);
    fputs(", \"note\": ", f);
    json_string(f, c->note);
    if (c->on)
        json_fixed_field(f, "seconds_measured", c->measured_s, 3);
    if (c->tune_workers) {
        const worker_tuner *t = &c->tuner;
        fprintf(f, ", \"policy\": \"%s\", \"active_workers\": %d, \"explorations\": %d, "
                "\"exploring\": %s, \"devices_parked\": %s", policy_name(t->limits.policy),
                t->current, t->explorations, t->exploring ? "true" : "false",
                c->devices_parked ? "true" : "false");
        json_number_field(f, "power_budget_watts", c->budget_w, 0);
        json_number_field(f, "max_slowdown", t->limits.max_slowdown, 0);
        json_fixed_field(f, "seconds_over_budget", c->over_budget_s, 3);
        fputs(", \"by_workers\": [", f);
        for (int k = 1, first = 1; k <= t->max_workers; k++)
            if (t->opt[k - 1].samples) {
                fputs(first ? "" : ", ", f);
                figures_json(&t->limits, k, &t->opt[k - 1], f);
                first = 0;
            }
        fprintf(f, "], \"decisions_total\": %d, \"decisions\": [", c->decisions_total);
        for (int i = 0; i < c->ndecisions; i++) {
            fputs(i ? ", " : "", f);
            decision_json(&t->limits, &c->decisions[i], f);
        }
        fputc(']', f);
    }
    fputs("}, ", f);
    operating_point_json(&c->op, f);
    if (c->running)
        pthread_mutex_unlock(&c->lock);
}
