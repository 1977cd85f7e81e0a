/* Structures shared by the runtime's files; not part of the public interface. */
#ifndef FRUGAL_RUNTIME_INTERNAL_H
#define FRUGAL_RUNTIME_INTERNAL_H

#include "deque.h"
#include "notifier.h"
#include "pool.h"
#include "region.h"
#include "runtime.h"

#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

/* A successor edge; a task's list of them is closed (set to EDGES_CLOSED) when it completes, so a
 * late submitter sees the predecessor is done and adds no edge. */
typedef struct rt_edge {
    struct rt_edge *next;
    rt_task *succ;
} rt_edge;
#define EDGES_CLOSED ((rt_edge *)1)

/* An access as the task keeps it: the handle's address with the mode in its low bits. */
typedef uintptr_t packed_access;
#define ACCESS_MODE_MASK ((uintptr_t)7)
static inline rt_handle *access_handle(packed_access a) { return (rt_handle *)(a & ~ACCESS_MODE_MASK); }
static inline rt_mode access_mode(packed_access a) { return (rt_mode)(a & ACCESS_MODE_MASK); }

/* Three cache lines: what scheduling touches (exactly 64 bytes), the arguments, the accesses. A
 * task goes back to the pool as soon as it completes (or, if kept, once released too); handle
 * histories refer to it through a task_ref, which tells a reused task from the one it referred
 * to. Once a task is ready, its predecessors are done with its pending count and its first edge:
 * the pending count then counts the copies of its data it waits for (coherence.c), and the
 * edge's room holds its place in an inbox and when its body started. */
struct rt_task {
    const rt_kind *kind;
    _Atomic(rt_edge *) successors;
    _Atomic int npending;           /* unfinished predecessors, + PENDING_GUARD while linking;
                                     * once ready: copies still to arrive */
    _Atomic int refs;               /* execution + the caller's, counted only when kept */
    uint32_t gen;                   /* owner only: bumped each time the pool hands it out */
    _Atomic int waited;             /* someone sleeps until this task is done */
    int nedges;                     /* owner only: edges from predecessors, own_edge first */
    signed char priority;
    signed char naccum;             /* RT_ACCUM accesses: one such task at a time per handle */
    signed char kept;               /* submitted with rt_submit_kept */
    signed char naccess;
    unsigned char eligible;         /* worker kinds that may run it: a bit per rt_worker_kind */
    unsigned char holds_accum;      /* it owns its RT_ACCUM handles' exclusion tokens */
    uint16_t worker;                /* who took it */
    union {
        /* The first edge into this task lives here rather than in the edge pool: the
         * predecessor's executor must touch this line anyway to decrement npending, so the edge
         * costs no extra cache miss. It reads the edge before that decrement. */
        rt_edge own_edge;
        struct {
            _Atomic(rt_task *) next;   /* in a worker's inbox, or waiting for a token */
            uint64_t start;            /* when its body started, for one completing later */
        } ready;
    };
    _Alignas(64) unsigned char args[RT_MAX_ARGS];
    _Atomic int *claim;             /* rt_task_desc.claim */
    _Alignas(64) packed_access access[RT_MAX_ACCESS];
};
_Static_assert(sizeof(struct rt_task) == 192, "a task is three cache lines");
_Static_assert(offsetof(struct rt_task, args) == 64, "task header must fit one cache line");

/* While a task is being linked its pending count is this much too high, so that predecessors
 * finishing meanwhile cannot make it ready; the owner takes the guard back, less the edges it
 * added, in one atomic step at the end (see submit). */
#define PENDING_GUARD (1 << 30)

/* A task is done once its successor list is closed. */
static inline int task_done(rt_task *t)
{
    return atomic_load_explicit(&t->successors, memory_order_seq_cst) == EDGES_CLOSED;
}

/* A reference from a handle's history, read by the owner only. The pool never gives task memory
 * back to the system and only the owner takes tasks from it, so the referred memory stays
 * readable: a task that completed reads as done until the owner reuses it, and from then on its
 * gen differs. (After 2^32 reuses a stale reference could match again; the cost is one needless
 * edge to an earlier task, never a wrong result.) */
