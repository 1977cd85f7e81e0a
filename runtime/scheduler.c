/* Workers, submission, execution and waiting.
 *
 * Workers come in groups by kind: the CPU workers (the calling thread first), then a worker per
 * device. Each worker owns one deque per priority level (deque.h). A task made ready goes to the
 * deque of the worker that made it ready when that worker's kind can run it (its data is likely
 * in that core's cache), else to the inbox of a worker of a kind that can; idle workers steal
 * batches from random victims of their own group, most urgent level first, and sleep
 * (notifier.h) when nothing is left.
 *
 * A body that starts work elsewhere (a device kernel, a message) returns RT_PENDING and the task
 * completes when rt_task_complete is called, from any thread; its successors then go to inboxes,
 * since only a worker may push onto its own deques. */
#include "common/clock.h"
#include "internal.h"

#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define IDLE_SPIN_S 200e-6      /* how long an idle worker looks for work before it sleeps */
#define LONE_TASK_WAIT_S 20e-6  /* after which an idle worker steals a single queued task */

enum {
    STEAL_BACKLOG = 16,      /* queued tasks that make a victim worth a batch steal */
    THROTTLE_QUEUED = 256,  /* ready tasks the owner may queue before it starts running them */
    SPIN_PAUSES_MAX = 64,   /* pauses between looks for work, once a spinning thief backs off */
    WINDOW_BASE = 2048,     /* unfinished tasks allowed: WINDOW_BASE + WINDOW_PER_WORKER * n */
    WINDOW_PER_WORKER = 512,
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static _Thread_local rt_runtime *tl_runtime;
static _Thread_local int tl_worker;
static _Atomic int next_kind_id = 1;
static const rt_kind *_Atomic kinds_by_id[RT_MAX_KINDS];
static _Atomic unsigned char impl_mask[RT_MAX_KINDS];   /* worker kinds with an implementation */

const char *rt_kind_name(int id)
{
    const rt_kind *k = atomic_load(&kinds_by_id[id]);
    return k && k->name ? k->name : "?";
}

const char *rt_worker_kind_name(rt_worker_kind k)
{
    static const char *const names[RT_WORKER_KINDS] = {"cpu", "opencl", "peer", "emulated"};
    return (unsigned)k < RT_WORKER_KINDS ? names[k] : "?";
}

int rt_worker_self(const rt_runtime *rt)
{
    return tl_runtime == rt ? tl_worker : -1;
}

void rt_set_error(rt_runtime *rt, const char *fmt, ...)
{
    pthread_mutex_lock(&rt->error_lock);
    if (!rt->error[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(rt->error, sizeof rt->error, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&rt->error_lock);
    atomic_store(&rt->failed, 1);
}

void rt_fail(const rt_ctx *ctx, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const rt_worker *w = &ctx->rt->workers[ctx->worker];
    if (w->device >= 0)
        rt_set_error(ctx->rt, "task '%s' failed on device %s: %s", ctx->task->kind->name,
                          WORKER_DEVICE(ctx->rt, w)->name, msg);
    else
        rt_set_error(ctx->rt, "task '%s' failed on worker %d: %s", ctx->task->kind->name,
                          ctx->worker, msg);
}

const char *rt_error(const rt_runtime *rt) { return rt->error; }

void rt_clear_error(rt_runtime *rt)
{
    pthread_mutex_lock(&rt->error_lock);
    rt->error[0] = 0;
    pthread_mutex_unlock(&rt->error_lock);
    atomic_store(&rt->failed, 0);
}

int rt_workers(const rt_runtime *rt) { return rt->ncpu; }

int rt_active_workers(const rt_runtime *rt)
{
    return atomic_load(&((rt_runtime *)rt)->groups[0].idle.active);
}

int rt_idle_workers(rt_runtime *rt)
{
    return notifier_asleep(&rt->groups[0].idle);
}

int rt_set_active_workers(rt_runtime *rt, int n)
{
    worker_group *cpu = &rt->groups[0];   /* the CPU group comes first */
    pthread_mutex_lock(&rt->active_lock);
    int was = atomic_load(&cpu->idle.active);
    uint64_t now_ticks = clock_ticks();
    rt->active_ticks += (double)(now_ticks - rt->active_since) * was;
    rt->active_since = now_ticks;
    notifier_set_active(&cpu->idle, n);
    int now = atomic_load(&cpu->idle.active);
    pthread_mutex_unlock(&rt->active_lock);
    for (int slot = was; slot < now; slot++)   /* back to work */
        rt_notify_worker(&cpu->idle, slot);
    return now;
}

void *rt_device_ctx(const rt_ctx *ctx)
{
    const rt_worker *w = &ctx->rt->workers[ctx->worker];
    return w->device >= 0 ? WORKER_DEVICE(ctx->rt, w)->ctx : NULL;
}
int rt_devices(const rt_runtime *rt)
{
    const worker_group *peers = rt->group_of_kind[RT_WORKER_PEER];
    return rt->nworkers - rt->ncpu - (peers ? peers->n : 0);
}

/* Frees a task or an edge from whichever thread completes it. */
static void free_to(pool *p, int worker, void *obj)
{
    if (worker >= 0)
        pool_free(p, worker, obj);
    else
        pool_free_shared(p, obj);
}

static void task_release_on(rt_runtime *rt, int worker, rt_task *t)
{
    if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) == 1)
        free_to(&rt->tasks, worker, t);
}

void rt_task_release(rt_runtime *rt, rt_task *t)
{
    if (t)
        task_release_on(rt, rt_worker_self(rt), t);
}

/* A queue that cannot grow leaves a ready task nowhere to go: nothing sensible remains. */
static void push_or_die(deque *q, rt_task *t)
{
    if (deque_push(q, t)) {
        fprintf(stderr, "frugal runtime: out of memory growing a task queue\n");
        abort();
    }
}

/* ---- inboxes: tasks handed to a worker by other threads ---- */

void rt_task_hand_to(rt_runtime *rt, int worker, rt_task *t)
{
    rt_worker *w = &rt->workers[worker];
    rt_task *head = atomic_load_explicit(&w->in.head, memory_order_relaxed);
    do
        atomic_store_explicit(&t->ready.next, head, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&w->in.head, &head, t, memory_order_release,
                                                  memory_order_relaxed));
    rt_notify_worker(&w->group->idle, w->slot);
}

