/* frugal's task-DAG runtime: public interface.
 *
 * Sequential task flow: one thread (the one that created the runtime, "worker 0") submits tasks
 * in program order; each task names the data handles it touches and how. The runtime infers the
 * dependencies (read-after-write, write-after-read, write-after-write) from that order, runs
 * ready tasks on work-stealing workers, and times every task.
 *
 * Worker 0 is the calling thread: it runs tasks only while it waits (rt_wait_*), exactly as the
 * master thread of an OpenMP team does. rt_create(n) therefore starts n-1 CPU threads, plus one
 * thread per device.
 *
 * Data. A handle names a region of host memory: a buffer, or a part of one (rt_handle_part).
 * Devices have memories of their own; the runtime keeps track of which memories hold a valid
 * copy of each handle, copies data to the memory of the worker that runs a task before it runs
 * (asynchronously: the worker runs other tasks meanwhile), invalidates the other copies when a
 * task writes, and brings data back to the host when the host asks for it (rt_wait_handle,
 * rt_handle_acquire). A task body finds each access's data with rt_ptr (or rt_mem for devices
 * whose memory is not addressable from the host).
 */
#ifndef FRUGAL_RUNTIME_H
#define FRUGAL_RUNTIME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RT_MAX_ACCESS 8    /* handles one task may name */
#define RT_MAX_AFTER 4     /* explicit predecessors one task may name */
#define RT_MAX_ARGS 56     /* bytes of arguments copied into a task */
#define RT_PRIO_LEVELS 4   /* 0 = lowest ... 3 = most urgent (critical path) */
#define RT_MAX_KINDS 128   /* distinct task kinds per process */
#define RT_MAX_DEVICES 15  /* device workers per runtime; each has a memory of its own */
#define RT_MAX_MEMORIES (1 + RT_MAX_DEVICES)   /* memory 0 is the host's */

typedef struct rt_runtime rt_runtime;
typedef struct rt_handle rt_handle;
typedef struct rt_task rt_task;

typedef enum rt_mode {
    RT_R = 1,      /* reads */
    RT_W = 2,      /* overwrites without reading */
    RT_RW = 3,     /* reads and writes */
    RT_ACCUM = 4,  /* commutative update (e.g. += partial sum): any order, one at a time */
} rt_mode;

/* Kinds of worker, each with its own implementation of a task kind. */
typedef enum rt_worker_kind {
    RT_WORKER_CPU = 0,      /* a thread on a core, in host memory */
    RT_WORKER_OPENCL,       /* an OpenCL device's command queues (opencl/) */
    RT_WORKER_PEER,         /* another machine (netio/) */
    RT_WORKER_EMULATED,     /* a device emulated in host memory: tests of the runtime use it */
    RT_WORKER_KINDS
} rt_worker_kind;

const char *rt_worker_kind_name(rt_worker_kind k);

typedef struct rt_ctx {
    rt_runtime *rt;
    int worker;          /* index of the worker running the task */
    int memory;          /* the memory its data is in: 0 host, 1.. devices */
    rt_task *task;
} rt_ctx;

/* A task body returns 0 when done, RT_PENDING when it started work that completes later (the
 * runtime must then be told with rt_task_complete), or anything else after rt_fail() to end the
 * run with a message. */
#define RT_PENDING 1
typedef int (*rt_body_fn)(const rt_ctx *ctx, void *args);

/* What a task does: a name for traces and statistics, and an implementation per worker kind (a
 * task goes only to workers whose kind has one). Define kinds as static objects; the runtime
 * numbers them on first use. */
typedef struct rt_kind {
    const char *name;
    union {
        struct { rt_body_fn cpu, opencl, peer, emulated; };
        rt_body_fn impl[RT_WORKER_KINDS];
    };
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
    unsigned kinds;          /* 0: any worker kind with an implementation; else only these
                              * (RT_ON(RT_WORKER_OPENCL) | ...) */
    _Atomic int *claim;      /* NULL, or the claim on a unit of work this task belongs to */
} rt_task_desc;

