#include "energy/meter.h"
#include "common/clock.h"

#include "energy/history.h"
#include "energy/power_model.h"
#include "energy/nvml.h"
#include "energy/perf_power.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define UNWIRED_WAIT_MS 50

struct energy_meter {
    pthread_mutex_t lock;            /* guards the sensors' sampling state */
    pthread_mutex_t latest_lock;     /* guards latest alone: held for a copy, never a sample */
    energy_reading latest;           /* the state as of the latest sample */
    sensor s[SENSOR_MAX];
    int n;
    energy_options opts;
    char source[1024];
    int estimated;
    cpu_times model_prev;            /* the model sensor's previous /proc/stat reading */
    double opened;                   /* clock_now_s() then */
    double opened_unix;              /* the wall clock then */
    long samples;
    double last_t;                   /* the latest sample's time (since_open) */
    power_history history;

    pthread_t thread;
    int running;
    double started;                  /* when the sampler started (since_open) */
    int stop;                        /* guarded by lock; the thread waits on wake */
    pthread_cond_t wake;
};

/* Seconds since the meter opened. */
static double since_open(const energy_meter *m) { return clock_now_s() - m->opened; }

static int usable(const sensor *s, sensor_scope scope, const char *source)
{
    return s->status == SENSOR_OK && s->scope == scope && (!source || !strcmp(s->source, source));
}

static int any(const energy_meter *m, sensor_scope scope, const char *source)
{
    for (int i = 0; i < m->n; i++)
        if (usable(&m->s[i], scope, source))
            return 1;
    return 0;
}

static void add_model(energy_meter *m)
{
    if (m->n == SENSOR_MAX)
        m->n--;   /* the model matters more than the 64th sensor */
    sensor *z = &m->s[m->n++];
    memset(z, 0, sizeof *z);
    sysfs_format(z->name, sizeof z->name, "cpu model");
    z->source = "model";
    z->kind = SENSOR_MODEL;
    z->scope = SCOPE_CPU;
    sysfs_path(z->path, sizeof z->path, "/proc/stat");
    int e = energy_cpu_times_read(&m->model_prev);
    if (e) {
        /* Without /proc/stat the model assumes idle: still an estimate, and said so. */
        sysfs_format(z->why, sizeof z->why, "%s: %s; assuming idle CPUs", z->path,
                     e == EINVAL ? "no cpu lines" : strerror(e));
    }
    z->in_total = 1;
    m->estimated = 1;
}

static void append(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *out, size_t n, const char *fmt, ...)
{
    size_t used = strlen(out);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out + used, n - used, fmt, ap);
    va_end(ap);
}

/* A RAPL or perf counter that reads 0 and stays at 0 is not wired on this machine (psys on most
 * desktops and servers, and in virtual machines): counted, it would make the total 0 J
 * "measured". A live one moves every millisecond, so a short wait tells them apart; only
 * counters at 0 cost it. */
static void set_aside_unwired(energy_meter *m)
{
    int at_zero[SENSOR_MAX] = {0}, any_at_zero = 0;
    for (int i = 0; i < m->n; i++) {
        sensor *s = &m->s[i];
        double v;
        if (s->status == SENSOR_OK && s->kind == SENSOR_COUNTER &&
            (!strcmp(s->source, "rapl") || !strcmp(s->source, "perf")) && !sensor_read(s, &v) &&
            v == 0)
            at_zero[i] = any_at_zero = 1;
    }
    if (!any_at_zero)
        return;
    nanosleep(&(struct timespec){0, UNWIRED_WAIT_MS * 1000000L}, NULL);
    for (int i = 0; i < m->n; i++) {
        sensor *s = &m->s[i];
        double v;
        if (at_zero[i] && !sensor_read(s, &v) && v == 0) {
            s->status = SENSOR_UNREADABLE;
            sysfs_format(s->why, sizeof s->why, "%s reads 0 and did not move in %d ms: not "
                         "wired on this machine, left out", s->path, UNWIRED_WAIT_MS);
        }
    }
}