void rt_owner_wake(rt_runtime *rt)
{
    rt_notify_worker(&rt->groups[0].idle, 0);   /* the CPU group comes first; the owner is its 0 */
}

/* The owner of the inbox moves what arrived into its deques. */
static void drain_inbox(rt_worker *me)
{
    if (!atomic_load_explicit(&me->in.head, memory_order_relaxed))
        return;
    rt_task *t = atomic_exchange_explicit(&me->in.head, NULL, memory_order_acquire);
    while (t) {
        rt_task *next = atomic_load_explicit(&t->ready.next, memory_order_relaxed);
        push_or_die(&me->queues[t->priority], t);
        t = next;
    }
}

/* ---- placement ---- */

static inline int can_run(const rt_worker *w, const rt_task *t)
{
    return (t->eligible >> w->kind) & 1;
}

/* A worker of group g that is not parked, in turn (the owner last: it runs tasks only while it
 * waits). */
static int worker_in(worker_group *g)
{
    unsigned k = atomic_fetch_add_explicit(&g->next_target, 1, memory_order_relaxed);
    int active = atomic_load_explicit(&g->idle.active, memory_order_relaxed);
    if (g->first == 0 && active > 1)
        return 1 + (int)(k % (unsigned)(active - 1));
    return g->first + (int)(k % (unsigned)active);
}

/* A worker beyond its group's active count runs nothing and sleeps (rt_set_active_workers). */
static inline int parked(const rt_worker *me)
{
    return me->slot >= atomic_load_explicit(&me->group->idle.active, memory_order_relaxed);
}

/* The group that should run t, seen from worker `from`: placement's choice when several groups
 * may, else from's own group if it may, else the first group that may. */
static worker_group *group_for(rt_runtime *rt, const rt_worker *from, rt_task *t)
{
    if (rt->placement && (t->eligible & (t->eligible - 1)))
        return placement_choose(rt, t);
    if (can_run(from, t))
        return from->group;
    for (int i = 0; i < rt->ngroups; i++)
        if ((t->eligible >> rt->groups[i].kind) & 1)
            return &rt->groups[i];
    return from->group;   /* not reached: submission checked that some group may */
}

void rt_task_make_ready(rt_runtime *rt, int worker, rt_task *t)
{
    rt_worker *me = &rt->workers[worker];
    worker_group *g = rt->ngroups == 1 ? me->group : group_for(rt, me, t);
    if (g == me->group) {
        push_or_die(&me->queues[t->priority], t);
        notify_one(&me->group->idle, (unsigned)me->slot + 1);
        return;
    }
    rt_task_hand_to(rt, worker_in(g), t);
}

/* From a thread that is not a worker: the worker that ran the predecessor, if t goes to its
 * group. */
static void task_make_ready_elsewhere(rt_runtime *rt, int near, rt_task *t)
{
    worker_group *g = group_for(rt, &rt->workers[near], t);
    rt_task_hand_to(rt, g == rt->workers[near].group ? near : worker_in(g), t);
}

/* ---- finding work ---- */

/* Steals only from queues holding at least min_steal tasks. */
static rt_task *find_work(rt_runtime *rt, rt_worker *me, int64_t min_steal)
{
    drain_inbox(me);
    for (int p = RT_PRIO_LEVELS - 1; p >= 0; p--) {
        if (deque_size_hint(&me->queues[p]) <= 0)
            continue;
        rt_task *t = deque_take(&me->queues[p]);
        if (t)
            return t;
    }
    int n = me->group->n;
    if (n == 1)
        return NULL;
    void *batch[DEQUE_MAX_BATCH];
    for (int attempt = 0; attempt < 2 * n; attempt++) {
        me->rng = me->rng * 1664525u + 1013904223u;
        int v = (int)((me->rng >> 8) % (unsigned)(n - 1));
        rt_worker *victim = &rt->workers[me->group->first + (v >= me->slot ? v + 1 : v)];
        for (int p = RT_PRIO_LEVELS - 1; p >= 0; p--) {
            /* A prioritised task waiting behind its owner's current one is worth moving now. */
            if (deque_size_hint(&victim->queues[p]) < (p > 0 ? 1 : min_steal))
                continue;
            int got = deque_steal(&victim->queues[p], batch, DEQUE_MAX_BATCH);
            if (!got)
                continue;
            /* Keep the oldest to run now; the rest become ours, stealable again. */
            for (int i = got - 1; i > 0; i--)
                push_or_die(&me->queues[p], batch[i]);
            bump(&me->steals, (uint64_t)got);
            return batch[0];
        }
    }
    return NULL;
}

