/* Structures shared by the runtime's files; not part of the public interface. */
#ifndef FRUGAL_RUNTIME_INTERNAL_H
#define FRUGAL_RUNTIME_INTERNAL_H

#include "deque.h"
#include "notifier.h"
#include "pool.h"
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


/* Two cache lines: what scheduling touches (exactly 64 bytes), then the arguments. A task goes
 * back to the pool as soon as it completes (or, if kept, once released too); handle histories
 * refer to it through a task_ref, which tells a reused task from the one it referred to. */
struct rt_task {
    const rt_kind *kind;
    _Atomic(rt_edge *) successors;
    _Atomic int npending;           /* unfinished predecessors, + PENDING_GUARD while linking */
    _Atomic int refs;               /* execution + the caller's, counted only when kept */
    uint32_t gen;                   /* owner only: bumped each time the pool hands it out */
    _Atomic int waited;             /* someone sleeps until this task is done */
    int nedges;                     /* owner only: edges from predecessors, own_edge first */
    signed char priority;
    signed char naccum;             /* RT_ACCUM accesses: their locks are held around the body */
    signed char kept;               /* submitted with rt_submit_kept */
    pthread_mutex_t **locks;        /* points into args, past the arguments, when naccum > 0 */
    /* The first edge into this task lives here rather than in the edge pool: the predecessor's
     * executor must touch this line anyway to decrement npending, so the edge costs no extra
     * cache miss. */
    rt_edge own_edge;
    _Alignas(64) unsigned char args[RT_MAX_ARGS];
};
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

/* The referred task may still be running or waiting: it is neither reused nor done. */
static inline int ref_unfinished(task_ref r)
{
    return r.task && r.task->gen == r.gen && !task_done(r.task);
}

/* A list of task references held by a handle (readers, accumulators). */
typedef struct task_list {
    int n, cap;
    task_ref *items;
    task_ref inline_items[2];
} task_list;

/* What only handles updated in RT_ACCUM mode need, allocated on the first such access: the open
 * group of commutative updates that produce the value, what they all depend on, and the lock
 * that lets one of them run at a time. */
typedef struct accum_group {
    task_list members;
    task_list base;
    pthread_mutex_t lock;
} accum_group;

/* Small, because a program may register one per tile of its data; the history comes first. */
struct rt_handle {
    /* Touched only by the submitting thread. The handle's current value is produced by `writer`,
     * or by the members of `accum`; `readers` have read it since. */
    task_ref writer;
    task_list readers;
    accum_group *accum;             /* NULL until the first RT_ACCUM access */
    void *ptr;
    size_t bytes;
    const char *name;
};

typedef struct trace_event {
    uint64_t start, end;
    int kind;
} trace_event;

typedef struct rt_worker {
    _Alignas(64) rt_runtime *rt;
    int id;
    rt_worker_kind kind;
    pthread_t thread;
    unsigned rng;
    deque queues[RT_PRIO_LEVELS];
    /* Tasks completed here (run or skipped): the owner sums these to know what is unfinished,
     * so no counter is shared by all workers. Written by this worker only. */
    _Alignas(64) _Atomic uint64_t completed;
    /* Statistics, written by this worker only, read racily by rt_stats_get. */
    _Atomic uint64_t tasks, steals, parks, busy_ticks;
    struct { _Atomic uint64_t count, ticks; } per_kind[RT_MAX_KINDS];
    trace_event *events;
    size_t nevents, capevents;
} rt_worker;

struct rt_runtime {
    /* Read by every worker on every task, written almost never. */
    int nworkers;
    int trace;
    rt_worker *workers;
    sleeper *sleepers;              /* one per worker, for the notifier */
    int64_t window;                 /* unfinished tasks beyond which the owner runs tasks */
    _Atomic int stop;
    _Atomic int failed;
    uint64_t stats_origin;          /* clock ticks at create or reset */
    uint64_t trace_origin;
    /* The owner's, on a line of its own: it writes `submitted` on every task. */
    _Alignas(64) uint64_t submitted;
    rt_task *const *waiting_for;    /* the owner's current wait (see wait_until) */
    int waiting_n;
    _Alignas(64) pool tasks;
    _Alignas(64) pool edges;
    notifier idle;
    pthread_mutex_t error_lock;
    char error[512];
};

/* scheduler.c */
int worker_self(const rt_runtime *rt);
const char *kind_name(int id);
void task_make_ready(rt_runtime *rt, int worker, rt_task *t);
int wait_tasks(rt_runtime *rt, rt_task *const *tasks, int n);
void runtime_set_error(rt_runtime *rt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* handle.c */
int handle_link(rt_runtime *rt, int worker, rt_task *t, const rt_access *a);
int task_add_edge(rt_runtime *rt, int worker, rt_task *pred, rt_task *succ);

/* stats.c */
void trace_record(rt_worker *w, int kind, uint64_t start, uint64_t end);

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