/* Claims: a unit of work (several tasks) that someone outside the runtime (another machine) may
 * take instead. The first of its tasks to start takes an RT_CLAIM_OPEN claim for the runtime;
 * once it is RT_CLAIM_ELSEWHERE (set with compare-and-swap from OPEN), its tasks complete
 * without running and without touching their data: whoever took it delivers the results. */
enum { RT_CLAIM_OPEN = 0, RT_CLAIM_HERE = 1, RT_CLAIM_ELSEWHERE = 2 };

#define RT_ON(kind) (1u << (kind))

/* ---- devices ---- */

typedef struct rt_transfer rt_transfer;

/* One copy between host memory and a device's: rows of row_bytes, stride apart, starting offset
 * bytes into the host allocation and into the device allocation alike. */
typedef struct rt_copy {
    int to_device;           /* 1: host -> device, 0: device -> host */
    void *device_base;       /* what the memory's alloc returned */
    void *host_base;         /* the handle's allocation in host memory */
    size_t offset, rows, row_bytes, stride;
    rt_transfer *done;       /* hand to rt_transfer_done when the copy is complete */
} rt_copy;

/* How the runtime uses a device's memory. alloc returns an opaque base (a pointer, a cl_mem),
 * NULL when the memory is full. copy starts an asynchronous copy and returns 0, or -1 with a
 * message in err when it cannot start; either way it may complete at once by calling
 * rt_transfer_done before returning. */
typedef struct rt_memory_ops {
    void *(*alloc)(void *device, size_t bytes);
    void (*free)(void *device, void *base);
    int (*copy)(void *device, const rt_copy *c, char *err, size_t errlen);
    int addressable;         /* bases are host pointers: rt_ptr works on this memory */
} rt_memory_ops;

typedef struct rt_device {
    rt_worker_kind kind;     /* which implementation of a task kind it runs */
    const char *name;        /* for errors and statistics */
    const rt_memory_ops *memory;   /* NULL: it works in host memory (another machine's worker
                              * reads and writes host buffers through the network thread) */
    void *ctx;               /* the driver's, passed to the memory ops and rt_device_ctx */
    int host_cores;          /* > 0: it computes on that many of the host's own cores (an
                              * OpenCL CPU device), so its work is not extra capacity */
    /* Optional: completes the device's finished work (RT_PENDING tasks, transfers) from its
     * worker while it waits for work, sooner than the driver's callbacks; returns how many, and
     * in *in_flight how many are still running. */
    int (*poll)(void *ctx, int *in_flight);
    int spin;                /* with poll: its worker does not sleep while work runs there (a
                              * core given to it: a run that puts everything on the device) */
} rt_device;

#define RT_TRACE_MAX_EVENTS 1000000   /* about 80 MB of trace JSON */

typedef struct rt_config {
    int workers;             /* CPU workers, including the calling thread; 0 = number of CPUs */
    int trace;               /* keep every task's (worker, kind, start, end) for export */
    size_t trace_max_events; /* the trace's bound; 0: RT_TRACE_MAX_EVENTS */
    double slowdown;         /* > 1: emulate slower hardware, each CPU task body taking this
                              * many times its CPU time (spinning after it: time it was
                              * preempted is not stretched); 0 or 1: none */
    int ndevices;            /* each gets a worker thread and a memory of its own */
    rt_device devices[RT_MAX_DEVICES];
} rt_config;

typedef struct rt_kind_stats {
    const char *name;
    uint64_t count;
    double busy_s;
    uint64_t count_by[RT_WORKER_KINDS];   /* where they ran */
    double busy_by[RT_WORKER_KINDS];
} rt_kind_stats;

typedef struct rt_transfer_stats {
    uint64_t count, bytes;
    double seconds;          /* summed from start to completion */
} rt_transfer_stats;