/* After sleep_prepare: a full, ordered scan so that a push racing with our sleep is seen. */
static int work_visible(rt_runtime *rt, rt_worker *me)
{
    if (atomic_load(&me->in.head))
        return 1;
    worker_group *g = me->group;
    for (int w = g->first; w < g->first + g->n; w++)
        for (int p = 0; p < RT_PRIO_LEVELS; p++)
            if (deque_size_ordered(&rt->workers[w].queues[p]) > 0)
                return 1;
    return 0;
}

/* ---- completing tasks ---- */

/* Settles t's effects (its writes become the valid copies, its exclusion tokens go back), then
 * closes its successor list, which is what marks it done; returns the list. */
static inline rt_edge *close_successors(rt_runtime *rt, rt_task *t)
{
    if (rt->nmemories > 1 && !atomic_load_explicit(&rt->failed, memory_order_relaxed))
        rt_data_written(rt, t);
    if (t->holds_accum)
        rt_accum_release(rt, t);
    return atomic_exchange_explicit(&t->successors, EDGES_CLOSED, memory_order_seq_cst);
}

/* On worker `worker`: makes t's successors ready and returns one it can run next (skipping
 * the deque). */
static inline rt_task *finish_here(rt_runtime *rt, int worker, rt_task *t)
{
    rt_worker *me = &rt->workers[worker];
    int one_kind = rt->ngroups == 1;   /* then every task submitted runs anywhere */
    rt_task *next = NULL;
    for (rt_edge *e = close_successors(rt, t); e;) {
        rt_edge *following = e->next;
        rt_task *s = e->succ;
        if (e != &s->own_edge)   /* read before s may run and be freed */
            pool_free(&rt->edges, worker, e);
        worker_group *g;
        if (atomic_fetch_sub_explicit(&s->npending, 1, memory_order_acq_rel) == 1) {
            if (!one_kind && (g = group_for(rt, me, s)) != me->group)
                rt_task_hand_to(rt, worker_in(g), s);
            else if (!next)
                next = s;
            else if (s->priority > next->priority) {
                rt_task_make_ready(rt, worker, next);
                next = s;
            } else
                rt_task_make_ready(rt, worker, s);
        }
        e = following;
    }
    /* Only the owner waits for tasks or for the end of the run. */
    int waited = atomic_load_explicit(&t->waited, memory_order_seq_cst);
    if (t->kept)
        task_release_on(rt, worker, t);
    else
        pool_free(&rt->tasks, worker, t);
    /* Release suffices: whoever wakes the owner fences first (notifier.c). */
    atomic_store_explicit(&me->completed, me->completed + 1, memory_order_release);
    if (waited)
        rt_owner_wake(rt);
    return next;
}

/* On a thread that is not a worker (or a body completing its own task): successors go to the
 * inboxes of workers that can run them, preferably the one that ran t. */
static void finish_elsewhere(rt_runtime *rt, rt_task *t)
{
    for (rt_edge *e = close_successors(rt, t); e;) {
        rt_edge *following = e->next;
        rt_task *s = e->succ;
        if (e != &s->own_edge)
            pool_free_shared(&rt->edges, e);
        if (atomic_fetch_sub_explicit(&s->npending, 1, memory_order_acq_rel) == 1)
            task_make_ready_elsewhere(rt, t->worker, s);
        e = following;
    }
    if (t->kept)
        task_release_on(rt, -1, t);
    else
        pool_free_shared(&rt->tasks, t);
    atomic_fetch_add_explicit(&rt->completed_elsewhere, 1, memory_order_release);
    rt_owner_wake(rt);
}

void rt_task_complete(rt_runtime *rt, rt_task *t, int failed, const char *why)
{
    atomic_fetch_add(&rt->completing, 1);   /* before anything is published */
    uint64_t end = clock_ticks();
    rt_worker *w = &rt->workers[t->worker];
    int k = t->kind->id;
    atomic_fetch_add_explicit(&rt->late[w->kind][k].count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&rt->late[w->kind][k].ticks, end - t->ready.start, memory_order_relaxed);
    if (rt->placement && !failed)
        placement_learn(rt, t, w->kind, clock_ticks_to_s(end - t->ready.start));
    if (rt->trace)
        trace_record_late(rt, t->worker, k, t->ready.start, end);
    if (failed) {
        if (w->device >= 0)
            rt_set_error(rt, "task '%s' failed on device %s: %s", t->kind->name,
                              WORKER_DEVICE(rt, w)->name, why ? why : "?");
        else
            rt_set_error(rt, "task '%s' failed on worker %d: %s", t->kind->name, t->worker,
                              why ? why : "?");
    }
    finish_elsewhere(rt, t);
    atomic_fetch_sub(&rt->completing, 1);   /* the last touch of rt */
}

/* This thread's CPU seconds: what a task body cost, without the time it was preempted. */
static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* What one thread_cpu_s() call adds to a difference of two: the least of a few pairs. */
static double thread_cpu_overhead_s(void)
{
    double least = 1;
    for (int i = 0; i < 64; i++) {
        double a = thread_cpu_s(), b = thread_cpu_s();
        least = b - a < least ? b - a : least;
    }
    return least > 0 ? least : 0;
}

/* Stretches a task body that ran from start to end, costing cpu_s of this thread's CPU, to
 * slowdown times its length, busy as a slower core would be; the new end. The length is the
 * body's wall time, or its CPU time when that is less: a body preempted by another thread (a
 * busy host, the network's threads) is not made slowdown times later for it. */