/* Marks the sensors that make up the total (see meter.h) and writes the source line. */
static void choose_total(energy_meter *m)
{
    const char *cpu_source = any(m, SCOPE_CPU, "rapl")    ? "rapl"
                             : any(m, SCOPE_CPU, "perf")  ? "perf"
                             : any(m, SCOPE_CPU, "hwmon") ? "hwmon"
                                                          : NULL;
    const char *psys = any(m, SCOPE_SYSTEM, "rapl") ? "rapl" : any(m, SCOPE_SYSTEM, "perf") ? "perf"
                                                                                            : NULL;
    if (psys) {
        for (int i = 0; i < m->n; i++)
            m->s[i].in_total = usable(&m->s[i], SCOPE_SYSTEM, psys);
    } else if (cpu_source) {
        for (int i = 0; i < m->n; i++) {
            const sensor *s = &m->s[i];
            m->s[i].in_total = usable(s, SCOPE_CPU, cpu_source) || usable(s, SCOPE_DRAM, NULL) ||
                               usable(s, SCOPE_GPU, NULL) || usable(s, SCOPE_BOARD, NULL);
        }
    } else if (any(m, SCOPE_SYSTEM, NULL)) {
        int chosen = 0;
        for (int i = 0; i < m->n; i++)
            if ((m->s[i].in_total = !chosen && usable(&m->s[i], SCOPE_SYSTEM, NULL)))
                chosen = 1;
    } else {
        for (int i = 0; i < m->n; i++) {
            const sensor *s = &m->s[i];
            m->s[i].in_total = usable(s, SCOPE_DRAM, NULL) || usable(s, SCOPE_GPU, NULL) ||
                               usable(s, SCOPE_BOARD, NULL);
        }
        add_model(m);
    }
    m->source[0] = 0;
    const char *utilisation = energy_model_per_process()
        ? "this process's CPU time: FRUGAL_MODEL_SCOPE=process" : "/proc/stat utilisation";
    if (m->estimated && m->opts.profile_w[2] > 0)
        append(m->source, sizeof m->source, "estimated: model (power profile %g W idle, %g W "
               "one core busy, %g W all busy; %s)", m->opts.profile_w[0],
               m->opts.profile_w[1], m->opts.profile_w[2], utilisation);
    else if (m->estimated)
        append(m->source, sizeof m->source, "estimated: model (%g W idle + %g W per busy core, "
               "%s)", m->opts.model_idle_w, m->opts.model_core_w, utilisation);
    int measured = 0;
    for (int i = 0; i < m->n; i++) {
        const sensor *s = &m->s[i];
        if (s->in_total && s->kind != SENSOR_MODEL)
            append(m->source, sizeof m->source, "%s%s %s",
                   measured++ ? " + " : m->estimated ? " + measured: " : "measured: ", s->source,
                   s->name);
    }
}

energy_meter *energy_meter_open(const energy_options *opts)
{
    energy_meter *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->opts = opts ? *opts : (energy_options){0, MODEL_IDLE_W, MODEL_CORE_W, {0}};
    if (m->opts.rate_hz <= 0)
        m->opts.rate_hz = 20;
    pthread_mutex_init(&m->lock, NULL);
    pthread_mutex_init(&m->latest_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->wake, &ca);
    pthread_condattr_destroy(&ca);
    m->opened = clock_now_s();
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    m->opened_unix = (double)wall.tv_sec + 1e-9 * (double)wall.tv_nsec;
    rapl_probe(m->s, &m->n, SENSOR_MAX);
    hwmon_probe(m->s, &m->n, SENSOR_MAX);
    battery_probe(m->s, &m->n, SENSOR_MAX);
    nvml_probe(m->s, &m->n, SENSOR_MAX);
    if (!any(m, SCOPE_CPU, "rapl") && !any(m, SCOPE_SYSTEM, "rapl"))
        perf_power_probe(m->s, &m->n, SENSOR_MAX);
    set_aside_unwired(m);
    choose_total(m);
    history_init(&m->history, m->n);   /* out of memory: no timeline, the totals still work */
    energy_meter_sample_at(m, 0);   /* every counter's starting point */
    return m;
}