typedef struct rt_stats {
    int workers;             /* CPU workers and device workers */
    int cpu_workers;         /* of them, those on the CPU */
    uint64_t tasks;          /* tasks completed */
    uint64_t steals;         /* tasks taken from another worker's deque */
    uint64_t parks;          /* times a worker went to sleep */
    uint64_t late_wakeups;   /* sleeps ended by the time limit with work waiting: lost wake-ups */
    uint64_t sleeps_in_flight;   /* a device worker went to sleep with work running on a device
                              * it spins for (rt_device.spin): its completion then waits for
                              * the driver's callback and a wake-up */
    double wall_s;           /* since rt_create or the last rt_stats_reset */
    double busy_s;           /* summed over CPU workers: time inside task bodies */
    double task_share;       /* busy_s / (active CPU workers x wall_s): parked time excluded */
    rt_transfer_stats to_device, to_host;
    int nkinds;
    rt_kind_stats kinds[RT_MAX_KINDS];
} rt_stats;

/* NULL for a configuration it refuses, out of memory or a thread that cannot start: then
 * nothing of it is left running or allocated. */
rt_runtime *rt_create(const rt_config *cfg);
void rt_destroy(rt_runtime *rt);          /* waits for all tasks first; NULL: nothing */
int rt_workers(const rt_runtime *rt);     /* CPU workers */
/* CPU workers allowed to run tasks (the owner always is); the others are parked: they hand
 * their queued tasks to active ones and sleep, using no CPU. Takes effect as each parked worker
 * finishes the task it runs. Clamped to 1 .. rt_workers(); returns the count set. From any
 * thread. */
int rt_set_active_workers(rt_runtime *rt, int n);
int rt_active_workers(const rt_runtime *rt);
/* Active CPU workers asleep now for want of tasks (the owner counts while it waits in the
 * runtime): a hint, from any thread, for whoever could give them work from elsewhere. */
int rt_idle_workers(rt_runtime *rt);
int rt_devices(const rt_runtime *rt);      /* device workers that compute here (not peers) */

/* ---- handles ---- */

/* Handles are registered and unregistered by the thread that created the runtime.
 *
 * A buffer of host memory, or a token with no data (ptr NULL, bytes 0). Returns NULL with
 * rt_error() set when it overlaps a registered buffer (two handles over the same bytes would
 * let tasks race on them) or memory runs out. */
rt_handle *rt_handle_register(rt_runtime *rt, void *ptr, size_t bytes, const char *name);
/* A part of a registered buffer: `rows` runs of `row_bytes` bytes, `stride` bytes apart, from
 * `offset` (one row for a contiguous part). Parts of one buffer may not overlap; a buffer with
 * parts is accessed through them, never as a whole. On a device, parts live at the same offsets
 * in one copy of the whole buffer. NULL with rt_error() set on a bad part. */
rt_handle *rt_handle_part(rt_runtime *rt, rt_handle *whole, size_t offset, size_t rows,
                          size_t row_bytes, size_t stride, const char *name);
/* Waits for the tasks touching it (and a buffer's parts first); the host copy stays. */
void rt_handle_unregister(rt_runtime *rt, rt_handle *h);
void *rt_handle_ptr(const rt_handle *h);  /* host address of its first byte */
size_t rt_handle_bytes(const rt_handle *h);   /* from the first byte to the last, inclusive */
const char *rt_handle_name(const rt_handle *h);

/* ---- tasks ---- */

/* Submit a task. Returns 0, or -1 with rt_error() set for a malformed description or a kind no
 * worker present can run. */
int rt_submit(rt_runtime *rt, const rt_task_desc *desc);
/* Same, and returns a reference usable in desc.after[] or rt_wait_task(); release it after. */
rt_task *rt_submit_kept(rt_runtime *rt, const rt_task_desc *desc);
void rt_task_release(rt_runtime *rt, rt_task *t);

/* Inside a body: access i's data in the memory of the worker running it (its first byte). */
void *rt_ptr(const rt_ctx *ctx, int i);
/* The same for memories that are not host-addressable: the allocation's base and the byte
 * offset of access i within it. */
void *rt_mem(const rt_ctx *ctx, int i, size_t *offset);
/* Inside a body on a device worker: the ctx its rt_device was registered with (NULL on a CPU). */
void *rt_device_ctx(const rt_ctx *ctx);

/* Tells the runtime that a body which returned RT_PENDING is done (failed: non-zero, with why).
 * Safe from any thread: an OpenCL event callback, a network thread. */