static uint64_t emulate_slower(const rt_runtime *rt, uint64_t start, uint64_t end, double cpu_s)
{
    double cpu_ticks = (cpu_s - rt->slowdown_clock_s) * rt->slowdown_ticks_per_s, wall = (double)(end - start);
    double length = cpu_ticks > 0 && cpu_ticks < wall ? cpu_ticks : wall;
    uint64_t until = end + (uint64_t)(length * (rt->slowdown - 1));
    uint64_t now = end;
    while (now < until)
        now = clock_ticks();
    return now;
}

/* Whether t's unit of work is the runtime's to do (runtime.h, claims): taken here now if open. */
static int claimed_here(rt_task *t)
{
    int open = RT_CLAIM_OPEN;
    return !t->claim || atomic_compare_exchange_strong(t->claim, &open, RT_CLAIM_HERE) ||
           open == RT_CLAIM_HERE;
}

/* Runs t: its data first (if copies are needed it is handed back when they arrive and NULL is
 * returned), then its body, then completes it unless the body completes later. Returns one
 * successor made ready, to run next. */
static rt_task *run_task(rt_runtime *rt, rt_worker *me, rt_task *t)
{
    if (!claimed_here(t))
        t->naccess = 0;   /* done elsewhere: it touches no data, every copy stays as it was */
    else if (!atomic_load_explicit(&rt->failed, memory_order_relaxed)) {
        t->worker = (uint16_t)me->id;
        int ready = rt->nmemories == 1 && !t->naccum ? 1 : rt_data_prepare(rt, t);
        if (ready == 0)
            return NULL;   /* handed back when its data is in place */
        if (ready > 0) {
            rt_ctx ctx = {rt, me->id, me->memory, t};
            int slower = __builtin_expect(rt->slowdown > 1, 0) && me->kind == RT_WORKER_CPU;
            double cpu = slower ? thread_cpu_s() : 0;
            uint64_t start = clock_ticks();
            t->ready.start = start;   /* before the body: a pending task may complete at once */
            int rc = t->kind->impl[me->kind](&ctx, t->args);
            if (__builtin_expect(rc == RT_PENDING, 0))
                return NULL;   /* t may already be gone */
            uint64_t end = clock_ticks();
            if (slower)
                end = emulate_slower(rt, start, end, thread_cpu_s() - cpu);
            stats_record(me, t, start, end);
            if (__builtin_expect(rc != 0, 0))
                rt_set_error(rt, "task '%s' failed on worker %d (returned %d)",
                                  t->kind->name, me->id, rc);
            else if (rt->placement)
                placement_learn(rt, t, me->kind, clock_ticks_to_s(end - start));
        }
    }
    /* Skipped tasks (after a failure, or whose work was claimed elsewhere) still complete, so
     * that every wait returns. */
    return finish_here(rt, me->id, t);
}

static void run_chain(rt_runtime *rt, rt_worker *me, rt_task *t)
{
    while (t && !parked(me))
        t = run_task(rt, me, t);
    if (t)
        rt_task_hand_to(rt, worker_in(me->group), t);
}

/* A parked worker gives what it holds to the active ones, then sleeps until it is active again,
 * the runtime stops or a task is handed to it (which it passes on). */
static void park(rt_runtime *rt, rt_worker *me)
{
    drain_inbox(me);
    for (int p = 0; p < RT_PRIO_LEVELS; p++)
        for (rt_task *t; (t = deque_take(&me->queues[p]));)
            rt_task_hand_to(rt, worker_in(me->group), t);
    rt_sleep_prepare(&me->group->idle, me->slot);
    if (atomic_load(&rt->stop) || !parked(me) || atomic_load(&me->in.head)) {
        rt_sleep_cancel(&me->group->idle, me->slot);
        return;
    }
    bump(&me->parks, 1);
    rt_sleep_commit(&me->group->idle, me->slot);
}

/* Whether me drives a device that it spins for (rt_device.spin) and that has work running. */
static int device_busy(rt_runtime *rt, rt_worker *me)
{
    const rt_device *dev = me->device >= 0 ? WORKER_DEVICE(rt, me) : NULL;
    int in_flight = 0;
    if (dev && dev->poll && dev->spin)
        dev->poll(dev->ctx, &in_flight);
    return in_flight > 0;
}

/* Look for work a little longer before sleeping: waking a sleeping core costs tens of
 * microseconds (far more on a virtual machine), so short gaps between tasks are spun through.
 * At first only a backlog is worth stealing: taking tasks one by one as the owner pushes them
 * moves every task between cores, which costs more than a small task. A lone task is taken once
 * it has waited a while, or at once if it has a priority above 0. Stops early when stop_when(rt)
 * holds (the owner's wait is over). */
