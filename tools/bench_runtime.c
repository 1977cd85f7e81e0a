/* Runtime overhead benchmark: the same DAGs of empty tasks on frugal's runtime and as OpenMP
 * tasks with depend clauses (libgomp), in one invocation: REPEATS runs of each side, alternating.
 * Prints one line per DAG with each side's median run,
 *   bench runtime DAG workers=W frugal_tasks_per_s=N omp_tasks_per_s=N ratio=X
 * and on stderr the ranges and the ratio of the best runs.
 * Usage: bench_runtime [workers] [scale] [frugal|omp|both] [DAG]
 *        bench_runtime --trace FILE [workers]   one wavefront run, its Chrome trace to FILE */
#include "common/clock.h"
#include "runtime/runtime.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { REPEATS = 7 };
static int workers = 2;
static int scale = 1;

static int empty(const rt_ctx *ctx, void *args)
{
    (void)ctx, (void)args;
    return 0;
}
static rt_kind empty_kind = {.name = "empty", .cpu = empty};
/* OpenMP task bodies make the same indirect call, so neither side's empty task is optimised away. */
static int (*volatile omp_body)(const rt_ctx *, void *) = empty;
#define OMP_BODY omp_body(NULL, NULL)

static void submit(rt_runtime *rt, int n, const rt_access *acc)
{
    rt_task_desc d = {.kind = &empty_kind, .naccess = n};
    for (int i = 0; i < n; i++)
        d.access[i] = acc[i];
    if (rt_submit(rt, &d)) {
        fprintf(stderr, "bench: %s\n", rt_error(rt));
        exit(1);
    }
}

/* Each DAG: a frugal version (submits into rt) and an OpenMP version; both return task counts. */
typedef struct dag {
    const char *name;
    long (*frugal)(rt_runtime *rt, rt_handle **h, int n);
    long (*omp)(char *cells, int n);
    int n;         /* size parameter */
    int handles;   /* handles the frugal version needs */
} dag;

static long independent_frugal(rt_runtime *rt, rt_handle **h, int n)
{
    (void)h;
    for (int i = 0; i < n; i++)
        submit(rt, 0, NULL);
    return n;
}
static long independent_omp(char *cells, int n)
{
    (void)cells;
    for (int i = 0; i < n; i++) {
#pragma omp task
        OMP_BODY;
    }
    return n;
}

enum { CHAINS = 16 };
static long chains_frugal(rt_runtime *rt, rt_handle **h, int n)
{
    for (int i = 0; i < n; i++)
        for (int c = 0; c < CHAINS; c++)
            submit(rt, 1, &(rt_access){h[c], RT_RW});
    return (long)n * CHAINS;
}
static long chains_omp(char *cells, int n)
{
    (void)cells;   /* used only in depend clauses, which -Wunused does not see */
    for (int i = 0; i < n; i++)
        for (int c = 0; c < CHAINS; c++) {
#pragma omp task depend(inout : cells[c])
            OMP_BODY;
        }
    return (long)n * CHAINS;
}

/* A binary tree of depth n: forks down (each node reads its parent), joins up. */
static long tree_frugal(rt_runtime *rt, rt_handle **h, int depth)
{
    long nodes = (1L << depth) - 1;
    submit(rt, 1, &(rt_access){h[0], RT_W});
    for (long i = 1; i < nodes; i++)
        submit(rt, 2, (rt_access[]){{h[(i - 1) / 2], RT_R}, {h[i], RT_W}});
    long inner = (1L << (depth - 1)) - 1;
    for (long i = inner - 1; i >= 0; i--)
        submit(rt, 3, (rt_access[]){{h[2 * i + 1], RT_R}, {h[2 * i + 2], RT_R}, {h[i], RT_RW}});
    return nodes + inner;
}
static long tree_omp(char *c, int depth)
{
    (void)c;
    long nodes = (1L << depth) - 1;
#pragma omp task depend(out : c[0])
    OMP_BODY;
    for (long i = 1; i < nodes; i++) {
#pragma omp task depend(in : c[(i - 1) / 2]) depend(out : c[i])
        OMP_BODY;
    }
    long inner = (1L << (depth - 1)) - 1;
    for (long i = inner - 1; i >= 0; i--) {
#pragma omp task depend(in : c[2 * i + 1], c[2 * i + 2]) depend(inout : c[i])
        OMP_BODY;
    }
    return nodes + inner;
}

/* An n x n grid: cell (i,j) needs (i-1,j) and (i,j-1). */
static long wavefront_frugal(rt_runtime *rt, rt_handle **h, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            rt_access a[3];
            int k = 0;
            if (i)
                a[k++] = (rt_access){h[(i - 1) * n + j], RT_R};
            if (j)
                a[k++] = (rt_access){h[i * n + j - 1], RT_R};
            a[k++] = (rt_access){h[i * n + j], RT_RW};
            submit(rt, k, a);
        }
    return (long)n * n;
}
static long wavefront_omp(char *c, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            char *self = &c[i * n + j], *up = i ? &c[(i - 1) * n + j] : self,
                 *left = j ? &c[i * n + j - 1] : self;
#pragma omp task depend(in : *up, *left) depend(inout : *self)
            OMP_BODY;
        }
    return (long)n * n;
}