void rt_task_complete(rt_runtime *rt, rt_task *t, int failed, const char *why);
/* For memory drivers: a copy started by rt_memory_ops.copy is complete. Any thread. */
void rt_transfer_done(rt_transfer *x, int failed, const char *why);

/* Waiting runs tasks on the calling thread. Each returns 0, or -1 if a task failed. */
int rt_wait_all(rt_runtime *rt);
int rt_wait_task(rt_runtime *rt, rt_task *t);
/* RT_R: until the handle's last writers are done and its host copy is valid (safe to read);
 * RT_W/RT_RW: until every task submitted on it is done (safe to overwrite), and then the host
 * copy is the only valid one (the caller is about to change it). */
int rt_wait_handle(rt_runtime *rt, rt_handle *h, rt_mode mode);
/* rt_wait_handle, then the host address to use. */
void *rt_handle_acquire(rt_runtime *rt, rt_handle *h, rt_mode mode);

/* Inside a task body: record why it fails. Only the first failure is kept. */
void rt_fail(const rt_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *rt_error(const rt_runtime *rt);  /* "" when there is none */
void rt_clear_error(rt_runtime *rt);

/* The time models placement learned (a text line per task kind, worker kind and size), to keep
 * them between runs; load returns how many lines it took. No-ops without devices. */
int rt_placement_save(rt_runtime *rt, FILE *f);
int rt_placement_load(rt_runtime *rt, FILE *f);

/* What placement minimises where several groups of workers may run a task (StarPU dmda's
 * alpha, beta and gamma terms, with figures the caller calibrates). RT_PLACE_TIME (the default):
 * the expected finish time. RT_PLACE_ENERGY: the expected joules, the task's seconds on a group
 * times that group's power above idle, plus the machine's idle power for every second the
 * choice finishes later than the earliest choice would (idle devices still draw it).
 * RT_PLACE_EDP: those joules times the seconds until it finishes. max_slowdown (>= 0) rules out
 * groups finishing more than that fraction later (from now) than the earliest. */
typedef enum rt_place_objective { RT_PLACE_TIME, RT_PLACE_ENERGY, RT_PLACE_EDP } rt_place_objective;
typedef struct rt_energy_model {
    rt_place_objective objective;
    double active_w[RT_WORKER_KINDS];    /* per task running on a worker of that kind, above idle */
    double idle_w;
    double max_slowdown;                 /* < 0: none */
} rt_energy_model;
/* From any thread; a no-op without devices. */
void rt_set_placement_energy(rt_runtime *rt, const rt_energy_model *m);
/* Parks (1) or unparks (0) the devices: a task the CPU can run then runs there, and one only a
 * device can run still goes to it. A power budget's last resort. From any thread; a no-op
 * without devices. */
void rt_park_devices(rt_runtime *rt, int parked);

void rt_stats_get(rt_runtime *rt, rt_stats *out);
void rt_stats_reset(rt_runtime *rt);
void rt_stats_add(rt_stats *sum, const rt_stats *s);   /* e.g. epochs into a whole run */
/* Another runtime's work over the same span (a second engine on these cores): its tasks, busy
 * time and kinds are added; sum's span, workers and share of worker time stay. */
void rt_stats_add_work(rt_stats *sum, const rt_stats *s);
void rt_stats_print(const rt_stats *s, FILE *f);
/* Chrome trace JSON (chrome://tracing, Perfetto). Needs cfg.trace. Returns 0 or -1 (errno).
 * Events past cfg.trace_max_events are counted, not kept: otherData.events_dropped. */
int rt_trace_write(rt_runtime *rt, const char *path);
uint64_t rt_trace_dropped(rt_runtime *rt);
/* What the runtime does not see itself, on the same timeline (times: clock_now_s()), from any
 * thread; no-ops without cfg.trace. A named track of spans (its id, or -1 past 64 tracks): */
int rt_trace_track(rt_runtime *rt, const char *name);
void rt_trace_span(rt_runtime *rt, int track, const char *name, double start_s, double end_s);
/* A counter track per name (a sampler's power). */
void rt_trace_counter(rt_runtime *rt, const char *name, double t_s, double value);

#endif