static rt_task *find_work_patiently(rt_runtime *rt, rt_worker *me, int (*stop_when)(rt_runtime *))
{
    uint64_t start = clock_ticks();
    int64_t min_steal = STEAL_BACKLOG;
    int pauses = 4;
    const rt_device *dev = me->device >= 0 ? WORKER_DEVICE(rt, me) : NULL;
    for (unsigned i = 1;; i++) {
        /* A device's finished work completed here: its successors come to this worker's inbox
         * now rather than after the driver's callback and a wake-up (tens of microseconds on a
         * machine, up to milliseconds on a virtual one). A device it spins for keeps it awake
         * while work runs there, as CUDA's default spins while a GPU works. */
        int in_flight = 0;
        int completed = dev && dev->poll ? dev->poll(dev->ctx, &in_flight) : 0;
        int spinning_for_device = in_flight > 0 && dev->spin;
        if (completed > 0 || spinning_for_device) {
            start = clock_ticks();
            pauses = pauses > 16 ? 16 : pauses;
        }
        rt_task *t = find_work(rt, me, min_steal);
        if (t || (stop_when && stop_when(rt)))
            return t;
        /* Never sleep on a device's running work, even when this thread lost its core for
         * longer than the spin (a busy virtual machine): the work would then wait for a wake-up
         * that no callback sends. */
        double idle = clock_ticks_to_s(clock_ticks() - start);
        if (idle > IDLE_SPIN_S && !spinning_for_device)
            return NULL;
        if (idle > LONE_TASK_WAIT_S)
            min_steal = 1;
        if (i % 16 == 0)
            sched_yield();   /* an oversubscribed machine may have a thread with work to run */
        /* Each look reads the lines a busy owner writes on every push and takes them away from
         * it: look less often as the wait grows. (A pause takes up to ~140 cycles.) */
        for (int k = 0; k < pauses; k++)
            cpu_relax();
        if (pauses < SPIN_PAUSES_MAX)
            pauses *= 2;
    }
}

/* Submitted minus completed. Exact for the owner, which alone submits. */
static int64_t unfinished(rt_runtime *rt)
{
    uint64_t completed = atomic_load(&rt->completed_elsewhere);
    for (int w = 0; w < rt->nworkers; w++)
        completed += atomic_load(&rt->workers[w].completed);
    return (int64_t)(rt->submitted - completed);
}

static void *worker_main(void *arg)
{
    rt_worker *me = arg;
    rt_runtime *rt = me->rt;
    tl_runtime = rt;
    tl_worker = me->id;
    for (;;) {
        if (parked(me)) {
            if (atomic_load(&rt->stop))
                break;
            park(rt, me);
            continue;
        }
        rt_task *t = find_work(rt, me, STEAL_BACKLOG);
        if (!t) {
            /* Out of work: maybe the owner waits for what we just finished. */
            rt_owner_wake(rt);
            t = find_work_patiently(rt, me, NULL);
        }
        if (t) {
            run_chain(rt, me, t);
            continue;
        }
        rt_sleep_prepare(&me->group->idle, me->slot);
        if (atomic_load(&rt->stop)) {
            rt_sleep_cancel(&me->group->idle, me->slot);
            break;
        }
        if (work_visible(rt, me)) {
            rt_sleep_cancel(&me->group->idle, me->slot);
            continue;
        }
        bump(&me->parks, 1);
        if (device_busy(rt, me))   /* a transfer another worker started, or a bug */
            bump(&me->sleeps_in_flight, 1);
        if (rt_sleep_commit(&me->group->idle, me->slot) && atomic_load(&me->in.head))
            bump(&me->late_wakeups, 1);
    }
    return NULL;
}

/* ---- creating and destroying ---- */

static int check_devices(const rt_config *cfg)
{
    if (cfg->ndevices < 0 || cfg->ndevices > RT_MAX_DEVICES)
        return -1;
    for (int i = 0; i < cfg->ndevices; i++) {
        const rt_device *d = &cfg->devices[i];
        if (d->kind == RT_WORKER_CPU || (unsigned)d->kind >= RT_WORKER_KINDS ||
            (d->memory && (!d->memory->alloc || !d->memory->free || !d->memory->copy)))
            return -1;
    }
    return 0;
}

/* Workers in groups by kind: CPU workers first, then each kind's devices. */
static void make_groups(rt_runtime *rt, const rt_config *cfg)
{
    int next = 0;
    for (int k = 0; k < RT_WORKER_KINDS; k++) {
        int first = next;
        for (int i = 0; i < (k == RT_WORKER_CPU ? rt->ncpu : cfg->ndevices); i++) {
            if (k != RT_WORKER_CPU && (int)cfg->devices[i].kind != k)
                continue;
            rt_worker *w = &rt->workers[next];
            w->rt = rt;
            w->id = next++;
            w->kind = (rt_worker_kind)k;
            w->device = k == RT_WORKER_CPU ? -1 : i;
            w->memory = k == RT_WORKER_CPU || !cfg->devices[i].memory ? 0 : 1 + i;
            w->slot = w->id - first;
            w->rng = 0x9e3779b9u * (unsigned)(w->id + 1);
        }
        if (next == first)
            continue;
        worker_group *g = &rt->groups[rt->ngroups++];
        g->kind = (rt_worker_kind)k;
        g->first = first;
        g->n = next - first;
        rt->group_of_kind[k] = g;
        rt->kinds_present |= 1u << k;
    }
    for (int i = 0; i < rt->ngroups; i++)
        for (int w = rt->groups[i].first; w < rt->groups[i].first + rt->groups[i].n; w++)
            rt->workers[w].group = &rt->groups[i];
}

static void free_runtime(rt_runtime *rt)
{
    for (int i = 0; i < rt->ngroups; i++)
        free(rt->groups[i].sleepers);
    free(rt->workers);
    trace_free(rt);
    free(rt);
}