typedef struct task_ref {
    rt_task *task;
    uint32_t gen;
} task_ref;

static inline task_ref ref_to(rt_task *t) { return (task_ref){t, t->gen}; }

/* The writer of a buffer that has parts: it is used through them, never as a whole. Kept where
 * linking a task looks anyway, so checking costs nothing. */
#define HAS_PARTS ((rt_task *)2)

/* The referred task may still be running or waiting: it is neither reused nor done. */
static inline int ref_unfinished(task_ref r)
{
    return r.task && r.task != HAS_PARTS && r.task->gen == r.gen && !task_done(r.task);
}

/* A list of task references held by a handle (readers, accumulators). */
typedef struct task_list {
    int n, cap;
    task_ref *items;
    task_ref inline_items[2];
} task_list;

/* What only handles updated in RT_ACCUM mode need, allocated on the first such access: the open
 * group of commutative updates that produce the value, what they all depend on, and the token
 * that lets one of them run at a time (a task that cannot take it waits in `parked`, and its
 * worker runs something else). */
typedef struct accum_group {
    task_list members;
    task_list base;
    pthread_mutex_t lock;
    int busy;                       /* under lock: a task holds the token */
    rt_task *parked;                /* under lock: tasks waiting for it, linked through next */
} accum_group;

/* Per-memory state of a handle, on runtimes with devices (NULL otherwise). Under lock: which
 * memories are being filled, and the tasks waiting for each. */
typedef struct coherence {
    pthread_mutex_t lock;
    uint32_t fetching;
    int host_waits;                 /* the owner waits for the host copy (rt_wait_handle) */
    rt_task *waiters[RT_MAX_MEMORIES];   /* linked through next */
    void *replica[RT_MAX_MEMORIES]; /* buffers only: the copy in each device memory */
} coherence;

/* What only some handles need: a buffer's parts, and on a runtime with devices which memories
 * hold the current value (bit m for memory m) and the copies under way. */
typedef struct handle_info {
    struct rt_handle **parts;
    int nparts;
    _Atomic uint32_t valid;
    coherence *coh;
} handle_info;

/* Two cache lines (handles are allocated aligned), because a program may register one per tile
 * of its data: the history, which is all that linking and waiting read, then the rest. */
struct rt_handle {
    /* Touched only by the submitting thread. The handle's current value is produced by `writer`,
     * or by the members of `accum`; `readers` have read it since. */
    task_ref writer;
    task_list readers;
    accum_group *accum;             /* NULL until the first RT_ACCUM access */
    /* The bytes: a region of the buffer `whole` (itself for a registered buffer). */
    region reg;
    rt_handle *whole;
    const char *name;
    handle_info *info;              /* NULL until needed */
};
_Static_assert(offsetof(struct rt_handle, accum) == 64, "the history must fill one cache line");
_Static_assert(sizeof(struct rt_handle) == 128, "a handle is two cache lines");

static inline int handle_nparts(const rt_handle *h) { return h->info ? h->info->nparts : 0; }
/* Where its bytes start in its buffer (in every memory alike). */
static inline size_t handle_offset(const rt_handle *h) { return h->reg.start - h->whole->reg.start; }

typedef struct trace_event {
    uint64_t start, end;
    int kind;
    int worker;                     /* in the runtime's list of tasks that completed later */
} trace_event;

/* Foreign threads (device completions) push tasks here; the worker drains it into its deques. */
typedef struct inbox {
    _Alignas(64) _Atomic(rt_task *) head;
} inbox;

/* The workers of one kind: they steal from each other and sleep on one notifier. */
typedef struct worker_group {
    rt_worker_kind kind;
    int first, n;                   /* workers [first, first + n) */
    notifier idle;
    sleeper *sleepers;
    _Atomic unsigned next_target;   /* round robin for tasks handed to the group */
} worker_group;

