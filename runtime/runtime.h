/* frugal's task-DAG runtime: public interface.
 *
 * Sequential task flow: one thread (the one that created the runtime, "worker 0") submits tasks
 * in program order; each task names the data handles it touches and how. The runtime infers the
 * dependencies (read-after-write, write-after-read, write-after-write) from that order, runs
 * ready tasks on work-stealing workers, and times every task.
 *
 * Worker 0 is the calling thread: it runs tasks only while it waits (rt_wait_*), exactly as the
 * master thread of an OpenMP team does. rt_create(n) therefore starts n-1 threads.
 */
#ifndef FRUGAL_RUNTIME_H
#define FRUGAL_RUNTIME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RT_MAX_ACCESS 8    /* handles one task may name */
#define RT_MAX_AFTER 4     /* explicit predecessors one task may name */
#define RT_MAX_ARGS 64     /* bytes of arguments copied into a task (less 8 per RT_ACCUM) */
#define RT_PRIO_LEVELS 4   /* 0 = lowest ... 3 = most urgent (critical path) */
#define RT_MAX_KINDS 128   /* distinct task kinds per process */

typedef struct rt_runtime rt_runtime;
typedef struct rt_handle rt_handle;
typedef struct rt_task rt_task;

typedef enum rt_mode {
    RT_R = 1,      /* reads */
    RT_W = 2,      /* overwrites without reading */
    RT_RW = 3,     /* reads and writes */
    RT_ACCUM = 4,  /* commutative update (e.g. += partial sum): any order, one at a time */
} rt_mode;

/* Kinds of worker a task may have an implementation for. Only CPU exists today; a device worker
 * (OpenCL) or a remote machine adds an entry here and a field in rt_kind. */
typedef enum rt_worker_kind { RT_WORKER_CPU = 0, RT_WORKER_KINDS } rt_worker_kind;

typedef struct rt_ctx {
    rt_runtime *rt;
    int worker;          /* index of the worker running the task */
    rt_task *task;
} rt_ctx;

/* A task body. Returns 0, or non-zero after rt_fail() to end the run with a message. */
typedef int (*rt_cpu_fn)(const rt_ctx *ctx, void *args);

/* What a task does: a name for traces and statistics, and one implementation per worker kind.
 * Define kinds as static objects; the runtime numbers them on first use. */
typedef struct rt_kind {
    const char *name;
    rt_cpu_fn cpu;
    int id;              /* set by the runtime; leave 0 */
} rt_kind;

typedef struct rt_access {
    rt_handle *handle;
    rt_mode mode;
} rt_access;

typedef struct rt_task_desc {
    const rt_kind *kind;
    const void *args;        /* copied at submission */
    size_t args_size;        /* <= RT_MAX_ARGS */
    int priority;            /* 0 .. RT_PRIO_LEVELS-1; above 0, idle workers steal it at once
                              * even when it is alone (worth more than the cache it leaves) */
    int naccess;
    rt_access access[RT_MAX_ACCESS];   /* each handle at most once */
    int nafter;              /* explicit edges, for orderings no handle expresses */
    rt_task *after[RT_MAX_AFTER];
} rt_task_desc;

typedef struct rt_config {
    int workers;             /* total, including the calling thread; 0 = number of CPUs */
    int trace;               /* keep every task's (worker, kind, start, end) for export */
} rt_config;

typedef struct rt_kind_stats {
    const char *name;
    uint64_t count;
    double busy_s;
} rt_kind_stats;

typedef struct rt_stats {
    int workers;
    uint64_t tasks;          /* tasks completed */
    uint64_t steals;         /* tasks taken from another worker's deque */
    uint64_t parks;          /* times a worker went to sleep */
    double wall_s;           /* since rt_create or the last rt_stats_reset */
    double busy_s;           /* summed over workers: time inside task bodies */
    double task_share;       /* busy_s / (workers * wall_s) */
    int nkinds;
    rt_kind_stats kinds[RT_MAX_KINDS];
} rt_stats;

rt_runtime *rt_create(const rt_config *cfg);
void rt_destroy(rt_runtime *rt);          /* waits for all tasks first */
int rt_workers(const rt_runtime *rt);

rt_handle *rt_handle_register(rt_runtime *rt, void *ptr, size_t bytes, const char *name);
void rt_handle_unregister(rt_runtime *rt, rt_handle *h); /* waits for the tasks touching it */
void *rt_handle_ptr(const rt_handle *h);
size_t rt_handle_bytes(const rt_handle *h);

/* Submit a task. Returns 0, or -1 with rt_error() set for a malformed description. */
int rt_submit(rt_runtime *rt, const rt_task_desc *desc);
/* Same, and returns a reference usable in desc.after[] or rt_wait_task(); release it after. */
rt_task *rt_submit_kept(rt_runtime *rt, const rt_task_desc *desc);
void rt_task_release(rt_runtime *rt, rt_task *t);

/* Waiting runs tasks on the calling thread. Each returns 0, or -1 if a task failed. */
int rt_wait_all(rt_runtime *rt);
int rt_wait_task(rt_runtime *rt, rt_task *t);
/* RT_R: until the handle's last writers are done (safe to read); RT_W/RT_RW: until every task
 * submitted on it is done (safe to overwrite). */
int rt_wait_handle(rt_runtime *rt, rt_handle *h, rt_mode mode);

/* Inside a task body: record why it fails. Only the first failure is kept. */
void rt_fail(const rt_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *rt_error(const rt_runtime *rt);  /* "" when there is none */
void rt_clear_error(rt_runtime *rt);

void rt_stats_get(rt_runtime *rt, rt_stats *out);
void rt_stats_reset(rt_runtime *rt);
void rt_stats_print(const rt_stats *s, FILE *f);
/* Chrome trace JSON (chrome://tracing, Perfetto). Needs cfg.trace. Returns 0 or -1 (errno). */
int rt_trace_write(rt_runtime *rt, const char *path);

#endif