/* The runtime's memory and its workers in groups, not yet running: NULL when out of memory. */
static rt_runtime *runtime_new(const rt_config *cfg, int ncpu)
{
    rt_runtime *rt = aligned_alloc(64, (sizeof *rt + 63) & ~(size_t)63);
    if (!rt)
        return NULL;
    memset(rt, 0, sizeof *rt);
    rt->ncpu = ncpu;
    rt->nworkers = ncpu + cfg->ndevices;
    /* Memories up to the last device with one of its own (one working in host memory adds
     * none: without such devices the runtime skips coherence altogether). */
    rt->nmemories = 1;
    for (int i = 0; i < cfg->ndevices; i++) {
        rt->memories[1 + i].dev = cfg->devices[i];
        if (cfg->devices[i].memory)
            rt->nmemories = 2 + i;
    }
    rt->window = WINDOW_BASE + WINDOW_PER_WORKER * rt->nworkers;
    rt->trace = cfg->trace;
    rt->slowdown = cfg->slowdown > 1 ? cfg->slowdown : 1;
    if (rt->slowdown > 1) {
        rt->slowdown_ticks_per_s = 1e6 / clock_ticks_to_s(1000000);
        rt->slowdown_clock_s = thread_cpu_overhead_s();
    }
    rt->workers = aligned_alloc(64, sizeof(rt_worker) * (size_t)rt->nworkers);
    if (!rt->workers) {
        free(rt);
        return NULL;
    }
    memset(rt->workers, 0, sizeof(rt_worker) * (size_t)rt->nworkers);
    make_groups(rt, cfg);
    for (int i = 0; i < rt->ngroups; i++) {
        worker_group *g = &rt->groups[i];
        g->sleepers = aligned_alloc(64, sizeof(sleeper) * (size_t)g->n);
        if (!g->sleepers) {
            free_runtime(rt);
            return NULL;
        }
        notifier_init(&g->idle, g->sleepers, g->n);
    }
    return rt;
}

/* The pools of tasks, edges and handles: all three, or none (out of memory). */
static int pools_init(rt_runtime *rt)
{
    pool *p[] = {&rt->tasks, &rt->edges, &rt->handles};
    size_t size[] = {sizeof(rt_task), sizeof(rt_edge), sizeof(rt_handle)};
    for (int i = 0; i < 3; i++)
        if (pool_init(p[i], size[i], rt->nworkers)) {
            while (i-- > 0)
                pool_destroy(p[i]);
            return -1;
        }
    return 0;
}

static void pools_destroy(rt_runtime *rt)
{
    pool_destroy(&rt->tasks);
    pool_destroy(&rt->edges);
    pool_destroy(&rt->handles);
}

/* The first n of the workers' queues (RT_PRIO_LEVELS each, worker after worker). */
static void queues_destroy(rt_runtime *rt, int n)
{
    for (int q = 0; q < n; q++)
        deque_destroy(&rt->workers[q / RT_PRIO_LEVELS].queues[q % RT_PRIO_LEVELS]);
}

/* Every worker's queues, or none (out of memory). */
static int queues_init(rt_runtime *rt)
{
    for (int q = 0; q < rt->nworkers * RT_PRIO_LEVELS; q++)
        if (deque_init(&rt->workers[q / RT_PRIO_LEVELS].queues[q % RT_PRIO_LEVELS], 256)) {
            queues_destroy(rt, q);
            return -1;
        }
    return 0;
}

/* Stops and joins workers 1 .. n-1 (0 is the owner's thread): nothing may be left to run. */
static void threads_stop(rt_runtime *rt, int n)
{
    atomic_store(&rt->stop, 1);
    for (int i = 0; i < rt->ngroups; i++)
        rt_notify_all(&rt->groups[i].idle);
    for (int w = 1; w < n; w++)
        pthread_join(rt->workers[w].thread, NULL);
}

/* A thread for each worker but the owner: all of them, or none (said why). */
static int threads_start(rt_runtime *rt)
{
    for (int w = 1; w < rt->nworkers; w++)
        if (pthread_create(&rt->workers[w].thread, NULL, worker_main, &rt->workers[w])) {
            fprintf(stderr, "frugal runtime: cannot start worker thread %d of %d\n", w,
                    rt->nworkers);
            threads_stop(rt, w);
            return -1;
        }
    return 0;
}

rt_runtime *rt_create(const rt_config *cfg)
{
    static const rt_config none;
    if (!cfg)
        cfg = &none;
    if (check_devices(cfg))
        return NULL;
    int ncpu = cfg->workers > 0 ? cfg->workers : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1)
        ncpu = 1;
    if (ncpu + cfg->ndevices > 65535)   /* a task keeps its worker's index in 16 bits */
        return NULL;
    clock_init();
    rt_runtime *rt = runtime_new(cfg, ncpu);
    if (!rt)
        return NULL;
    if (pools_init(rt)) {
        free_runtime(rt);
        return NULL;
    }
    pthread_mutex_init(&rt->error_lock, NULL);
    pthread_mutex_init(&rt->trace_lock, NULL);
    pthread_mutex_init(&rt->active_lock, NULL);
    if (trace_init(rt, cfg) || placement_create(rt) || queues_init(rt))
        goto undo;
    rt->stats_origin = rt->active_since = clock_ticks();
    tl_runtime = rt;
    tl_worker = 0;
    if (threads_start(rt) == 0)
        return rt;
    tl_runtime = NULL;
    queues_destroy(rt, rt->nworkers * RT_PRIO_LEVELS);
undo:
    placement_destroy(rt);
    pthread_mutex_destroy(&rt->error_lock);
    pthread_mutex_destroy(&rt->trace_lock);
    pthread_mutex_destroy(&rt->active_lock);
    pools_destroy(rt);
    free_runtime(rt);
    return NULL;
}

