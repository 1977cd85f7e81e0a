/* Where a ready task goes when more than one kind of worker may run it (StarPU's dmda): to the
 * group expected to finish it first, counting the work already given to each group and the
 * copies of its data that group's memory lacks. Expected times come from models learned online
 * per (task kind, group, size: the log2 of the bytes the task touches); while a model has fewer
 * than PLACEMENT_CALIBRATION samples the task goes to it, so that every group gets measured.
 * Copy times come from each memory's measured bandwidth. Models can be saved and loaded
 * (rt_placement_save/load), so a second run starts from what the first learned.
 *
 * With an energy model (rt_set_placement_energy), the expected joules decide instead: each
 * group's expected seconds for the task times its power above idle, plus the idle power of the
 * machine for as long as the choice delays the finish against the earliest one.
 *
 * Parked devices (rt_park_devices) get only the tasks no other group can run.
 *
 * Runtimes with one group of workers never get here. */
#include "common/clock.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { PLACEMENT_CALIBRATION = 3, SIZE_BUCKETS = 48, LOADED_MAX = 4096 };
enum { FIRST_PROBE = 32, LAST_PROBE = 1 << 16, PROBE_RANGE = 8 };

typedef struct perf_model {
    double mean_s;
    uint32_t count;
    uint32_t passed_over;   /* tasks placed elsewhere since this group last ran one */
    uint32_t probe_after;   /* then one goes here anyway, to re-measure (doubling each time) */
} perf_model;

typedef struct loaded_line {   /* from a saved file, matched to kinds by name on first use */
    char kind[48];
    int worker_kind, bucket;
    perf_model m;
} loaded_line;

struct placement {
    pthread_mutex_t lock;
    perf_model model[RT_MAX_KINDS][RT_WORKER_KINDS][SIZE_BUCKETS];
    unsigned char resolved[RT_MAX_KINDS];   /* loaded lines copied in */
    double busy_until[RT_WORKER_KINDS];     /* per worker kind's group: work given, in seconds */
    double bandwidth[RT_MAX_MEMORIES];      /* bytes per second to fill each memory */
    loaded_line *loaded;
    int nloaded;
    rt_energy_model energy;
    unsigned parked_kinds;                  /* worker kinds left out when another may run it */
};

int placement_create(rt_runtime *rt)
{
    /* only kinds that compute here compete for tasks (a peer worker runs its own kinds only) */
    if (rt->ngroups - (rt->group_of_kind[RT_WORKER_PEER] != NULL) < 2)
        return 0;
    placement *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    pthread_mutex_init(&p->lock, NULL);
    for (int m = 0; m < RT_MAX_MEMORIES; m++)
        p->bandwidth[m] = 1e9;   /* a prior until copies are measured */
    p->energy.max_slowdown = -1;
    rt->placement = p;
    return 0;
}

void placement_destroy(rt_runtime *rt)
{
    if (!rt->placement)
        return;
    pthread_mutex_destroy(&rt->placement->lock);
    free(rt->placement->loaded);
    free(rt->placement);
    rt->placement = NULL;
}

/* The size class of a task: log2 of the bytes it touches. */
static int size_bucket(const rt_task *t)
{
    size_t bytes = 1;
    for (int i = 0; i < t->naccess; i++)
        bytes += region_extent(&access_handle(t->access[i])->reg);
    int b = 63 - __builtin_clzll((unsigned long long)bytes);
    return b < SIZE_BUCKETS ? b : SIZE_BUCKETS - 1;
}

/* Under the lock: the models of kind k, with what a saved file says of it. */
static perf_model *models_of(placement *p, int k)
{
    if (!p->resolved[k]) {
        p->resolved[k] = 1;
        const char *name = rt_kind_name(k);
        for (int i = 0; i < p->nloaded; i++)
            if (!strcmp(p->loaded[i].kind, name))
                p->model[k][p->loaded[i].worker_kind][p->loaded[i].bucket] = p->loaded[i].m;
    }
    return &p->model[k][0][0];
}

/* Seconds to copy what t reads and memory m lacks, and, for a device memory, to bring what t
 * writes back to the host: the CPU workers run most tasks, so its outputs are likely read
 * there next (where a chain of tasks stays on the device this overestimates, and the device is
 * then chosen only for kernels fast enough to pay for it). */
static double copy_seconds(const rt_runtime *rt, const rt_task *t, int m)
{
    double bytes = 0;
    for (int i = 0; i < t->naccess; i++) {
        rt_handle *h = access_handle(t->access[i]);
        int mode = access_mode(t->access[i]);
        if (!h->info)
            continue;
        if (mode != RT_W && !(atomic_load(&h->info->valid) & (1u << m)))
            bytes += (double)region_extent(&h->reg);
        if (m != 0 && mode != RT_R)
            bytes += (double)region_extent(&h->reg);
    }
    return bytes / rt->placement->bandwidth[m];
}

