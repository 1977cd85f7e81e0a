/* The Chrome trace (Perfetto, chrome://tracing): every task's span on its worker's track, each
 * device's copies on tracks of their own, and what the runtime does not see itself (a peer's
 * messages, a sampler's power) on tracks and counters the caller adds. Bounded: each worker,
 * and the shared list, keeps at most its share of the event cap; what is past it is counted,
 * not kept, and the trace says so. */
#include "common/clock.h"
#include "internal.h"

#include "common/json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TRACE_TRACKS 64
#define TRACE_NAMES 256

typedef struct extra_span {
    double start, end;               /* clock_now_s() */
    int track, name;
} extra_span;

typedef struct extra_counter {
    double t, value;
    int name;
} extra_counter;

/* Guarded by rt->trace_lock. */
struct trace_extra {
    char tracks[TRACE_TRACKS][96];
    int ntracks;
    char names[TRACE_NAMES][64];
    int nnames;
    extra_span *spans;
    size_t nspans, capspans;
    extra_counter *counters;
    size_t ncounters, capcounters;
};

/* Appends one item of size `size` to a growing array, unless it holds `cap` already. */
static int append(rt_runtime *rt, void **items, size_t *n, size_t *capacity, size_t size,
                  const void *item)
{
    if (*n >= rt->trace_cap) {
        atomic_fetch_add_explicit(&rt->trace_dropped, 1, memory_order_relaxed);
        return -1;
    }
    if (*n == *capacity) {
        size_t c = *capacity ? 2 * *capacity : 4096;
        void *grown = realloc(*items, c * size);
        if (!grown) {   /* out of memory: the trace misses events (and says how many) */
            atomic_fetch_add_explicit(&rt->trace_dropped, 1, memory_order_relaxed);
            return -1;
        }
        *items = grown;
        *capacity = c;
    }
    memcpy((char *)*items + *n * size, item, size);
    (*n)++;
    return 0;
}

void trace_record(rt_worker *w, int kind, uint64_t start, uint64_t end)
{
    trace_event e = {start, end, kind, w->id};
    append(w->rt, (void **)&w->events, &w->nevents, &w->capevents, sizeof e, &e);
}

void trace_record_late(rt_runtime *rt, int worker, int kind, uint64_t start, uint64_t end)
{
    trace_event e = {start, end, kind, worker};
    pthread_mutex_lock(&rt->trace_lock);
    append(rt, (void **)&rt->late_events, &rt->nlate, &rt->caplate, sizeof e, &e);
    pthread_mutex_unlock(&rt->trace_lock);
}

int trace_init(rt_runtime *rt, const rt_config *cfg)
{
    size_t cap = cfg->trace_max_events ? cfg->trace_max_events : RT_TRACE_MAX_EVENTS;
    rt->trace_cap = cap / (size_t)(rt->nworkers + 2) + 1;   /* workers, late list, extras */
    rt->trace_origin = clock_ticks();
    rt->trace_origin_s = clock_now_s();
    if (rt->trace && !(rt->extra = calloc(1, sizeof *rt->extra)))
        return -1;
    return 0;
}

void trace_free(rt_runtime *rt)
{
    if (rt->extra) {
        free(rt->extra->spans);
        free(rt->extra->counters);
    }
    free(rt->extra);
}

/* ---- what the caller adds ---- */

static int intern(char table[][64], int *n, int max, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (!strncmp(table[i], name, 63))
            return i;
    if (*n == max)
        return -1;
    snprintf(table[*n], 64, "%s", name);
    return (*n)++;
}

int rt_trace_track(rt_runtime *rt, const char *name)
{
    if (!rt->extra)
        return -1;
    pthread_mutex_lock(&rt->trace_lock);
    trace_extra *x = rt->extra;
    int id = x->ntracks < TRACE_TRACKS ? x->ntracks++ : -1;
    if (id >= 0)
        snprintf(x->tracks[id], sizeof x->tracks[id], "%s", name);
    pthread_mutex_unlock(&rt->trace_lock);
    return id;
}

void rt_trace_span(rt_runtime *rt, int track, const char *name, double start_s, double end_s)
{
    if (!rt->extra || track < 0)
        return;
    pthread_mutex_lock(&rt->trace_lock);
    trace_extra *x = rt->extra;
    extra_span sp = {start_s, end_s, track, intern(x->names, &x->nnames, TRACE_NAMES, name)};
    if (sp.name >= 0)
        append(rt, (void **)&x->spans, &x->nspans, &x->capspans, sizeof sp, &sp);
    pthread_mutex_unlock(&rt->trace_lock);
}

