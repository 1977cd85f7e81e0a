/* Runtime behaviour beyond ordering: failures, sleeping, priorities, statistics and traces. */
#include "common/clock.h"
#include "runtime/runtime.h"
#include "test.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int nop(const rt_ctx *ctx, void *args)
{
    (void)ctx, (void)args;
    return 0;
}
static rt_kind nop_kind = {.name = "nop", .cpu = nop};
static rt_kind other_nop_kind = {.name = "other_nop", .cpu = nop};

static int fail_at(const rt_ctx *ctx, void *args)
{
    int i = *(int *)args;
    if (i == 50) {
        rt_fail(ctx, "sample %d has a NaN", i);
        return -1;
    }
    return 0;
}
static rt_kind fail_kind = {.name = "may_fail", .cpu = fail_at};

static int count_body(const rt_ctx *ctx, void *args)
{
    (void)ctx;
    int *counter = *(int **)args;
    (*counter)++;
    return 0;
}
static rt_kind count_kind = {.name = "count", .cpu = count_body};

TEST(runtime_failure_ends_run_with_message)
{
    for (int workers = 1; workers <= 4; workers++) {
        rt_runtime *rt = rt_create(&(rt_config){.workers = workers});
        int ran = 0;
        rt_handle *h = rt_handle_register(rt, &ran, sizeof ran, "chain");
        for (int i = 0; i < 100; i++)   /* a chain: what follows the failure must not run */
            rt_submit(rt, &(rt_task_desc){.kind = &fail_kind, .args = &i, .args_size = sizeof i,
                                          .naccess = 1, .access = {{h, RT_RW}}});
        CHECK(rt_wait_all(rt) == -1);
        CHECKF(strstr(rt_error(rt), "may_fail") && strstr(rt_error(rt), "sample 50 has a NaN"),
               "error was '%s'", rt_error(rt));
        rt_stats st;
        rt_stats_get(rt, &st);
        CHECKF(st.tasks == 51, "%llu tasks ran", (unsigned long long)st.tasks);
        rt_clear_error(rt);
        CHECK(rt_error(rt)[0] == 0);
        int* pc = &ran;
        CHECK(rt_submit(rt, &(rt_task_desc){.kind = &count_kind, .args = &pc,
                                            .args_size = sizeof pc}) == 0);
        CHECK(rt_wait_all(rt) == 0);   /* usable again */
        CHECK(ran == 1);
        rt_handle_unregister(rt, h);
        rt_destroy(rt);
    }
}