void rt_destroy(rt_runtime *rt)
{
    if (!rt)
        return;
    rt_wait_all(rt);
    while (atomic_load(&rt->completing))   /* a device thread finishing its last completion */
        sched_yield();
    threads_stop(rt, rt->nworkers);
    queues_destroy(rt, rt->nworkers * RT_PRIO_LEVELS);
    for (int w = 0; w < rt->nworkers; w++)
        free(rt->workers[w].events);
    free(rt->late_events);
    placement_destroy(rt);
    pools_destroy(rt);
    region_index_free(&rt->buffers);
    pthread_mutex_destroy(&rt->error_lock);
    pthread_mutex_destroy(&rt->trace_lock);
    pthread_mutex_destroy(&rt->active_lock);
    if (tl_runtime == rt)
        tl_runtime = NULL;
    free_runtime(rt);
}

/* ---- submitting ---- */

/* The owner stops racing ahead when it has queued far more ready tasks than others can take, or
 * when the window of unfinished tasks is full, and runs tasks itself instead: memory stays
 * bounded and tasks run while their inputs are still in cache. */
static void throttle(rt_runtime *rt)
{
    rt_worker *me = &rt->workers[0];
    /* Every task costs ~100 ns to submit: look at the queues every 8 submissions, and at the
     * workers' counters (a cache miss each) every 64. */
    if (rt->submitted & 7)
        return;
    for (;;) {
        int backlog = 0;
        for (int p = 0; p < RT_PRIO_LEVELS && !backlog; p++)
            backlog = deque_owner_holds_more_than(&me->queues[p], THROTTLE_QUEUED);
        if (!backlog && ((rt->submitted & 63) || unfinished(rt) <= rt->window))
            return;
        rt_task *t = find_work(rt, me, 1);
        if (!t)
            return;   /* the rest is running elsewhere or waits on it: keep submitting */
        run_chain(rt, me, t);
    }
}

/* The worker kinds present that have an implementation of the task (its kind's id given) and
 * may run it. */
static unsigned eligible_kinds(const rt_runtime *rt, const rt_task_desc *d, int id)
{
    return atomic_load_explicit(&impl_mask[id], memory_order_relaxed) & rt->kinds_present &
           (d->kinds ? d->kinds : ~0u);
}

static int validate(rt_runtime *rt, const rt_task_desc *d, int id)
{
    if (!d->kind || !eligible_kinds(rt, d, id)) {
        char have[64] = "";
        for (int i = 0; i < RT_WORKER_KINDS; i++)
            if (rt->kinds_present & (1u << i))
                snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s",
                         have[0] ? ", " : "", rt_worker_kind_name((rt_worker_kind)i));
        rt_set_error(rt, "rt_submit: task kind '%s' has no implementation for the workers "
                          "here (%s)%s", d->kind && d->kind->name ? d->kind->name : "?", have,
                          d->kind && d->kinds ? " that it may run on" : "");
        return -1;
    }
    if ((unsigned)d->naccess > RT_MAX_ACCESS || (unsigned)d->nafter > RT_MAX_AFTER ||
        (unsigned)d->priority >= RT_PRIO_LEVELS || (d->args_size && !d->args) ||
        d->args_size > RT_MAX_ARGS) {
        rt_set_error(rt, "rt_submit: malformed description for task '%s'", d->kind->name);
        return -1;
    }
    for (int i = 0; i < d->naccess; i++) {
        const rt_access *a = &d->access[i];
        /* The handles' histories are likely cold: start fetching them all at once. */
        __builtin_prefetch(a->handle, 1);
        if (!a->handle || (a->mode != RT_R && a->mode != RT_W && a->mode != RT_RW &&
                           a->mode != RT_ACCUM)) {
            rt_set_error(rt, "rt_submit: task '%s' access %d has no handle or a bad mode",
                              d->kind->name, i);
            return -1;
        }
        for (int j = 0; j < i; j++)   /* one mode per handle: RT_RW says read and write */
            if (d->access[j].handle == a->handle) {
                rt_set_error(rt, "rt_submit: task '%s' names handle '%s' twice",
                                  d->kind->name, a->handle->name);
                return -1;
            }
    }
    return 0;
}

/* Checked once the task is filled in, so that the prefetches above have had time to arrive: the
 * histories' lines, which linking reads anyway. */
static int names_split_handle(rt_runtime *rt, const rt_task_desc *d)
{
    for (int i = 0; i < d->naccess; i++)
        if (d->access[i].handle->writer.task == HAS_PARTS) {
            rt_set_error(rt, "rt_submit: task '%s' names '%s', which is split into parts: "
                              "it must name the parts", d->kind->name, d->access[i].handle->name);
            return 1;
        }
    return 0;
}