void rt_trace_counter(rt_runtime *rt, const char *name, double t_s, double value)
{
    if (!rt->extra)
        return;
    pthread_mutex_lock(&rt->trace_lock);
    trace_extra *x = rt->extra;
    extra_counter c = {t_s, value, intern(x->names, &x->nnames, TRACE_NAMES, name)};
    if (c.name >= 0)
        append(rt, (void **)&x->counters, &x->ncounters, &x->capcounters, sizeof c, &c);
    pthread_mutex_unlock(&rt->trace_lock);
}

uint64_t rt_trace_dropped(rt_runtime *rt)
{
    return atomic_load_explicit(&rt->trace_dropped, memory_order_relaxed);
}

/* ---- writing ---- */

static void thread_name(FILE *f, int tid, const char *name)
{
    fprintf(f, ",\n{\"ph\":\"M\",\"pid\":0,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":", tid);
    json_string(f, name);
    fputs("}}", f);
}

static void span(FILE *f, const char *name, int tid, double ts_us, double dur_us)
{
    fputs(",\n{\"ph\":\"X\",\"pid\":0,\"name\":", f);
    json_string(f, name);
    fprintf(f, ",\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f}", tid, ts_us, dur_us > 0 ? dur_us : 0);
}

static void write_events(FILE *f, rt_runtime *rt, const trace_event *ev, size_t n)
{
    for (size_t e = 0; e < n; e++)
        span(f, ev[e].kind == TRACE_COPY_IN ? "copy to device"
                : ev[e].kind == TRACE_COPY_OUT ? "copy to host" : rt_kind_name(ev[e].kind),
             ev[e].worker, 1e6 * clock_ticks_to_s(ev[e].start - rt->trace_origin),
             1e6 * clock_ticks_to_s(ev[e].end - ev[e].start));
}

static void write_workers(FILE *f, rt_runtime *rt)
{
    for (int i = 0; i < rt->nworkers; i++) {
        rt_worker *w = &rt->workers[i];
        char name[96];
        if (w->device >= 0)
            snprintf(name, sizeof name, "device %s (%s)", WORKER_DEVICE(rt, w)->name,
                     rt_worker_kind_name(w->kind));
        else
            snprintf(name, sizeof name, "worker %d%s", i, i == 0 ? " (main)" : "");
        thread_name(f, i, name);
        write_events(f, rt, w->events, w->nevents);
    }
    for (int m = 1; m < rt->nmemories; m++)
        for (int dir = 1; dir >= 0 && rt->memories[m].dev.memory; dir--) {
            char name[96];
            snprintf(name, sizeof name, "copies %s device %s", dir ? "to" : "from",
                     rt->memories[m].dev.name);
            thread_name(f, trace_copy_track(rt, m, dir), name);
        }
    write_events(f, rt, rt->late_events, rt->nlate);
}

/* The caller's tracks come after the copies' tracks. */
static void write_extra(FILE *f, rt_runtime *rt)
{
    trace_extra *x = rt->extra;
    int first = trace_copy_track(rt, rt->nmemories, 1);
    for (int t = 0; t < x->ntracks; t++)
        thread_name(f, first + t, x->tracks[t]);
    for (size_t i = 0; i < x->nspans; i++) {
        const extra_span *s = &x->spans[i];
        span(f, x->names[s->name], first + s->track, 1e6 * (s->start - rt->trace_origin_s),
             1e6 * (s->end - s->start));
    }
    for (size_t i = 0; i < x->ncounters; i++) {
        const extra_counter *c = &x->counters[i];
        double ts = 1e6 * (c->t - rt->trace_origin_s);
        if (ts < 0)
            continue;   /* before the runtime started: Perfetto wants no negative times */
        fputs(",\n{\"ph\":\"C\",\"pid\":0,\"name\":", f);
        json_string(f, x->names[c->name]);
        fprintf(f, ",\"ts\":%.3f,\"args\":{\"value\":", ts);
        json_number(f, c->value);
        fputs("}}", f);
    }
}

int rt_trace_write(rt_runtime *rt, const char *path)
{
    if (!rt->trace) {
        errno = EINVAL;
        return -1;
    }
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    pthread_mutex_lock(&rt->trace_lock);
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n{\"ph\":\"M\",\"pid\":0,"
          "\"name\":\"process_name\",\"args\":{\"name\":\"frugal\"}}", f);
    write_workers(f, rt);
    write_extra(f, rt);
    fprintf(f, "\n],\"otherData\":{\"events_dropped\":%llu,\"event_cap\":%zu}}\n",
            (unsigned long long)rt_trace_dropped(rt), rt->trace_cap * (size_t)(rt->nworkers + 2));
    pthread_mutex_unlock(&rt->trace_lock);
    int bad = ferror(f);
    if (fclose(f) || bad)
        return -1;
    return 0;
}
