/* Runtime overhead benchmark: the same DAGs of empty tasks on frugal's runtime and as OpenMP
 * tasks with depend clauses (libgomp), in one invocation: REPEATS runs of each side, alternating.
 * Prints one line per DAG with each side's median run,
 *   bench runtime DAG workers=W frugal_tasks_per_s=N omp_tasks_per_s=N ratio=X
 * and on stderr the ranges and the ratio of the best runs.
 * Then what the runtime adds to each hop of a chain of device tasks (a GPU's kernels one
 * after another) over the device's own time, the device faked: a task's commands take
 * device_us, then complete either when the device's worker polls (it spins while they run, as
 * with `devices = opencl`) or from a driver's thread that sleeps until then (the callbacks; the
 * worker sleeps too):
 *   bench runtime device_hop completion=poll|callback device_us=D hop_us=H over_us=O
 * Usage: bench_runtime [workers] [scale] [frugal|omp|both] [DAG]
 *        bench_runtime --trace FILE [workers]   one wavefront run, its Chrome trace to FILE */
#include "common/clock.h"
#include "runtime/runtime.h"

#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/prctl.h>
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

/* ---- device hops ---- */

/* A fake device running one task at a time: its commands end device_us after the body
 * launched them. */
typedef struct fake_device {
    rt_runtime *rt;
    rt_task *_Atomic running;
    _Atomic double ends;     /* clock_now_s() */
    double device_s;
    int callbacks;           /* completions from the driver's thread, not from polls */
    _Atomic int stop;
    pthread_mutex_t lock;
    pthread_cond_t launched;
} fake_device;

static fake_device fake;

static void fake_complete(void)
{
    rt_task *t = atomic_exchange(&fake.running, NULL);
    if (t)
        rt_task_complete(fake.rt, t, 0, NULL);
}

static int fake_poll(void *ctx, int *in_flight)
{
    (void)ctx;
    *in_flight = atomic_load(&fake.running) != NULL;
    if (fake.callbacks || !*in_flight || clock_now_s() < atomic_load(&fake.ends))
        return 0;
    fake_complete();
    *in_flight = 0;
    return 1;
}

/* The driver's thread: asleep until the running task's commands end, then its callback. */
static void *fake_driver(void *arg)
{
    (void)arg;
    prctl(PR_SET_TIMERSLACK, 1UL);   /* wakes when asked, not up to 50 us later */
    pthread_mutex_lock(&fake.lock);
    while (!atomic_load(&fake.stop)) {
        if (!atomic_load(&fake.running)) {
            pthread_cond_wait(&fake.launched, &fake.lock);
            continue;
        }
        double wait = atomic_load(&fake.ends) - clock_now_s();
        if (wait > 0) {
            pthread_mutex_unlock(&fake.lock);
            nanosleep(&(struct timespec){0, (long)(wait * 1e9)}, NULL);
            pthread_mutex_lock(&fake.lock);
        }
        fake_complete();
    }
    pthread_mutex_unlock(&fake.lock);
    return NULL;
}

static int fake_launch(const rt_ctx *ctx, void *args)
{
    (void)args;
    atomic_store(&fake.ends, clock_now_s() + fake.device_s);
    pthread_mutex_lock(&fake.lock);
    atomic_store(&fake.running, ctx->task);
    pthread_cond_signal(&fake.launched);
    pthread_mutex_unlock(&fake.lock);
    return RT_PENDING;
}
static rt_kind fake_kind = {.name = "fake_kernel", .emulated = fake_launch};

/* The median time a hop takes in chains of n tasks on the fake device, 5 runs. */
static double device_hop_s(int callbacks, double device_s, int n)
{
    fake = (fake_device){.device_s = device_s, .callbacks = callbacks};
    pthread_mutex_init(&fake.lock, NULL);
    pthread_cond_init(&fake.launched, NULL);
    rt_config cfg = {.workers = workers, .ndevices = 1};
    cfg.devices[0] = (rt_device){RT_WORKER_EMULATED, "fake", NULL, NULL, 0, fake_poll, !callbacks};
    rt_runtime *rt = fake.rt = rt_create(&cfg);
    pthread_t driver;
    if (!rt || (callbacks && pthread_create(&driver, NULL, fake_driver, NULL))) {
        fprintf(stderr, "bench: cannot start the runtime or the fake driver\n");
        exit(1);
    }
    char cell = 0;
    rt_handle *h = rt_handle_register(rt, &cell, 1, "cell");
    double hop[5];
    for (int rep = 0; rep < 5; rep++) {
        double t0 = clock_now_s();
        for (int i = 0; i < n; i++)
            if (rt_submit(rt, &(rt_task_desc){.kind = &fake_kind, .naccess = 1,
                                              .access = {{h, RT_RW}}})) {
                fprintf(stderr, "bench: %s\n", rt_error(rt));
                exit(1);
            }
        rt_wait_all(rt);
        hop[rep] = (clock_now_s() - t0) / n;
    }
    rt_handle_unregister(rt, h);
    rt_destroy(rt);
    pthread_mutex_lock(&fake.lock);
    atomic_store(&fake.stop, 1);
    pthread_cond_signal(&fake.launched);
    pthread_mutex_unlock(&fake.lock);
    if (callbacks)
        pthread_join(driver, NULL);
    pthread_cond_destroy(&fake.launched);
    pthread_mutex_destroy(&fake.lock);
    qsort(hop, 5, sizeof *hop, by_value);
    return hop[2];
}

static void device_hops(void)
{
    static const double device_us[] = {0, 20, 200};
    for (int callbacks = 0; callbacks < 2; callbacks++)
        for (int i = 0; i < 3; i++) {
            double hop = device_hop_s(callbacks, device_us[i] * 1e-6, 2000 / scale);
            printf("bench runtime device_hop completion=%s device_us=%.0f hop_us=%.2f "
                   "over_us=%.2f\n", callbacks ? "callback" : "poll", device_us[i], hop * 1e6,
                   hop * 1e6 - device_us[i]);
            fflush(stdout);
        }
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
    if (!just || !strcmp(just, "device_hop"))
        device_hops();
    return 0;
}
