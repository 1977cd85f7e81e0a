/* Where a ready task goes when more than one kind of worker may run it (StarPU's dmda): to the
 * group expected to finish it first, counting the work already given to each group and the
 * copies of its data that group's memory lacks. Expected times come from models learned online
 * per (task kind, group, size: the log2 of the bytes the task touches); while a model has fewer
 * than PLACEMENT_CALIBRATION samples the task goes to it, so that every group gets measured.
 * Copy times come from each memory's measured bandwidth. Models can be saved and loaded
 * (rt_placement_save/load), so a second run starts from what the first learned.
 *
 * Runtimes with one group of workers never get here. */
#include "clock.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { PLACEMENT_CALIBRATION = 3, SIZE_BUCKETS = 48, LOADED_MAX = 4096 };

typedef struct perf_model {
    double mean_s;
    uint32_t count;
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
};

int placement_create(rt_runtime *rt)
{
    if (rt->ngroups < 2)
        return 0;
    placement *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    pthread_mutex_init(&p->lock, NULL);
    for (int m = 0; m < RT_MAX_MEMORIES; m++)
        p->bandwidth[m] = 1e9;   /* a prior until copies are measured */
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
        const char *name = kind_name(k);
        for (int i = 0; i < p->nloaded; i++)
            if (!strcmp(p->loaded[i].kind, name))
                p->model[k][p->loaded[i].worker_kind][p->loaded[i].bucket] = p->loaded[i].m;
    }
    return &p->model[k][0][0];
}

/* Seconds to copy what t reads and memory m lacks. */
static double copy_seconds(const rt_runtime *rt, const rt_task *t, int m)
{
    double bytes = 0;
    for (int i = 0; i < t->naccess; i++) {
        rt_handle *h = access_handle(t->access[i]);
        if (access_mode(t->access[i]) != RT_W && h->info && !(atomic_load(&h->info->valid) & (1u << m)))
            bytes += (double)region_extent(&h->reg);
    }
    return bytes / rt->placement->bandwidth[m];
}

worker_group *placement_choose(rt_runtime *rt, rt_task *t)
{
    placement *p = rt->placement;
    int k = t->kind->id, bucket = size_bucket(t);
    double now = clock_ticks_to_s(clock_ticks());
    worker_group *best = NULL, *least_known = NULL;
    double best_end = INFINITY;
    uint32_t fewest = UINT32_MAX;
    pthread_mutex_lock(&p->lock);
    perf_model *models = models_of(p, k);
    for (int i = 0; i < rt->ngroups; i++) {
        worker_group *g = &rt->groups[i];
        if (!((t->eligible >> g->kind) & 1))
            continue;
        perf_model *m = &models[g->kind * SIZE_BUCKETS + bucket];
        if (m->count < fewest)
            fewest = m->count, least_known = g;
        int memory = rt->workers[g->first].memory;
        double start = fmax(now, p->busy_until[g->kind]);
        double end = start + copy_seconds(rt, t, memory) + m->mean_s;
        if (end < best_end)
            best_end = end, best = g;
    }
    worker_group *g = fewest < PLACEMENT_CALIBRATION ? least_known : best;
    perf_model *m = &models[g->kind * SIZE_BUCKETS + bucket];
    p->busy_until[g->kind] = fmax(now, p->busy_until[g->kind]) + m->mean_s / g->n;
    pthread_mutex_unlock(&p->lock);
    return g;
}

void placement_learn(rt_runtime *rt, const rt_task *t, rt_worker_kind where, double seconds)
{
    placement *p = rt->placement;
    int k = t->kind->id, bucket = size_bucket(t);
    pthread_mutex_lock(&p->lock);
    perf_model *m = &models_of(p, k)[where * SIZE_BUCKETS + bucket];
    /* a running mean for the first samples, then an average that follows drift */
    uint32_t weight = m->count < 16 ? m->count : 16;
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
                    fprintf(f, "%s %s %d %.9g %u\n", kind_name(k),
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
