/* Per-task timing and run statistics (the trace is trace.c's). */
#include "common/clock.h"
#include "internal.h"


#include <stdlib.h>
#include <string.h>

void rt_stats_get(rt_runtime *rt, rt_stats *s)
{
    memset(s, 0, sizeof *s);
    s->workers = rt->nworkers;
    uint64_t busy = 0;
    uint64_t kcount[RT_WORKER_KINDS][RT_MAX_KINDS] = {{0}}, kticks[RT_WORKER_KINDS][RT_MAX_KINDS] = {{0}};
    for (int i = 0; i < rt->nworkers; i++) {
        rt_worker *w = &rt->workers[i];
        s->cpu_workers += w->kind == RT_WORKER_CPU;
        s->tasks += atomic_load_explicit(&w->tasks, memory_order_relaxed);
        s->steals += atomic_load_explicit(&w->steals, memory_order_relaxed);
        s->parks += atomic_load_explicit(&w->parks, memory_order_relaxed);
        s->late_wakeups += atomic_load_explicit(&w->late_wakeups, memory_order_relaxed);
        s->sleeps_in_flight += atomic_load_explicit(&w->sleeps_in_flight, memory_order_relaxed);
        if (w->kind == RT_WORKER_CPU)
            busy += atomic_load_explicit(&w->busy_ticks, memory_order_relaxed);
        for (int k = 0; k < RT_MAX_KINDS; k++) {
            kcount[w->kind][k] += atomic_load_explicit(&w->per_kind[k].count, memory_order_relaxed);
            kticks[w->kind][k] += atomic_load_explicit(&w->per_kind[k].ticks, memory_order_relaxed);
        }
    }
    for (int wk = 0; wk < RT_WORKER_KINDS; wk++)
        for (int k = 0; k < RT_MAX_KINDS; k++) {
            uint64_t c = atomic_load_explicit(&rt->late[wk][k].count, memory_order_relaxed);
            uint64_t t = atomic_load_explicit(&rt->late[wk][k].ticks, memory_order_relaxed);
            kcount[wk][k] += c;
            kticks[wk][k] += t;
            s->tasks += c;
            if (wk == RT_WORKER_CPU)
                busy += t;
        }
    s->wall_s = clock_ticks_to_s(clock_ticks() - rt->stats_origin);
    s->busy_s = clock_ticks_to_s(busy);
    pthread_mutex_lock(&rt->active_lock);
    double active = rt->active_ticks + (double)(clock_ticks() - rt->active_since) * rt_active_workers(rt);
    pthread_mutex_unlock(&rt->active_lock);
    s->task_share = active > 0 ? (double)busy / active : 0;   /* of the time workers were not parked */
    for (int k = 0; k < RT_MAX_KINDS; k++) {
        uint64_t count = 0;
        for (int wk = 0; wk < RT_WORKER_KINDS; wk++)
            count += kcount[wk][k];
        if (!count)
            continue;
        rt_kind_stats *ks = &s->kinds[s->nkinds++];
        ks->name = rt_kind_name(k);
        for (int wk = 0; wk < RT_WORKER_KINDS; wk++) {
            ks->count_by[wk] = kcount[wk][k];
            ks->busy_by[wk] = clock_ticks_to_s(kticks[wk][k]);
            ks->count += ks->count_by[wk];
            ks->busy_s += ks->busy_by[wk];
        }
    }
    rt_transfer_stats *to[2] = {&s->to_host, &s->to_device};
    for (int d = 0; d < 2; d++)
        *to[d] = (rt_transfer_stats){atomic_load(&rt->transfers[d].count),
                                     atomic_load(&rt->transfers[d].bytes),
                                     clock_ticks_to_s(atomic_load(&rt->transfers[d].ticks))};
}

void rt_stats_reset(rt_runtime *rt)
{
    for (int i = 0; i < rt->nworkers; i++) {
        rt_worker *w = &rt->workers[i];
        atomic_store(&w->tasks, 0);
        atomic_store(&w->steals, 0);
        atomic_store(&w->parks, 0);
        atomic_store(&w->late_wakeups, 0);
        atomic_store(&w->sleeps_in_flight, 0);
        atomic_store(&w->busy_ticks, 0);
        for (int k = 0; k < RT_MAX_KINDS; k++) {
            atomic_store(&w->per_kind[k].count, 0);
            atomic_store(&w->per_kind[k].ticks, 0);
        }
    }
    for (int wk = 0; wk < RT_WORKER_KINDS; wk++)
        for (int k = 0; k < RT_MAX_KINDS; k++) {
            atomic_store(&rt->late[wk][k].count, 0);
            atomic_store(&rt->late[wk][k].ticks, 0);
        }
    for (int d = 0; d < 2; d++) {
        atomic_store(&rt->transfers[d].count, 0);
        atomic_store(&rt->transfers[d].bytes, 0);
        atomic_store(&rt->transfers[d].ticks, 0);
    }
    pthread_mutex_lock(&rt->active_lock);
    rt->stats_origin = rt->active_since = clock_ticks();
    rt->active_ticks = 0;
    pthread_mutex_unlock(&rt->active_lock);
}