typedef struct rt_worker {
    _Alignas(64) rt_runtime *rt;
    int id;
    rt_worker_kind kind;
    int memory;                     /* 0: host (CPU workers, devices working in host memory);
                                     * else a device worker's own memory */
    int device;                     /* index in the config's devices, or -1 */
    worker_group *group;
    int slot;                       /* index within the group (its sleeper) */
    pthread_t thread;
    unsigned rng;
    deque queues[RT_PRIO_LEVELS];
    inbox in;
    /* Tasks completed here (run or skipped): the owner sums these to know what is unfinished,
     * so no counter is shared by all workers. Written by this worker only. */
    _Alignas(64) _Atomic uint64_t completed;
    /* Statistics, written by this worker only, read racily by rt_stats_get. */
    _Atomic uint64_t tasks, steals, parks, busy_ticks;
    _Atomic uint64_t late_wakeups;  /* woken by the sleep limit with a task handed to it */
    _Atomic uint64_t sleeps_in_flight;   /* a device's worker slept with its work running */
    struct { _Atomic uint64_t count, ticks; } per_kind[RT_MAX_KINDS];
    trace_event *events;
    size_t nevents, capevents;
} rt_worker;

/* The device a device worker drives (w->device >= 0). */
#define WORKER_DEVICE(rt, w) (&(rt)->memories[1 + (w)->device].dev)

typedef struct placement placement;   /* placement.c */

/* A memory other than the host's: a device's. */
typedef struct memory_node {
    rt_device dev;
} memory_node;

struct rt_runtime {
    /* Read by every worker on every task, written almost never. */
    int nworkers;                   /* CPU workers then device workers */
    int ncpu;
    int nmemories;                  /* 1: host only, no coherence to keep */
    unsigned kinds_present;         /* bit per rt_worker_kind */
    int trace;
    double slowdown;                /* rt_config's, 1 when none */
    double slowdown_ticks_per_s;    /* with a slowdown: clock_ticks a second, and what reading */
    double slowdown_clock_s;        /* a thread's CPU clock adds to a difference (scheduler.c) */
    rt_worker *workers;
    worker_group groups[RT_WORKER_KINDS];
    int ngroups;
    worker_group *group_of_kind[RT_WORKER_KINDS];
    memory_node memories[RT_MAX_MEMORIES];
    int64_t window;                 /* unfinished tasks beyond which the owner runs tasks */
    _Atomic int stop;
    _Atomic int failed;
    uint64_t stats_origin;          /* clock ticks at create or reset */
    pthread_mutex_t active_lock;    /* the active worker count may change from any thread */
    uint64_t active_since;          /* when the active CPU worker count last changed */
    double active_ticks;            /* CPU worker-ticks active from stats_origin to active_since */
    uint64_t trace_origin;
    double trace_origin_s;          /* clock_now_s() then */
    size_t trace_cap;               /* events each worker, the late list and the extras keep */
    _Atomic uint64_t trace_dropped; /* events past the cap (or past memory) */
    struct trace_extra *extra;      /* the caller's tracks, spans and counters (trace.c) */
    /* The owner's, on a line of its own: it writes `submitted` on every task. */
    _Alignas(64) uint64_t submitted;
    rt_task *const *waiting_for;    /* the owner's current wait (see wait_until) */
    int waiting_n;
    rt_handle *waiting_handle;      /* or the host copy of this handle */
    region_index buffers;           /* registered buffers, for the overlap check */
    placement *placement;           /* with several groups: where tasks several may run go */
    _Alignas(64) _Atomic uint64_t completed_elsewhere;   /* by threads that are not workers */
    /* Threads inside rt_task_complete or rt_transfer_done: they may touch the runtime after
     * publishing what they completed, so rt_destroy waits for them to leave. */
    _Atomic int completing;
    struct {
        _Atomic uint64_t count, bytes, ticks;
    } transfers[2];                 /* [0] to the host, [1] to a device */
    /* Tasks that completed after their body returned (RT_PENDING), counted by whichever thread
     * completed them, from the start of the body to the completion. */
    struct { _Atomic uint64_t count, ticks; } late[RT_WORKER_KINDS][RT_MAX_KINDS];
    pthread_mutex_t trace_lock;
    trace_event *late_events;
    size_t nlate, caplate;
    _Alignas(64) pool tasks;
    _Alignas(64) pool edges;
    _Alignas(64) pool handles;      /* the owner's only: handles are registered by it */
    pthread_mutex_t error_lock;
    char error[512];
};

