/* Per-task timing, run statistics and the Chrome trace export. */
#include "clock.h"
#include "internal.h"

#include "common/json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void trace_record(rt_worker *w, int kind, uint64_t start, uint64_t end)
{
    if (w->nevents == w->capevents) {
        size_t cap = w->capevents ? 2 * w->capevents : 4096;
        trace_event *ev = realloc(w->events, cap * sizeof *ev);
        if (!ev)
            return;   /* out of memory: the trace misses events, the run goes on */
        w->events = ev;
        w->capevents = cap;
    }
    w->events[w->nevents++] = (trace_event){start, end, kind};
}

void rt_stats_get(rt_runtime *rt, rt_stats *s)
{
    memset(s, 0, sizeof *s);
    s->workers = rt->nworkers;
    uint64_t busy = 0;
    uint64_t kcount[RT_MAX_KINDS] = {0}, kticks[RT_MAX_KINDS] = {0};
    for (int i = 0; i < rt->nworkers; i++) {
        rt_worker *w = &rt->workers[i];
        s->tasks += atomic_load_explicit(&w->tasks, memory_order_relaxed);
        s->steals += atomic_load_explicit(&w->steals, memory_order_relaxed);
        s->parks += atomic_load_explicit(&w->parks, memory_order_relaxed);
        busy += atomic_load_explicit(&w->busy_ticks, memory_order_relaxed);
        for (int k = 0; k < RT_MAX_KINDS; k++) {
            kcount[k] += atomic_load_explicit(&w->per_kind[k].count, memory_order_relaxed);
            kticks[k] += atomic_load_explicit(&w->per_kind[k].ticks, memory_order_relaxed);
        }
    }
    s->wall_s = clock_ticks_to_s(clock_ticks() - rt->stats_origin);
    s->busy_s = clock_ticks_to_s(busy);
    s->task_share = s->wall_s > 0 ? s->busy_s / (s->wall_s * rt->nworkers) : 0;
    for (int k = 0; k < RT_MAX_KINDS; k++)
        if (kcount[k]) {
            rt_kind_stats *ks = &s->kinds[s->nkinds++];
            ks->name = kind_name(k);
            ks->count = kcount[k];
            ks->busy_s = clock_ticks_to_s(kticks[k]);
        }
}

void rt_stats_reset(rt_runtime *rt)
{
    for (int i = 0; i < rt->nworkers; i++) {
        rt_worker *w = &rt->workers[i];
        atomic_store(&w->tasks, 0);
        atomic_store(&w->steals, 0);
        atomic_store(&w->parks, 0);
        atomic_store(&w->busy_ticks, 0);
        for (int k = 0; k < RT_MAX_KINDS; k++) {
            atomic_store(&w->per_kind[k].count, 0);
            atomic_store(&w->per_kind[k].ticks, 0);
        }
    }
    rt->stats_origin = clock_ticks();
}

void rt_stats_print(const rt_stats *s, FILE *f)
{
    fprintf(f, "runtime: %d workers, %llu tasks, %llu steals, %llu parks, %.3f s wall, "
               "%.1f%% of worker time in task bodies\n",
            s->workers, (unsigned long long)s->tasks, (unsigned long long)s->steals,
            (unsigned long long)s->parks, s->wall_s, 100.0 * s->task_share);
    for (int k = 0; k < s->nkinds; k++)
        fprintf(f, "  %-24s %10llu tasks %10.3f s %9.2f us/task\n", s->kinds[k].name,
                (unsigned long long)s->kinds[k].count, s->kinds[k].busy_s,
                1e6 * s->kinds[k].busy_s / (double)s->kinds[k].count);
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
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", f);
    int first = 1;
    for (int i = 0; i < rt->nworkers; i++) {
        fprintf(f, "%s{\"ph\":\"M\",\"pid\":0,\"tid\":%d,\"name\":\"thread_name\","
                   "\"args\":{\"name\":\"worker %d%s\"}}",
                first ? "" : ",\n", i, i, i == 0 ? " (main)" : "");
        first = 0;
        rt_worker *w = &rt->workers[i];
        for (size_t e = 0; e < w->nevents; e++) {
            const trace_event *ev = &w->events[e];
            double ts = 1e6 * clock_ticks_to_s(ev->start - rt->trace_origin);
            double dur = 1e6 * clock_ticks_to_s(ev->end - ev->start);
            fputs(",\n{\"ph\":\"X\",\"pid\":0,\"name\":", f);
            json_string(f, kind_name(ev->kind));
            fprintf(f, ",\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f}", i, ts, dur);
        }
    }
    fputs("\n]}\n", f);
    int bad = ferror(f);
    if (fclose(f) || bad)
        return -1;
    return 0;
}