/* A device computing on the host's cores waits for them like the CPU workers do (above), and
 * takes its time from them: so it is chosen only where it finishes the work sooner than they
 * would, not whenever their queue is long. */
static void charge_shared_cores(rt_runtime *rt, const worker_group *g, double seconds, double now)
{
    int cores = g->kind == RT_WORKER_CPU ? 0 : WORKER_DEVICE(rt, &rt->workers[g->first])->host_cores;
    if (g->kind == RT_WORKER_CPU || cores <= 0 || rt->ncpu <= 0)
        return;
    double share = (double)(cores < rt->ncpu ? cores : rt->ncpu) / rt->ncpu;
    placement *p = rt->placement;
    p->busy_until[RT_WORKER_CPU] = fmax(now, p->busy_until[RT_WORKER_CPU]) + seconds * share;
}

/* Under the lock: the group with the least expected joules (or joules x seconds) among those
 * within the slowdown cap; end[i] is when group i would finish, cost[i] its seconds. */
static worker_group *least_energy(rt_runtime *rt, unsigned eligible, const double *end,
                                  const double *cost, double best_end, double now)
{
    const rt_energy_model *e = &rt->placement->energy;
    worker_group *best = NULL;
    double best_j = INFINITY;
    for (int i = 0; i < rt->ngroups; i++) {
        worker_group *g = &rt->groups[i];
        if (!((eligible >> g->kind) & 1) || !isfinite(end[i]) ||
            (e->max_slowdown >= 0 && end[i] - now > (best_end - now) * (1 + e->max_slowdown)))
            continue;
        double joules = cost[i] * e->active_w[g->kind] + e->idle_w * (end[i] - best_end);
        if (e->objective == RT_PLACE_EDP)
            joules *= end[i] - now;
        if (joules < best_j)
            best_j = joules, best = g;
    }
    return best;
}

worker_group *placement_choose(rt_runtime *rt, rt_task *t)
{
    placement *p = rt->placement;
    int k = t->kind->id, bucket = size_bucket(t);
    double now = clock_ticks_to_s(clock_ticks());
    worker_group *best = NULL, *least_known = NULL;
    double best_end = INFINITY, cost[RT_WORKER_KINDS], end[RT_WORKER_KINDS];
    uint32_t fewest = UINT32_MAX;
    pthread_mutex_lock(&p->lock);
    unsigned eligible = t->eligible & ~p->parked_kinds;
    if (!eligible)   /* only a parked group can run it */
        eligible = t->eligible;
    perf_model *models = models_of(p, k);
    for (int i = 0; i < rt->ngroups; i++) {
        worker_group *g = &rt->groups[i];
        end[i] = INFINITY;
        if (!((eligible >> g->kind) & 1))
            continue;
        perf_model *m = &models[g->kind * SIZE_BUCKETS + bucket];
        if (m->count < fewest)
            fewest = m->count, least_known = g;
        int memory = rt->workers[g->first].memory;
        double start = fmax(now, p->busy_until[g->kind]);
        if (g->kind != RT_WORKER_CPU && WORKER_DEVICE(rt, &rt->workers[g->first])->host_cores > 0)
            start = fmax(start, p->busy_until[RT_WORKER_CPU]);
        cost[i] = copy_seconds(rt, t, memory) + m->mean_s;
        end[i] = start + cost[i];
        if (end[i] < best_end)
            best_end = end[i], best = g;
    }
    if (p->energy.objective != RT_PLACE_TIME && best)
        best = least_energy(rt, eligible, end, cost, best_end, now);
    worker_group *g = fewest < PLACEMENT_CALIBRATION ? least_known : best;
    /* A model is only as good as its samples: one taken while the cores were busy elsewhere
     * would keep its group idle for good. A group passed over gets a probe now and then (after
     * 32 tasks, then 64, ...: a bounded, shrinking share), unless it looks so slow that no
     * disturbed sample explains it (a probe there would stall the tasks that wait for it). */
    for (int i = 0; i < rt->ngroups; i++) {
        worker_group *o = &rt->groups[i];
        if (o == g || !((eligible >> o->kind) & 1) || cost[i] > PROBE_RANGE * cost[g - rt->groups])
            continue;
        perf_model *om = &models[o->kind * SIZE_BUCKETS + bucket];
        if (!om->probe_after)
            om->probe_after = FIRST_PROBE;
        if (++om->passed_over >= om->probe_after) {
            om->probe_after = om->probe_after < LAST_PROBE ? 2 * om->probe_after : LAST_PROBE;
            g = o;
            break;
        }
    }
    perf_model *m = &models[g->kind * SIZE_BUCKETS + bucket];
    m->passed_over = 0;
    p->busy_until[g->kind] = fmax(now, p->busy_until[g->kind]) + m->mean_s / g->n;
    charge_shared_cores(rt, g, m->mean_s, now);
    pthread_mutex_unlock(&p->lock);
    return g;
}