/* scheduler.c */
int rt_worker_self(const rt_runtime *rt);
const char *rt_kind_name(int id);
void rt_task_make_ready(rt_runtime *rt, int worker, rt_task *t);
void rt_task_hand_to(rt_runtime *rt, int worker, rt_task *t);
int rt_wait_tasks(rt_runtime *rt, rt_task *const *tasks, int n);
int rt_wait_host_copy(rt_runtime *rt, rt_handle *h);
void rt_owner_wake(rt_runtime *rt);
void rt_set_error(rt_runtime *rt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* handle.c */
int handle_link(rt_runtime *rt, int worker, rt_task *t, const rt_access *a);
int rt_task_add_edge(rt_runtime *rt, int worker, rt_task *pred, rt_task *succ);

/* exclusion.c: one RT_ACCUM task at a time per handle */
int rt_accum_acquire(rt_runtime *rt, rt_task *t);      /* 1: holds every token; 0: parked, handed back later */
void rt_accum_release(rt_runtime *rt, rt_task *t);

/* coherence.c */
int coherence_attach(rt_runtime *rt, rt_handle *h);
void coherence_detach(rt_runtime *rt, rt_handle *h);
/* 1: t's data is in memory m, it may run; 0: copies are under way and t is handed back to its
 * worker when they complete; -1: failed (error set). */
int rt_data_prepare(rt_runtime *rt, rt_task *t);
void rt_data_written(rt_runtime *rt, rt_task *t);   /* after t ran: its writes are in its memory */
/* Starts bringing h's current value to the host; returns 1 if it is there already. */
int rt_host_copy_request(rt_runtime *rt, rt_handle *h);
void rt_host_copy_received(rt_handle *h);      /* the owner saw the copy it asked for arrive */
void *rt_replica_base(rt_handle *h, int memory);

/* placement.c (only with more than one group of workers) */
int placement_create(rt_runtime *rt);
void placement_destroy(rt_runtime *rt);
worker_group *placement_choose(rt_runtime *rt, rt_task *t);
void placement_learn(rt_runtime *rt, const rt_task *t, rt_worker_kind where, double seconds);
void placement_copy_measured(rt_runtime *rt, int memory, double bytes, double seconds);

/* trace.c */
typedef struct trace_extra trace_extra;
int trace_init(rt_runtime *rt, const rt_config *cfg);
void trace_free(rt_runtime *rt);
void trace_record(rt_worker *w, int kind, uint64_t start, uint64_t end);
void trace_record_late(rt_runtime *rt, int worker, int kind, uint64_t start, uint64_t end);
/* Copies get trace tracks of their own, two per device memory after the workers' tracks. */
enum { TRACE_COPY_IN = -1, TRACE_COPY_OUT = -2 };
static inline int trace_copy_track(const rt_runtime *rt, int memory, int to_device)
{
    return rt->nworkers + 2 * (memory - 1) + !to_device;
}

static inline void bump(_Atomic uint64_t *counter, uint64_t by)
{
    /* Only the owning worker writes its counters: a plain add, published for racy readers. */
    atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + by,
                          memory_order_relaxed);
}

/* Called for every task: inline, and the trace only when asked for. */
static inline void stats_record(rt_worker *w, const rt_task *t, uint64_t start, uint64_t end)
{
    int k = t->kind->id;
    bump(&w->tasks, 1);
    bump(&w->busy_ticks, end - start);
    bump(&w->per_kind[k].count, 1);
    bump(&w->per_kind[k].ticks, end - start);
    if (w->rt->trace)
        trace_record(w, k, start, end);
}

#endif