static void add_transfers(rt_transfer_stats *sum, const rt_transfer_stats *t)
{
    sum->count += t->count, sum->bytes += t->bytes, sum->seconds += t->seconds;
}

void rt_stats_add_work(rt_stats *sum, const rt_stats *s)
{
    sum->tasks += s->tasks, sum->steals += s->steals, sum->parks += s->parks;
    sum->late_wakeups += s->late_wakeups;
    sum->sleeps_in_flight += s->sleeps_in_flight;
    sum->busy_s += s->busy_s;
    add_transfers(&sum->to_device, &s->to_device);
    add_transfers(&sum->to_host, &s->to_host);
    for (int k = 0; k < s->nkinds; k++) {
        int i = 0;
        while (i < sum->nkinds && strcmp(sum->kinds[i].name, s->kinds[k].name))
            i++;
        if (i == RT_MAX_KINDS)
            continue;
        if (i == sum->nkinds)
            sum->kinds[sum->nkinds++] = (rt_kind_stats){.name = s->kinds[k].name};
        rt_kind_stats *a = &sum->kinds[i];
        const rt_kind_stats *b = &s->kinds[k];
        a->count += b->count, a->busy_s += b->busy_s;
        for (int w = 0; w < RT_WORKER_KINDS; w++)
            a->count_by[w] += b->count_by[w], a->busy_by[w] += b->busy_by[w];
    }
}

void rt_stats_add(rt_stats *sum, const rt_stats *s)
{
    double wall = sum->wall_s + s->wall_s;   /* the CPU workers are the same: weigh by wall */
    sum->task_share = wall > 0 ? (sum->task_share * sum->wall_s + s->task_share * s->wall_s) / wall : 0;
    sum->workers = s->workers, sum->cpu_workers = s->cpu_workers;
    sum->wall_s = wall;
    rt_stats_add_work(sum, s);
}

void rt_stats_print(const rt_stats *s, FILE *f)
{
    char others[96] = "";   /* a device's or the cluster's peer worker, beside the CPU's */
    if (s->workers > s->cpu_workers)
        snprintf(others, sizeof others, " (%d on the CPU, %d for devices or other machines)",
                 s->cpu_workers, s->workers - s->cpu_workers);
    fprintf(f, "runtime: %d workers%s, %llu tasks, %llu steals, %llu parks, %.3f s wall, "
               "%.1f%% of CPU worker time in task bodies\n",
            s->workers, others, (unsigned long long)s->tasks, (unsigned long long)s->steals,
            (unsigned long long)s->parks, s->wall_s, 100.0 * s->task_share);
    if (s->late_wakeups)
        fprintf(f, "runtime: %llu sleeps ended by the %d ms limit with work waiting (lost "
                "wake-ups, or a wake-up racing the limit)\n", (unsigned long long)s->late_wakeups,
                SLEEP_LIMIT_MS);
    if (s->sleeps_in_flight)
        fprintf(f, "runtime: a device's worker slept %llu times with work running there (a "
                "transfer another worker started)\n", (unsigned long long)s->sleeps_in_flight);
    for (int k = 0; k < s->nkinds; k++) {
        const rt_kind_stats *ks = &s->kinds[k];
        fprintf(f, "  %-24s %10llu tasks %10.3f s %9.2f us/task", ks->name,
                (unsigned long long)ks->count, ks->busy_s, 1e6 * ks->busy_s / (double)ks->count);
        if (ks->count_by[RT_WORKER_CPU] != ks->count)   /* some ran elsewhere: say where */
            for (int wk = 0; wk < RT_WORKER_KINDS; wk++)
                if (ks->count_by[wk])
                    fprintf(f, "  %s %llu (%.2f us)", rt_worker_kind_name((rt_worker_kind)wk),
                            (unsigned long long)ks->count_by[wk],
                            1e6 * ks->busy_by[wk] / (double)ks->count_by[wk]);
        fputc('\n', f);
    }
    const rt_transfer_stats *t[2] = {&s->to_device, &s->to_host};
    for (int d = 0; d < 2; d++)
        if (t[d]->count)
            fprintf(f, "  copies %-17s %10llu      %10.3f s %9.1f MB\n",
                    d == 0 ? "to devices" : "to the host", (unsigned long long)t[d]->count,
                    t[d]->seconds, 1e-6 * (double)t[d]->bytes);
}