TEST(runtime_rejects_malformed_tasks)
{
    rt_runtime *rt = rt_create(&(rt_config){.workers = 2});
    static rt_kind no_impl = {.name = "no_impl"};
    CHECK(rt_submit(rt, &(rt_task_desc){.kind = &no_impl}) == -1);
    CHECK(strstr(rt_error(rt), "no_impl") != NULL);
    rt_clear_error(rt);
    CHECK(rt_submit(rt, &(rt_task_desc){.kind = &nop_kind, .priority = RT_PRIO_LEVELS}) == -1);
    rt_clear_error(rt);
    CHECK(rt_submit(rt, &(rt_task_desc){.kind = &nop_kind, .naccess = 1}) == -1);
    CHECK(strstr(rt_error(rt), "no handle") != NULL);
    rt_clear_error(rt);
    int v = 0;
    rt_handle *h = rt_handle_register(rt, &v, sizeof v, "weights");
    CHECK(rt_submit(rt, &(rt_task_desc){.kind = &nop_kind, .naccess = 2,
                                        .access = {{h, RT_ACCUM}, {h, RT_ACCUM}}}) == -1);
    CHECKF(strstr(rt_error(rt), "names handle 'weights' twice") != NULL, "error was '%s'",
           rt_error(rt));
    rt_clear_error(rt);
    rt_handle_unregister(rt, h);
    CHECK(rt_wait_all(rt) == 0);
    rt_destroy(rt);
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* (monotonic seconds, ticks) read at one instant: retried while something (a preemption)
 * came between the reads. */
static void clock_pair(double *s, uint64_t *ticks)
{
    for (int i = 0; i < 1000; i++) {
        double before = clock_now_s();
        *ticks = clock_ticks();
        *s = clock_now_s();
        if (*s - before < 20e-6)
            return;
    }
}

/* The runtime's ticks (the TSC where it is invariant) keep time with CLOCK_MONOTONIC: their
 * calibration, 5 ms long, reads each pair at one instant; a pair read a time slice apart on a
 * busy machine would put the rate off, and idle workers would spin longer than meant. */
TEST(runtime_clock_ticks_keep_time_with_the_monotonic_clock)
{
    clock_init();
    for (int round = 0; round < 3; round++) {
        double s0, s1;
        uint64_t t0, t1;
        clock_pair(&s0, &t0);
        struct timespec wait = {0, 30 * 1000 * 1000};
        nanosleep(&wait, NULL);
        clock_pair(&s1, &t1);
        double ticked = clock_ticks_to_s(t1 - t0), passed = s1 - s0;
        CHECKF(ticked > 0.99 * passed && ticked < 1.01 * passed,
               "%s ticks counted %.6f s while CLOCK_MONOTONIC counted %.6f s", clock_source(),
               ticked, passed);
    }
}

TEST(runtime_idle_workers_sleep)
{
    rt_runtime *rt = rt_create(&(rt_config){.workers = 2});
    for (int i = 0; i < 10000; i++)   /* wake them up first: they must go back to sleep */
        rt_submit(rt, &(rt_task_desc){.kind = &nop_kind});
    CHECK(rt_wait_all(rt) == 0);
    struct timespec settle = {0, 50 * 1000 * 1000};
    nanosleep(&settle, NULL);
    double c0 = cpu_seconds();
    sleep(1);
    double used = cpu_seconds() - c0;
    CHECKF(used < 0.01, "an idle runtime used %.1f%% of a CPU", 100 * used);
    rt_destroy(rt);
}

typedef struct order_log { int *log; int *n; int tag; } order_log;
static int log_order(const rt_ctx *ctx, void *args)
{
    (void)ctx;
    order_log *o = args;
    o->log[(*o->n)++] = o->tag;
    return 0;
}
static rt_kind log_kind = {.name = "log", .cpu = log_order};

TEST(runtime_priorities_run_urgent_first)
{
    rt_runtime *rt = rt_create(&(rt_config){.workers = 1});
    int log[64], n = 0, gate = 0;
    /* Every task waits on one gate, so all become ready at once, whatever the submitter did. */
    rt_handle *g = rt_handle_register(rt, &gate, sizeof gate, "gate");
    rt_submit(rt, &(rt_task_desc){.kind = &nop_kind, .naccess = 1, .access = {{g, RT_W}}});
    for (int i = 0; i < 64; i++) {
        order_log o = {log, &n, i % 4};
        rt_submit(rt, &(rt_task_desc){.kind = &log_kind, .args = &o, .args_size = sizeof o,
                                      .priority = i % 4, .naccess = 1, .access = {{g, RT_R}}});
    }
    CHECK(rt_wait_all(rt) == 0);
    CHECK(n == 64);
    for (int i = 1; i < n; i++)
        CHECKF(log[i] <= log[i - 1], "priority %d ran after %d", log[i], log[i - 1]);
    rt_handle_unregister(rt, g);
    rt_destroy(rt);
}

TEST(runtime_accumulate_is_exclusive)
{
    rt_runtime *rt = rt_create(&(rt_config){.workers = 4});
    int counter = 0;
    rt_handle *h = rt_handle_register(rt, &counter, sizeof counter, "sum");
    int *pc = &counter;
    int n = test_scale(20000);
    for (int i = 0; i < n; i++)
        rt_submit(rt, &(rt_task_desc){.kind = &count_kind, .args = &pc, .args_size = sizeof pc,
                                      .naccess = 1, .access = {{h, RT_ACCUM}}});
    CHECK(rt_wait_handle(rt, h, RT_R) == 0);
    CHECKF(counter == n, "counter %d, expected %d", counter, n);
    rt_handle_unregister(rt, h);
    rt_destroy(rt);
}

TEST(runtime_wait_task_and_after)
{
    rt_runtime *rt = rt_create(&(rt_config){.workers = 3});
    int log[2], n = 0;
    order_log a = {log, &n, 1}, b = {log, &n, 2};
    rt_task *first = rt_submit_kept(rt, &(rt_task_desc){.kind = &log_kind, .args = &a,
                                                         .args_size = sizeof a});
    rt_task *second = rt_submit_kept(rt, &(rt_task_desc){.kind = &log_kind, .args = &b,
                                                          .args_size = sizeof b, .priority = 3,
                                                          .nafter = 1, .after = {first}});
    CHECK(rt_wait_task(rt, second) == 0);
    CHECK(n == 2 && log[0] == 1 && log[1] == 2);
    rt_task_release(rt, first);
    rt_task_release(rt, second);
    rt_destroy(rt);
}

TEST(runtime_stats_and_trace)
{
    rt_runtime *rt = rt_create(&(rt_config){.workers = 2, .trace = 1});
    for (int i = 0; i < 500; i++)
        rt_submit(rt, &(rt_task_desc){.kind = i % 2 ? &nop_kind : &other_nop_kind});
    CHECK(rt_wait_all(rt) == 0);
    rt_stats st;
    rt_stats_get(rt, &st);
    CHECK(st.tasks == 500);
    CHECK(st.workers == 2);
    CHECK(st.busy_s > 0 && st.task_share > 0 && st.task_share <= 1.0);
    uint64_t by_kind = 0;
    for (int k = 0; k < st.nkinds; k++)
        by_kind += st.kinds[k].count;
    CHECK(by_kind == 500);
    char path[512];
    snprintf(path, sizeof path, "%s/trace.json", test_tmpdir());
    CHECK(rt_trace_write(rt, path) == 0);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    char line[512];
    int events = 0, named = 0;
    while (f && fgets(line, sizeof line, f)) {
        events += strstr(line, "\"ph\":\"X\"") != NULL;
        named += strstr(line, "\"name\":\"nop\"") != NULL;
    }
    if (f)
        fclose(f);
    CHECK(events == 500);
    CHECK(named == 250);
    rt_stats_reset(rt);
    rt_stats_get(rt, &st);
    CHECK(st.tasks == 0);
    CHECK(rt_trace_write(rt, "/nonexistent-dir/trace.json") == -1);
    rt_destroy(rt);
}

TEST(runtime_many_readers_between_writes)
{
    /* Thousands of readers of one handle, then a writer: it must wait for all of them. */
    rt_runtime *rt = rt_create(&(rt_config){.workers = 4});
    int value = 0, reads = 0;
    rt_handle *h = rt_handle_register(rt, &value, sizeof value, "w");
    rt_handle *r = rt_handle_register(rt, &reads, sizeof reads, "reads");
    int *pr = &reads, *pv = &value;
    int n = test_scale(5000);
    for (int i = 0; i < n; i++)
        rt_submit(rt, &(rt_task_desc){.kind = &count_kind, .args = &pr, .args_size = sizeof pr,
                                      .naccess = 2, .access = {{h, RT_R}, {r, RT_ACCUM}}});
    rt_submit(rt, &(rt_task_desc){.kind = &count_kind, .args = &pv, .args_size = sizeof pv,
                                  .naccess = 1, .access = {{h, RT_W}}});
    CHECK(rt_wait_handle(rt, h, RT_R) == 0);
    CHECK(value == 1);
    CHECK(rt_wait_handle(rt, r, RT_R) == 0);
    CHECK(reads == n);
    rt_handle_unregister(rt, h);
    rt_handle_unregister(rt, r);
    rt_destroy(rt);
}

/* Waits (a few seconds at most, then fails) until the flag it points to is set. */
static int gate_body(const rt_ctx *ctx, void *args)
{
    _Atomic int *open = *(_Atomic int **)args;
    struct timespec pause = {0, 100000};
    for (int i = 0; i < 30000 && !atomic_load(open); i++)
        nanosleep(&pause, NULL);
    if (!atomic_load(open)) {
        rt_fail(ctx, "the gate was never opened");
        return -1;
    }
    return 0;
}
static rt_kind gate_kind = {.name = "gate", .cpu = gate_body};

static int open_body(const rt_ctx *ctx, void *args)
{
    (void)ctx;
    atomic_store(*(_Atomic int **)args, 1);
    return 0;
}
static rt_kind open_kind = {.name = "open", .cpu = open_body};

/* A finished task's memory is reused at once while handle histories still point at it: a later
 * reader of the handle must not mistake the task now living there for the writer it follows. */
TEST(runtime_recycled_task_is_not_a_dependency)
{
    rt_runtime *rt = rt_create(&(rt_config){.workers = 2});
    int data = 0;
    _Atomic int open = 0;
    _Atomic int *po = &open;
    rt_handle *h = rt_handle_register(rt, &data, sizeof data, "data");
    rt_handle *other = rt_handle_register(rt, &open, sizeof open, "other");
    rt_task *writer = rt_submit_kept(rt, &(rt_task_desc){.kind = &nop_kind, .naccess = 1,
                                                         .access = {{h, RT_W}}});
    CHECK(rt_wait_all(rt) == 0);
    rt_task_release(rt, writer);
    /* The gate takes the writer's memory (the pool hands out the last object freed) and blocks
     * until the reader runs: a false edge from it to the reader would never let go. */
    rt_task *gate = rt_submit_kept(rt, &(rt_task_desc){.kind = &gate_kind, .args = &po,
                                                       .args_size = sizeof po, .naccess = 1,
                                                       .access = {{other, RT_RW}}});
    CHECKF(gate == writer, "the gate got fresh memory: this test no longer tests reuse");
    rt_submit(rt, &(rt_task_desc){.kind = &open_kind, .args = &po, .args_size = sizeof po,
                                  .naccess = 1, .access = {{h, RT_R}}});
    CHECKF(rt_wait_all(rt) == 0, "%s", rt_error(rt));
    rt_task_release(rt, gate);
    rt_handle_unregister(rt, h);
    rt_handle_unregister(rt, other);
    rt_destroy(rt);
}

/* Records which worker ran it; with `meet` set, waits (up to 10 s) until two tasks run at once. */
typedef struct where_args { _Atomic int *ran_on; _Atomic int *meet; } where_args;
static int record_worker(const rt_ctx *ctx, void *args)
{
    where_args *a = args;
    atomic_fetch_or(a->ran_on, 1 << ctx->worker);
    if (a->meet) {
        atomic_fetch_add(a->meet, 1);
        for (int i = 0; i < 10000 && atomic_load(a->meet) < 2; i++)
            usleep(1000);
    }
    return 0;
}
static rt_kind where_kind = {.name = "where", .cpu = record_worker};

static int ran_on_workers(rt_runtime *rt, int n, _Atomic int *meet)
{
    _Atomic int ran_on = 0;
    where_args a = {&ran_on, meet};
    for (int i = 0; i < n; i++)
        rt_submit(rt, &(rt_task_desc){.kind = &where_kind, .args = &a, .args_size = sizeof a});
    CHECK(rt_wait_all(rt) == 0);
    return atomic_load(&ran_on);
}

TEST(runtime_parked_workers_run_nothing_and_come_back)
{
    rt_runtime *rt = rt_create(&(rt_config){.workers = 4});
    CHECK(rt_active_workers(rt) == 4);
    CHECK(rt_set_active_workers(rt, 2) == 2);
    /* Parking takes effect as each worker ends its task: after one wait, none of 2 and 3 runs. */
    ran_on_workers(rt, 1000, NULL);
    for (int round = 0; round < 5; round++) {
        int ran = ran_on_workers(rt, test_scale(20000), NULL);
        CHECKF(!(ran & ~3), "tasks ran on workers 0x%x with workers 2 and 3 parked", ran);
    }
    CHECK(rt_set_active_workers(rt, 0) == 1 && rt_active_workers(rt) == 1);
    ran_on_workers(rt, 1000, NULL);
    CHECKF(ran_on_workers(rt, 5000, NULL) == 1, "only the owner may run tasks");
    /* Back to four: two tasks that wait for each other finish only if a second worker runs. */
    CHECK(rt_set_active_workers(rt, 99) == 4);
    _Atomic int meet = 0;
    int ran = ran_on_workers(rt, 2, &meet);
    CHECKF(__builtin_popcount((unsigned)ran) == 2, "no worker came back (ran on 0x%x)", ran);
    rt_stats s;
    rt_stats_get(rt, &s);
    CHECKF(s.task_share >= 0 && s.task_share <= 1.0001, "task share %.3f", s.task_share);
    rt_destroy(rt);
}

/* Waits (up to 10 s) until rt_idle_workers says `n`; returns what it said last. */
static int idle_workers_become(rt_runtime *rt, int n)
{
    int idle = rt_idle_workers(rt);
    for (int i = 0; i < 10000 && idle != n; i++, idle = rt_idle_workers(rt))
        usleep(1000);
    return idle;
}

/* The owner is out of the runtime (this thread), so of three workers two may sleep; one that
 * runs a task does not; parked workers are not counted. */
TEST(runtime_idle_workers_are_the_active_ones_asleep)
{
    rt_runtime *rt = rt_create(&(rt_config){.workers = 3});
    int idle = idle_workers_become(rt, 2);
    CHECKF(idle == 2, "%d idle workers with nothing to do, not 2", idle);
    _Atomic int gate = 0, *g = &gate;
    rt_submit(rt, &(rt_task_desc){.kind = &gate_kind, .args = &g, .args_size = sizeof g});
    idle = idle_workers_become(rt, 1);
    CHECKF(idle == 1, "%d idle workers while one runs a task, not 1", idle);
    atomic_store(&gate, 1);
    CHECK(rt_wait_all(rt) == 0);
    rt_set_active_workers(rt, 1);
    idle = idle_workers_become(rt, 0);
    CHECKF(idle == 0, "%d idle workers with the two others parked, not 0", idle);
    rt_destroy(rt);
}

/* A body that costs its thread CPU time (spins until it has), or that waits without any (sleeps:
 * as if another thread had the core meanwhile). */
static double thread_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int burn_body(const rt_ctx *ctx, void *args)
{
    (void)ctx, (void)args;
    double start = thread_cpu_now();
    while (thread_cpu_now() - start < 0.002)
        ;
    return 0;
}
static rt_kind burn_kind = {.name = "burn", .cpu = burn_body};

static int sleep_body(const rt_ctx *ctx, void *args)
{
    (void)ctx, (void)args;
    usleep(20000);
    return 0;
}
static rt_kind sleep_kind = {.name = "sleep", .cpu = sleep_body};

/* Seconds one task of that kind takes on a runtime of one worker at slowdown 50. */
static double slowed_task_s(rt_kind *kind)
{
    rt_runtime *rt = rt_create(&(rt_config){.workers = 1, .slowdown = 50});
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    CHECK(rt_submit(rt, &(rt_task_desc){.kind = kind}) == 0);
    CHECK(rt_wait_all(rt) == 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    rt_destroy(rt);
    return (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
}

/* slowdown stretches a task's CPU time: a body that burned 2 ms of CPU takes at least 50 times
 * that (a floor, whatever the load), and one that spent 20 ms without the CPU is not made 50
 * times later (1 s; the bound, half that, leaves a loaded machine 480 ms to wake it). */
TEST(runtime_slowdown_stretches_cpu_time_not_time_without_the_cpu)
{
    double burned = slowed_task_s(&burn_kind), slept = slowed_task_s(&sleep_kind);
    CHECKF(burned >= 50 * 0.002 * 0.95, "a 2 ms body at slowdown 50 took %.4f s", burned);
    CHECKF(slept < 0.5, "a body 20 ms without the CPU at slowdown 50 took %.4f s", slept);
}

/* This process's threads (/proc/self/task), or -1. */
static int threads_now(void)
{
    char buf[64];
    FILE *f = fopen("/proc/self/status", "r");
    int n = -1;
    while (f && fgets(buf, sizeof buf, f))
        if (sscanf(buf, "Threads: %d", &n) == 1)
            break;
    if (f)
        fclose(f);
    return n;
}

TEST(runtime_create_without_memory_fails_and_leaves_no_thread)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return;   /* their shadow memory needs terabytes of address space: no limit can be set */
#endif
    /* Address space for 64 KB to 32 MB more than this process holds now: 512 workers' queues,
     * pools or thread stacks (8 MB each by default, 64 KB at the very least) run out
     * somewhere, each time in a later place. */
    struct rlimit before;
    CHECK(getrlimit(RLIMIT_AS, &before) == 0);
    int threads = threads_now();
    for (rlim_t margin = 64u << 10; margin <= 32u << 20; margin *= 2) {
        long pages = 0;
        FILE *f = fopen("/proc/self/statm", "r");
        CHECK(f && fscanf(f, "%ld", &pages) == 1);
        if (f)
            fclose(f);
        struct rlimit tight = {(rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + margin,
                               before.rlim_max};
        CHECK(setrlimit(RLIMIT_AS, &tight) == 0);
        rt_runtime *rt = rt_create(&(rt_config){.workers = 512});
        CHECK(setrlimit(RLIMIT_AS, &before) == 0);
        CHECKF(rt == NULL, "512 workers started in %lu more bytes", (unsigned long)margin);
        CHECKF(threads_now() == threads, "%d threads after a failed start, %d before",
               threads_now(), threads);
        rt_destroy(rt);
    }
    /* and a runtime made afterwards works */
    rt_runtime *rt = rt_create(&(rt_config){.workers = 4});
    CHECK(rt != NULL);
    int counter = 0, *p = &counter;
    rt_submit(rt, &(rt_task_desc){.kind = &count_kind, .args = &p, .args_size = sizeof p});
    CHECK(rt_wait_all(rt) == 0 && counter == 1);
    rt_destroy(rt);
}