static void lose(sensor *s, double t, int err)
{
    if (s->status == SENSOR_OK)
        sysfs_format(s->why, sizeof s->why, "failed at %.1f s: %s: %s; its energy since then is "
                     "missing", t, s->path, strerror(err));
    s->status = SENSOR_LOST;
    s->have_prev = 0;
    s->watts = 0;
}

static void sample_sensor(energy_meter *m, sensor *s, double t)
{
    if (s->status == SENSOR_UNREADABLE)
        return;
    double dt = t - s->prev_t, value, joules = 0;
    if (s->kind == SENSOR_MODEL) {
        cpu_times now;
        double cores = 0;
        if (!energy_cpu_times_read(&now)) {
            cores = energy_cpu_busy_cores(&m->model_prev, &now);
            m->model_prev = now;
        }
        value = m->opts.profile_w[2] > 0
                    ? power_model_profile_watts(m->opts.profile_w, m->model_prev.ncpu, cores)
                    : power_model_watts(m->opts.model_idle_w, m->opts.model_core_w, cores);
        joules = s->have_prev ? value * dt : 0;
        s->watts = value;
    } else {
        int e = sensor_read(s, &value);
        if (e) {
            lose(s, t, e);
            return;
        }
        if (s->status == SENSOR_LOST) {   /* back: restart from this reading */
            s->status = SENSOR_OK;
            sysfs_format(s->why, sizeof s->why, "came back at %.1f s after a failure; the energy "
                         "in between is missing", t);
        }
        if (s->status == SENSOR_PAUSED) {
            s->have_prev = 0;
            s->watts = 0;
            return;
        }
        if (s->kind == SENSOR_COUNTER && s->have_prev) {
            double delta = value - s->prev_value;
            if (delta < 0) {
                s->wraps++;
                if (s->max_uj && s->prev_value <= (double)s->max_uj)
                    delta = (double)s->max_uj - s->prev_value + value + 1;
                else
                    delta = s->prev_watts * dt * 1e6;
            }
            joules = delta * 1e-6;
            s->watts = dt > 0 ? joules / dt : 0;
        } else if (s->kind == SENSOR_GAUGE) {
            double w = value * 1e-6;
            if (s->have_prev)
                joules = 0.5 * (s->prev_watts + w) * dt;   /* trapezoid */
            s->watts = w;
        }
    }
    if (s->have_prev && dt > 0)
        s->joules += joules;
    s->prev_value = value;
    s->prev_watts = s->watts;
    s->prev_t = t;
    s->have_prev = 1;
}

/* Under the lock: the accumulated state as of time t. */
static void copy_locked(const energy_meter *m, double t, energy_reading *out)
{
    out->t = t;
    out->n = m->n;
    out->total_j = out->total_w = 0;
    for (int i = 0; i < m->n; i++) {
        out->joules[i] = m->s[i].joules;
        out->watts[i] = m->s[i].watts;
        if (m->s[i].in_total) {
            out->total_j += m->s[i].joules;
            out->total_w += m->s[i].watts;
        }
    }
}

/* Under the lock; publishes the state as latest. */
static void sample_locked(energy_meter *m, double t)
{
    history_point p = {.t = t};
    for (int i = 0; i < m->n; i++) {
        sample_sensor(m, &m->s[i], t);
        p.joules[i] = m->s[i].joules;
        if (m->s[i].in_total)
            p.total_j += m->s[i].joules;
    }
    history_offer(&m->history, &p);
    m->samples++;
    if (t > m->last_t)
        m->last_t = t;
    energy_reading now;
    copy_locked(m, m->last_t, &now);
    pthread_mutex_lock(&m->latest_lock);
    m->latest = now;
    pthread_mutex_unlock(&m->latest_lock);
}