/* One timed run of d on frugal's runtime, from the first submission to the end of the wait. */
static double run_frugal(const dag *d, long *ntasks, rt_stats *st)
{
    rt_runtime *rt = rt_create(&(rt_config){.workers = workers});
    char *cells = calloc((size_t)d->handles + 1, 1);
    rt_handle **h = malloc(sizeof *h * (size_t)(d->handles + 1));
    for (int i = 0; i < d->handles; i++)
        h[i] = rt_handle_register(rt, &cells[i], 1, "cell");
    rt_stats_reset(rt);
    double t0 = clock_now_s();
    *ntasks = d->frugal(rt, h, d->n);
    if (rt_wait_all(rt)) {
        fprintf(stderr, "bench: %s\n", rt_error(rt));
        exit(1);
    }
    double t = clock_now_s() - t0;
    rt_stats_get(rt, st);
    for (int i = 0; i < d->handles; i++)
        rt_handle_unregister(rt, h[i]);
    rt_destroy(rt);
    free(h);
    free(cells);
    return t;
}

static double run_omp(const dag *d, long *ntasks)
{
    char *cells = calloc((size_t)d->handles + 1, 1);
    double t0 = clock_now_s();
#pragma omp parallel num_threads(workers)
#pragma omp single
    {
        *ntasks = d->omp(cells, d->n);
#pragma omp taskwait
    }
    double t = clock_now_s() - t0;
    free(cells);
    return t;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Lowest, median and highest of n runs' rates. The median is the figure reported: this machine's
 * neighbours make single runs swing by 2x or more, libgomp's most of all, and the median of
 * alternating runs is what a user would typically see. */
typedef struct spread {
    double low, median, high;
} spread;

static spread spread_of(const double *x, int n)
{
    if (n == 0)
        return (spread){0, 0, 0};
    double s[REPEATS];
    memcpy(s, x, sizeof *x * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, by_value);
    return (spread){s[0], s[n / 2], s[n - 1]};
}

/* Lets the other side's threads (libgomp spins after a region) go quiet before timing. */
static void settle(void)
{
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* One traced wavefront run: what Perfetto shows of the runtime on this machine. */
static int write_trace(const char *path)
{
    rt_runtime *rt = rt_create(&(rt_config){.workers = workers, .trace = 1});
    int n = 128;
    char *cells = calloc((size_t)n * n, 1);
    rt_handle **h = malloc(sizeof *h * (size_t)n * n);
    for (int i = 0; i < n * n; i++)
        h[i] = rt_handle_register(rt, &cells[i], 1, "cell");
    wavefront_frugal(rt, h, n);
    int rc = rt_wait_all(rt);
    rt_stats st;
    rt_stats_get(rt, &st);
    rt_stats_print(&st, stdout);
    if (!rc && rt_trace_write(rt, path)) {
        perror(path);
        rc = 1;
    }
    for (int i = 0; i < n * n; i++)
        rt_handle_unregister(rt, h[i]);
    rt_destroy(rt);
    free(h);
    free(cells);
    if (!rc)
        printf("trace of %d tasks written to %s\n", n * n, path);
    return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "--trace")) {
        workers = argc > 3 ? atoi(argv[3]) : 2;
        return write_trace(argv[2]);
    }
    if (argc > 1)
        workers = atoi(argv[1]);
    if (argc > 2)
        scale = atoi(argv[2]);
    const char *only = argc > 3 ? argv[3] : "";   /* "frugal" or "omp": one side, for profiling */
    const char *just = argc > 4 ? argv[4] : NULL; /* one DAG by name */
    if (workers < 1 || scale < 1) {
        fprintf(stderr, "usage: bench_runtime [workers>=1] [scale>=1]\n");
        return 2;
    }
    int wave = 512 / scale, depth = 18 - (scale > 1 ? 3 : 0);
    dag dags[] = {
        {"independent", independent_frugal, independent_omp, 2000000 / scale, 0},
        {"chains", chains_frugal, chains_omp, 16384 / scale, CHAINS},
        {"forkjoin", tree_frugal, tree_omp, depth, (1 << depth) - 1},
        {"wavefront", wavefront_frugal, wavefront_omp, wave, wave * wave},
    };
    for (size_t i = 0; i < sizeof dags / sizeof dags[0]; i++) {
        if (just && strcmp(just, dags[i].name))
            continue;
        long nf = 0, no = 0;
        double rf[REPEATS], ro[REPEATS];
        int kf = 0, ko = 0;
        rt_stats st = {0}, fastest = {0};
        for (int rep = 0; rep < REPEATS; rep++) {   /* alternate sides */
            if (strcmp(only, "omp")) {
                settle();
                double t = run_frugal(&dags[i], &nf, &st);
                rf[kf] = (double)nf / t;
                if (kf == 0 || rf[kf] > spread_of(rf, kf).high)
                    fastest = st;
                kf++;
            }
            if (strcmp(only, "frugal")) {
                settle();
                double t = run_omp(&dags[i], &no);
                ro[ko++] = (double)no / t;
            }
        }
        spread f = spread_of(rf, kf), o = spread_of(ro, ko);
        printf("bench runtime %s workers=%d frugal_tasks_per_s=%.0f omp_tasks_per_s=%.0f "
               "ratio=%.2f\n", dags[i].name, workers, f.median, o.median,
               o.median > 0 ? f.median / o.median : 0);
        fprintf(stderr, "  %s, %d runs each: frugal %.2f-%.2f M/s, omp %.2f-%.2f M/s; "
                        "ratio of the best runs %.2f\n", dags[i].name, REPEATS, f.low / 1e6,
                f.high / 1e6, o.low / 1e6, o.high / 1e6, o.high > 0 ? f.high / o.high : 0);
        fprintf(stderr, "  frugal %s fastest run: %llu tasks, %llu steals, %llu parks\n",
                dags[i].name, (unsigned long long)fastest.tasks,
                (unsigned long long)fastest.steals, (unsigned long long)fastest.parks);
        fflush(stdout);
    }
    return 0;
}