static int kind_id(rt_runtime *rt, const rt_kind *k)
{
    rt_kind *kind = (rt_kind *)k;   /* ids are assigned once, on first submission */
    int id = __atomic_load_n(&kind->id, __ATOMIC_ACQUIRE);
    if (id)
        return id;
    int fresh = atomic_fetch_add(&next_kind_id, 1);
    if (fresh >= RT_MAX_KINDS) {
        rt_set_error(rt, "rt_submit: more than %d task kinds", RT_MAX_KINDS - 1);
        return -1;
    }
    int expected = 0;
    unsigned mask = 0;
    for (int i = 0; i < RT_WORKER_KINDS; i++)
        mask |= k->impl[i] ? 1u << i : 0;
    atomic_store(&impl_mask[fresh], (unsigned char)mask);
    atomic_store(&kinds_by_id[fresh], k);
    if (__atomic_compare_exchange_n(&kind->id, &expected, fresh, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
        return fresh;
    return expected;
}

static rt_task *submit(rt_runtime *rt, const rt_task_desc *d, int keep)
{
    int w = rt_worker_self(rt);
    if (w != 0) {
        rt_set_error(rt, "rt_submit: called from a thread that does not own the runtime");
        return NULL;
    }
    int id = d->kind ? kind_id(rt, d->kind) : 0;
    if (id < 0 || validate(rt, d, id))
        return NULL;
    rt_task *t = pool_alloc(&rt->tasks, w);
    if (!t) {
        rt_set_error(rt, "rt_submit: out of memory");
        return NULL;
    }
    t->gen++;   /* what referred to its previous use now reads as done */
    t->kind = d->kind;
    atomic_init(&t->npending, PENDING_GUARD);
    atomic_init(&t->refs, 1 + keep);
    t->kept = (signed char)keep;
    atomic_init(&t->successors, NULL);
    atomic_init(&t->waited, 0);
    t->priority = (signed char)d->priority;
    t->nedges = 0;
    t->naccum = 0;
    t->naccess = (signed char)d->naccess;
    t->eligible = (unsigned char)eligible_kinds(rt, d, id);
    t->holds_accum = 0;
    if (d->args_size)
        memcpy(t->args, d->args, d->args_size);
    t->claim = d->claim;
    if (names_split_handle(rt, d)) {
        pool_free(&rt->tasks, w, t);
        return NULL;
    }
    int rc = 0;
    for (int i = 0; i < d->nafter && !rc; i++)
        rc = d->after[i] ? rt_task_add_edge(rt, w, d->after[i], t) : 0;
    for (int i = 0; i < d->naccess && !rc; i++) {
        rc = handle_link(rt, w, t, &d->access[i]);
        t->access[i] = (uintptr_t)d->access[i].handle | (uintptr_t)d->access[i].mode;
        t->naccum += d->access[i].mode == RT_ACCUM;
    }
    if (rc)
        rt_set_error(rt, "rt_submit: out of memory recording dependencies of task '%s'",
                          d->kind->name);
    rt->submitted++;
    /* Without edges nobody else knows the task: no atomic step needed. */
    int guard = PENDING_GUARD - t->nedges;
    if (t->nedges == 0 ||
        atomic_fetch_sub_explicit(&t->npending, guard, memory_order_acq_rel) == guard)
        rt_task_make_ready(rt, w, t);
    throttle(rt);
    return t;
}

rt_task *rt_submit_kept(rt_runtime *rt, const rt_task_desc *d)
{
    return submit(rt, d, 1);
}

int rt_submit(rt_runtime *rt, const rt_task_desc *d)
{
    return submit(rt, d, 0) ? 0 : -1;
}

/* ---- waiting ---- */

/* What the owner waits for: the host copy of waiting_handle, every task (waiting_n < 0), or the
 * tasks in waiting_for. */
static int wait_over(rt_runtime *rt)
{
    if (rt->waiting_handle)
        return (atomic_load(&rt->waiting_handle->info->valid) & 1u) || atomic_load(&rt->failed);
    if (rt->waiting_n < 0)
        return unfinished(rt) == 0;
    for (int i = 0; i < rt->waiting_n; i++)
        if (!task_done(rt->waiting_for[i]))
            return 0;
    return 1;
}

/* The owner runs tasks until its wait is over, sleeping when there is nothing it can run. */
static int wait_until(rt_runtime *rt, rt_task *const *tasks, int n, rt_handle *h)
{
    if (rt_worker_self(rt) != 0) {
        rt_set_error(rt, "rt_wait: called from a thread that does not own the runtime");
        return -1;
    }
    rt->waiting_for = tasks;
    rt->waiting_n = n;
    rt->waiting_handle = h;
    rt_worker *me = &rt->workers[0];
    while (!wait_over(rt)) {
        rt_task *t = find_work(rt, me, STEAL_BACKLOG);
        if (!t)
            t = find_work_patiently(rt, me, wait_over);
        if (t) {
            run_chain(rt, me, t);
            continue;
        }
        rt_sleep_prepare(&me->group->idle, 0);
        if (wait_over(rt) || work_visible(rt, me)) {
            rt_sleep_cancel(&me->group->idle, 0);
            continue;
        }
        bump(&me->parks, 1);
        if (rt_sleep_commit(&me->group->idle, 0) && (wait_over(rt) || atomic_load(&me->in.head)))
            bump(&me->late_wakeups, 1);
    }
    rt->waiting_handle = NULL;
    return atomic_load(&rt->failed) ? -1 : 0;
}

int rt_wait_tasks(rt_runtime *rt, rt_task *const *tasks, int n)
{
    for (int i = 0; i < n; i++)
        atomic_store_explicit(&tasks[i]->waited, 1, memory_order_seq_cst);
    return wait_until(rt, tasks, n, NULL);
}

int rt_wait_host_copy(rt_runtime *rt, rt_handle *h)
{
    int rc = wait_until(rt, NULL, 0, h);
    rt_host_copy_received(h);
    return rc;
}

int rt_wait_all(rt_runtime *rt)
{
    return wait_until(rt, NULL, -1, NULL);
}

int rt_wait_task(rt_runtime *rt, rt_task *t)
{
    return rt_wait_tasks(rt, &t, 1);
}