void rt_set_placement_energy(rt_runtime *rt, const rt_energy_model *m)
{
    placement *p = rt->placement;
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->energy = *m;
    pthread_mutex_unlock(&p->lock);
}

void rt_park_devices(rt_runtime *rt, int parked)
{
    placement *p = rt->placement;
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->parked_kinds = parked ? ~((1u << RT_WORKER_CPU) | (1u << RT_WORKER_PEER)) : 0;
    pthread_mutex_unlock(&p->lock);
}

void placement_learn(rt_runtime *rt, const rt_task *t, rt_worker_kind where, double seconds)
{
    placement *p = rt->placement;
    int k = t->kind->id, bucket = size_bucket(t);
    pthread_mutex_lock(&p->lock);
    perf_model *m = &models_of(p, k)[where * SIZE_BUCKETS + bucket];
    /* Quick down, slow up: a task is slowed by what else runs on its cores (never sped up),
     * so a fast sample is believed at once (half way) and a slow one averaged in, as drift. */
    uint32_t weight = m->count < 16 ? m->count : 16;
    if (!m->count)
        m->mean_s = seconds;
    else if (seconds < m->mean_s)
        m->mean_s = 0.5 * (m->mean_s + seconds);
    else
        m->mean_s = (m->mean_s * weight + seconds) / (weight + 1);
    m->count++;
    pthread_mutex_unlock(&p->lock);
}

void placement_copy_measured(rt_runtime *rt, int memory, double bytes, double seconds)
{
    placement *p = rt->placement;
    if (!p || seconds <= 0 || bytes < 4096)   /* tiny copies measure latency, not bandwidth */
        return;
    pthread_mutex_lock(&p->lock);
    p->bandwidth[memory] = 0.8 * p->bandwidth[memory] + 0.2 * bytes / seconds;
    pthread_mutex_unlock(&p->lock);
}

int rt_placement_save(rt_runtime *rt, FILE *f)
{
    placement *p = rt->placement;
    if (!p)
        return 0;
    pthread_mutex_lock(&p->lock);
    fprintf(f, "# frugal placement models: kind worker_kind size_log2 mean_seconds samples\n");
    for (int k = 1; k < RT_MAX_KINDS; k++)
        for (int w = 0; w < RT_WORKER_KINDS; w++)
            for (int b = 0; b < SIZE_BUCKETS; b++) {
                perf_model *m = &p->model[k][w][b];
                if (m->count)
                    fprintf(f, "%s %s %d %.9g %u\n", rt_kind_name(k),
                            rt_worker_kind_name((rt_worker_kind)w), b, m->mean_s, m->count);
            }
    pthread_mutex_unlock(&p->lock);
    return ferror(f) ? -1 : 0;
}

int rt_placement_load(rt_runtime *rt, FILE *f)
{
    placement *p = rt->placement;
    if (!p)
        return 0;
    char line[256], kind[48], wk[16];
    int lines = 0;
    pthread_mutex_lock(&p->lock);
    while (fgets(line, sizeof line, f) && p->nloaded < LOADED_MAX) {
        loaded_line l;
        unsigned count;
        if (line[0] == '#' ||
            sscanf(line, "%47s %15s %d %lg %u", kind, wk, &l.bucket, &l.m.mean_s, &count) != 5 ||
            l.bucket < 0 || l.bucket >= SIZE_BUCKETS || !isfinite(l.m.mean_s) || l.m.mean_s < 0)
            continue;   /* a line from another version, or damaged: ignored */
        l.worker_kind = -1;
        for (int w = 0; w < RT_WORKER_KINDS; w++)
            if (!strcmp(wk, rt_worker_kind_name((rt_worker_kind)w)))
                l.worker_kind = w;
        if (l.worker_kind < 0)
            continue;
        snprintf(l.kind, sizeof l.kind, "%s", kind);
        l.m.count = count;
        loaded_line *grown = realloc(p->loaded, sizeof *grown * (size_t)(p->nloaded + 1));
        if (!grown)
            break;
        p->loaded = grown;
        p->loaded[p->nloaded++] = l;
        lines++;
    }
    memset(p->resolved, 0, sizeof p->resolved);
    pthread_mutex_unlock(&p->lock);
    return lines;
}