void energy_meter_sample_at(energy_meter *m, double t)
{
    pthread_mutex_lock(&m->lock);
    sample_locked(m, t);
    pthread_mutex_unlock(&m->lock);
}

int energy_meter_history(energy_meter *m, history_point *out, int max)
{
    pthread_mutex_lock(&m->lock);
    int n = m->history.n < max ? m->history.n : max;
    if (n > 0)
        memcpy(out, m->history.points, sizeof *out * (size_t)n);
    pthread_mutex_unlock(&m->lock);
    return n;
}

double energy_meter_opened_unix(const energy_meter *m) { return m->opened_unix; }

void energy_meter_read(energy_meter *m, energy_reading *out)
{
    pthread_mutex_lock(&m->lock);
    double t = since_open(m);
    sample_locked(m, t);
    copy_locked(m, t, out);
    pthread_mutex_unlock(&m->lock);
}

/* Never waits for a sample in progress (the sampler holds the lock through its sensors). */
void energy_meter_latest(energy_meter *m, energy_reading *out)
{
    if (!m->running) {   /* nobody samples for us */
        energy_meter_read(m, out);
        return;
    }
    pthread_mutex_lock(&m->latest_lock);
    *out = m->latest;
    pthread_mutex_unlock(&m->latest_lock);
}

static void *sampler(void *arg)
{
    energy_meter *m = arg;
    double period = 1.0 / m->opts.rate_hz;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    pthread_mutex_lock(&m->lock);
    while (!m->stop) {
        long ns = next.tv_nsec + (long)(period * 1e9);
        next.tv_sec += ns / 1000000000L;
        next.tv_nsec = ns % 1000000000L;
        while (!m->stop && pthread_cond_timedwait(&m->wake, &m->lock, &next) != ETIMEDOUT) {
        }
        if (m->stop)
            break;
        pthread_mutex_unlock(&m->lock);
        energy_meter_sample_at(m, since_open(m));
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > next.tv_sec || (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec))
            next = now;   /* fell behind (a suspended machine): no burst of catch-up samples */
        pthread_mutex_lock(&m->lock);
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

int energy_meter_start(energy_meter *m, char *err, size_t errlen)
{
    int e = pthread_create(&m->thread, NULL, sampler, m);
    if (e) {
        sysfs_format(err, errlen, "cannot start the energy sampler: %s", strerror(e));
        return -1;
    }
    m->running = 1;
    m->started = since_open(m);
    return 0;
}

void energy_meter_close(energy_meter *m)
{
    if (!m)
        return;
    if (m->running) {
        pthread_mutex_lock(&m->lock);
        m->stop = 1;
        pthread_cond_signal(&m->wake);
        pthread_mutex_unlock(&m->lock);
        pthread_join(m->thread, NULL);
    }
    for (int i = 0; i < m->n; i++)
        perf_power_close(&m->s[i]);
    history_free(&m->history);
    pthread_cond_destroy(&m->wake);
    pthread_mutex_destroy(&m->latest_lock);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

int energy_meter_sensors(energy_meter *m, sensor *out, int max)
{
    pthread_mutex_lock(&m->lock);
    int n = m->n < max ? m->n : max;
    memcpy(out, m->s, sizeof *out * (size_t)n);
    pthread_mutex_unlock(&m->lock);
    return n;
}

const char *energy_meter_source(const energy_meter *m) { return m->source; }
int energy_meter_estimated(const energy_meter *m) { return m->estimated; }
double energy_meter_rate(const energy_meter *m) { return m->opts.rate_hz; }

long energy_meter_samples(energy_meter *m)
{
    pthread_mutex_lock(&m->lock);
    long n = m->samples;
    pthread_mutex_unlock(&m->lock);
    return n;
}

double energy_meter_sampler_share(energy_meter *m)
{
    clockid_t id;
    struct timespec ts;
    double wall = since_open(m) - m->started;
    if (!m->running || wall <= 0 || pthread_getcpuclockid(m->thread, &id) || clock_gettime(id, &ts))
        return 0;
    return ((double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec) / wall;
}
