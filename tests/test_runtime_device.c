/* The runtime with devices: data that lives in several memories, tasks for some kinds of worker
 * and not others, tasks that complete after their body returns. An emulated device
 * (emulated_device.c) stands in for a GPU or another machine. */
#include "emulated_device.h"
#include "runtime/runtime.h"
#include "test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- random DAGs over CPU and device workers: the same bytes as a serial run ---- */

enum { VALUES = 12, MAX_TASKS = 160, WIDE = 4 };

/* Handle h holds WIDE uint64 values. The first half of the handles are buffers of their own,
 * the rest parts of one shared buffer (so a device holds one copy of it, and copies move parts),
 * one of them a 2-D part (every other value of its rows). */
typedef struct dag_args {
    int id, n;
    int handle[3];
    rt_mode mode[3];
    uint64_t *seen;                /* what the task read, for the check (written once, by it) */
} dag_args;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

/* What a task does to its handles' values (v[i]: the WIDE values of its i-th access). */
static int apply(void *const *v, int nv, void *p)
{
    const dag_args *a = p;
    (void)nv;
    uint64_t seen = 0;
    for (int i = 0; i < a->n; i++) {
        uint64_t *x = v[i];
        for (int k = 0; k < WIDE; k++) {
            /* a 2-D part's values sit every other uint64 */
            uint64_t *e = a->handle[i] == VALUES - 1 ? &x[2 * k] : &x[k];
            switch (a->mode[i]) {
            case RT_R: seen = seen * 31 + *e; break;
            case RT_W: *e = mix((uint64_t)a->id * 7 + (uint64_t)i + (uint64_t)k); break;
            case RT_RW: seen = seen * 31 + *e; *e = mix(*e + (uint64_t)a->id); break;
            case RT_ACCUM: *e += mix((uint64_t)a->id + 1000 + (uint64_t)k); break;
            }
        }
    }
    a->seen[a->id] = seen;
    return 0;
}

static int on_cpu(const rt_ctx *ctx, void *p)
{
    const dag_args *a = p;
    void *v[3];
    for (int i = 0; i < a->n; i++)
        v[i] = rt_ptr(ctx, i);
    return apply(v, a->n, p);
}

static int on_device(const rt_ctx *ctx, void *p)
{
    const dag_args *a = p;
    return emu_launch(ctx, a->n, apply, a, sizeof *a);
}

static rt_kind cpu_only = {.name = "dag_cpu", .cpu = on_cpu};
static rt_kind device_only = {.name = "dag_device", .emulated = on_device};
static rt_kind either = {.name = "dag_either", .cpu = on_cpu, .emulated = on_device};

static unsigned next_rand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

typedef struct values {
    uint64_t own[VALUES / 2][WIDE];
    uint64_t shared[VALUES / 2 - 1][WIDE];
    uint64_t strided[WIDE * 2];    /* the 2-D part: every other one */
} values;

/* Handles over vals: buffers, parts of a shared buffer, and a 2-D part. */
static void make_handles(rt_runtime *rt, values *vals, rt_handle **whole, rt_handle **h)
{
    for (int i = 0; i < VALUES / 2; i++)
        h[i] = rt_handle_register(rt, vals->own[i], sizeof vals->own[i], "own");
    size_t shared = sizeof vals->shared + sizeof vals->strided;
    *whole = rt_handle_register(rt, vals->shared, shared, "shared");
    for (int i = 0; i < VALUES / 2 - 1; i++)
        h[VALUES / 2 + i] = rt_handle_part(rt, *whole, sizeof vals->shared[0] * (size_t)i, 1,
                                          sizeof vals->shared[i], 0, "part");
    h[VALUES - 1] = rt_handle_part(rt, *whole, sizeof vals->shared, WIDE, sizeof(uint64_t),
                                   2 * sizeof(uint64_t), "strided part");
    for (int i = 0; i < VALUES; i++)
        CHECKF(h[i] != NULL, "handle %d: %s", i, rt_error(rt));
}

/* The data of handle i in vals, as apply sees it. */
static void *data_of(values *vals, int i)
{
    return i < VALUES / 2 ? (void *)vals->own[i]
           : i < VALUES - 1 ? (void *)vals->shared[i - VALUES / 2] : (void *)vals->strided;
}

static int run_seed(rt_runtime *rt, unsigned seed)
{
    unsigned s = seed;
    int nt = 20 + (int)(next_rand(&s) % (MAX_TASKS - 20));
    static values par, ser;
    static uint64_t seen_par[MAX_TASKS], seen_ser[MAX_TASKS];
    for (int i = 0; i < VALUES; i++)
        for (int k = 0; k < WIDE * 2; k++) {
            uint64_t v = mix((uint64_t)(i * 16 + k) + seed);
            if (k < WIDE && i < VALUES - 1)
                ((uint64_t *)data_of(&par, i))[k] = ((uint64_t *)data_of(&ser, i))[k] = v;
            else if (i == VALUES - 1)
                par.strided[k] = ser.strided[k] = v;
        }
    memset(seen_par, 0, sizeof seen_par);
    memset(seen_ser, 0, sizeof seen_ser);
    rt_handle *h[VALUES], *whole;
    make_handles(rt, &par, &whole, h);
    int bad = 0;
    for (int t = 0; t < nt; t++) {
        dag_args a = {.id = t, .n = 1 + (int)(next_rand(&s) % 3), .seen = seen_par};
        rt_kind *kinds[] = {&cpu_only, &device_only, &either};
        rt_task_desc d = {.kind = kinds[next_rand(&s) % 3], .args = &a, .args_size = sizeof a,
                          .priority = (int)(next_rand(&s) % RT_PRIO_LEVELS)};
        for (int i = 0; i < a.n; i++) {
            int x;
            do   /* distinct handles within a task */
                x = (int)(next_rand(&s) % VALUES);
            while ((i > 0 && x == a.handle[0]) || (i > 1 && x == a.handle[1]));
            a.handle[i] = x;
            a.mode[i] = (rt_mode[]){RT_R, RT_W, RT_RW, RT_ACCUM, RT_ACCUM, RT_R}[next_rand(&s) % 6];
            d.access[d.naccess++] = (rt_access){h[x], a.mode[i]};
        }
        CHECK(rt_submit(rt, &d) == 0);
        void *v[3];
        for (int i = 0; i < a.n; i++)
            v[i] = data_of(&ser, a.handle[i]);
        a.seen = seen_ser;
        apply(v, a.n, &a);
        if (next_rand(&s) % 16 == 0) {   /* the host reads one mid-flow: it must see the latest */
            int x = (int)(next_rand(&s) % VALUES);
            CHECK(rt_wait_handle(rt, h[x], RT_R) == 0);
            bad += memcmp(data_of(&par, x), data_of(&ser, x), x == VALUES - 1 ? sizeof par.strided
                                                                            : WIDE * 8) != 0;
        }
    }
    CHECKF(rt_wait_all(rt) == 0, "%s", rt_error(rt));
    rt_handle_unregister(rt, whole);   /* its parts first; every value back in host memory */
    for (int i = 0; i < VALUES / 2; i++)
        rt_handle_unregister(rt, h[i]);
    bad += memcmp(&par, &ser, sizeof par) != 0;
    bad += memcmp(seen_par, seen_ser, sizeof seen_par) != 0;
    return bad;
}

static void run_mixed(int cpus, int devices, int seeds)
{
    emu_device *emu[2];
    rt_config cfg = {.workers = cpus, .ndevices = devices};
    for (int i = 0; i < devices; i++) {
        emu[i] = emu_create(i ? 20 : 0);   /* one answers at once, one after a while */
        cfg.devices[i] = emu_as_device(emu[i], i ? "emu1" : "emu0");
    }
    rt_runtime *rt = rt_create(&cfg);
    CHECK(rt != NULL);
    for (int seed = 1; seed <= seeds; seed++) {
        int bad = run_seed(rt, (unsigned)seed * 2654435761u + (unsigned)(cpus * 7 + devices));
        CHECKF(bad == 0, "cpus=%d devices=%d seed=%d: %d values differ from the serial run",
               cpus, devices, seed, bad);
        if (bad)
            break;
    }
    rt_stats st;
    rt_stats_get(rt, &st);
    CHECK(st.to_device.count > 0 && st.to_host.count > 0);   /* data did move both ways */
    rt_destroy(rt);
    for (int i = 0; i < devices; i++)
        emu_destroy(emu[i]);
}

TEST(runtime_device_dag_1_cpu_1_device) { run_mixed(1, 1, test_scale(60)); }
TEST(runtime_device_dag_2_cpus_1_device) { run_mixed(2, 1, test_scale(60)); }
TEST(runtime_device_dag_3_cpus_2_devices) { run_mixed(3, 2, test_scale(60)); }

/* ---- what coherence promises ---- */

static int add_one(void *const *v, int n, void *p)
{
    (void)n, (void)p;
    float *x = v[0];
    for (int i = 0; i < 1024; i++)
        x[i] += 1;
    return 0;
}

static int add_one_on_device(const rt_ctx *ctx, void *p) { return emu_launch(ctx, 1, add_one, p, 0); }
static rt_kind device_add = {.name = "device_add", .emulated = add_one_on_device};

/* A chain of device tasks on one handle moves its data to the device once, and back once, when
 * the host reads it; the host then sees what the device computed. */
TEST(runtime_device_chain_moves_data_once)
{
    emu_device *emu = emu_create(10);
    rt_runtime *rt = rt_create(&(rt_config){.workers = 2, .ndevices = 1,
                                            .devices = {emu_as_device(emu, "emu")}});
    static float x[1024];
    rt_handle *h = rt_handle_register(rt, x, sizeof x, "x");
    for (int i = 0; i < 20; i++)
        CHECK(rt_submit(rt, &(rt_task_desc){.kind = &device_add, .naccess = 1,
                                            .access = {{h, RT_RW}}}) == 0);
    CHECK(rt_wait_all(rt) == 0);
    rt_stats st;
    rt_stats_get(rt, &st);
    CHECKF(st.to_device.count == 1 && st.to_host.count == 0, "%llu to the device, %llu back",
           (unsigned long long)st.to_device.count, (unsigned long long)st.to_host.count);
    CHECK(x[0] == 0);   /* the host copy is stale until the host asks */
    CHECK(rt_wait_handle(rt, h, RT_R) == 0);
    CHECK(x[0] == 20 && x[1023] == 20);
    rt_stats_get(rt, &st);
    CHECK(st.to_host.count == 1 && st.to_host.bytes == sizeof x);
    CHECK(st.kinds[0].count_by[RT_WORKER_EMULATED] == 20);
    rt_handle_unregister(rt, h);
    rt_destroy(rt);
    emu_destroy(emu);
}

/* A device whose tasks complete only through its worker's poll: a chain of them runs to the end
 * (a worker asleep with work in flight would hang), as the random DAGs do. */
TEST(runtime_device_completes_through_its_workers_poll)
{
    emu_device *emu = emu_create(300);   /* longer than a worker spins idle before it sleeps */
    rt_runtime *rt = rt_create(&(rt_config){.workers = 2, .ndevices = 1,
                                            .devices = {emu_as_polled_device(emu, "polled")}});
    static float x[1024];
    memset(x, 0, sizeof x);
    rt_handle *h = rt_handle_register(rt, x, sizeof x, "x");
    for (int i = 0; i < 50; i++)
        CHECK(rt_submit(rt, &(rt_task_desc){.kind = &device_add, .naccess = 1,
                                            .access = {{h, RT_RW}}}) == 0);
    CHECKF(rt_wait_handle(rt, h, RT_R) == 0, "%s", rt_error(rt));
    CHECK(x[0] == 50 && x[1023] == 50);
    rt_stats st;
    rt_stats_get(rt, &st);
    CHECKF(st.sleeps_in_flight == 0, "the device's worker slept %llu times with work running",
           (unsigned long long)st.sleeps_in_flight);
    rt_handle_unregister(rt, h);
    rt_destroy(rt);
    emu_destroy(emu);
    emu = emu_create(0);
    rt = rt_create(&(rt_config){.workers = 3, .ndevices = 1,
                                .devices = {emu_as_polled_device(emu, "polled")}});
    for (int seed = 1; seed <= test_scale(20); seed++)
        CHECKF(run_seed(rt, (unsigned)seed * 40503u) == 0, "seed %d", seed);
    rt_destroy(rt);
    emu_destroy(emu);
}

/* Claimed units of work: a unit taken elsewhere before its tasks start runs none of them and
 * leaves its data as it was (the device's copy stays the valid one); an open one
 * runs here, and once it has, nobody else can take it. */
static int copy_first(const rt_ctx *ctx, void *p)
{
    *(float *)p = *(const float *)rt_ptr(ctx, 0);
    return 0;
}

typedef struct seen_at { float *at; } seen_at;
static int record_first(const rt_ctx *ctx, void *p)
{
    return copy_first(ctx, ((seen_at *)p)->at);
}
static rt_kind record = {.name = "record", .cpu = record_first};

TEST(runtime_claimed_work_runs_once)
{
    enum { UNITS = 8 };
    emu_device *emu = emu_create(5);
    rt_runtime *rt = rt_create(&(rt_config){.workers = 2, .ndevices = 1,
                                            .devices = {emu_as_device(emu, "emu")}});
    static float y[UNITS][1024], seen[UNITS];
    _Atomic int claim[UNITS];
    rt_handle *h[UNITS];
    for (int u = 0; u < UNITS; u++) {
        atomic_init(&claim[u], u % 2 ? RT_CLAIM_ELSEWHERE : RT_CLAIM_OPEN);
        h[u] = rt_handle_register(rt, y[u], sizeof y[u], "y");
        CHECK(rt_submit(rt, &(rt_task_desc){.kind = &device_add, .naccess = 1,   /* on the device */
                                            .access = {{h[u], RT_RW}}}) == 0);
        for (int i = 0; i < 2; i++)
            CHECK(rt_submit(rt, &(rt_task_desc){.kind = &device_add, .naccess = 1,
                                                .access = {{h[u], RT_RW}}, .claim = &claim[u]}) == 0);
        seen_at a = {&seen[u]};
        CHECK(rt_submit(rt, &(rt_task_desc){.kind = &record, .args = &a, .args_size = sizeof a,
                                            .naccess = 1, .access = {{h[u], RT_R}}}) == 0);
    }
    CHECKF(rt_wait_all(rt) == 0, "%s", rt_error(rt));
    for (int u = 0; u < UNITS; u++) {
        CHECKF(seen[u] == (u % 2 ? 1 : 3), "unit %d: %g", u, seen[u]);
        CHECK(atomic_load(&claim[u]) == (u % 2 ? RT_CLAIM_ELSEWHERE : RT_CLAIM_HERE));
        int open = RT_CLAIM_OPEN;   /* what ran here cannot be taken any more */
        CHECK(!atomic_compare_exchange_strong(&claim[u], &open, RT_CLAIM_ELSEWHERE));
    }
    rt_stats st;
    rt_stats_get(rt, &st);
    CHECK(st.kinds[0].count_by[RT_WORKER_EMULATED] == UNITS + UNITS);   /* 1 each, 2 of 4 units */
    for (int u = 0; u < UNITS; u++)
        rt_handle_unregister(rt, h[u]);
    CHECK(y[0][0] == 3 && y[1][0] == 1 && y[1][1023] == 1);
    rt_destroy(rt);
    emu_destroy(emu);
}

/* A kind no worker present can run is refused, with its name. */
TEST(runtime_kind_without_a_worker_is_an_error)
{
    rt_runtime *rt = rt_create(&(rt_config){.workers = 2});
    static float x[4];
    rt_handle *h = rt_handle_register(rt, x, sizeof x, "x");
    CHECK(rt_submit(rt, &(rt_task_desc){.kind = &device_add, .naccess = 1,
                                        .access = {{h, RT_RW}}}) == -1);
    CHECKF(strstr(rt_error(rt), "device_add") && strstr(rt_error(rt), "no implementation for the "
           "workers here (cpu)"), "%s", rt_error(rt));
    rt_clear_error(rt);
    rt_handle_unregister(rt, h);
    rt_destroy(rt);
}

/* A device that fails: a kernel, then a copy; the run stops with the device named. */
static int fail_kernel(void *const *v, int n, void *p)
{
    (void)v, (void)n, (void)p;
    return 1;
}
static int failing_on_device(const rt_ctx *ctx, void *p) { return emu_launch(ctx, 1, fail_kernel, p, 0); }
static rt_kind device_fails = {.name = "device_fails", .emulated = failing_on_device};

TEST(runtime_device_failures_name_the_device)
{
    emu_device *emu = emu_create(1);
    rt_runtime *rt = rt_create(&(rt_config){.workers = 2, .ndevices = 1,
                                            .devices = {emu_as_device(emu, "gpu0")}});
    static float x[1024];
    rt_handle *h = rt_handle_register(rt, x, sizeof x, "x");
    CHECK(rt_submit(rt, &(rt_task_desc){.kind = &device_fails, .naccess = 1,
                                        .access = {{h, RT_RW}}}) == 0);
    CHECK(rt_submit(rt, &(rt_task_desc){.kind = &device_add, .naccess = 1,
                                        .access = {{h, RT_RW}}}) == 0);
    CHECK(rt_wait_all(rt) == -1);
    CHECKF(strstr(rt_error(rt), "device_fails") && strstr(rt_error(rt), "gpu0"), "%s", rt_error(rt));
    rt_clear_error(rt);
    emu_fail_copies_after(emu, 0);
    static float y[1024];
    rt_handle *hy = rt_handle_register(rt, y, sizeof y, "y");
    CHECK(rt_submit(rt, &(rt_task_desc){.kind = &device_add, .naccess = 1,
                                        .access = {{hy, RT_RW}}}) == 0);
    CHECK(rt_wait_all(rt) == -1);
    CHECKF(strstr(rt_error(rt), "copying 'y' to device gpu0 failed") &&
           strstr(rt_error(rt), "injected"), "%s", rt_error(rt));
    rt_clear_error(rt);
    emu_fail_copies_after(emu, -1);
    emu_memory_limit(emu, 1);   /* a device whose memory is full */
    static float z[1024];
    rt_handle *hz = rt_handle_register(rt, z, sizeof z, "z");
    CHECK(rt_submit(rt, &(rt_task_desc){.kind = &device_add, .naccess = 1,
                                        .access = {{hz, RT_RW}}}) == 0);
    CHECK(rt_wait_all(rt) == -1);
    CHECKF(strstr(rt_error(rt), "device gpu0: out of memory for 'z'"), "%s", rt_error(rt));
    rt_clear_error(rt);
    rt_handle_unregister(rt, h);
    rt_handle_unregister(rt, hy);
    rt_handle_unregister(rt, hz);
    rt_destroy(rt);
    emu_destroy(emu);
}

/* ---- completion from outside a body ---- */

typedef struct pending { rt_runtime *rt; rt_task *task; } pending;
static pending waiting_one;
static _Atomic int during;   /* tasks that ran while the pending one was out */

static void *complete_later(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 30 * 1000 * 1000};
    nanosleep(&ts, NULL);
    rt_task_complete(waiting_one.rt, waiting_one.task, 0, NULL);
    return NULL;
}

static pthread_t completer;
static int start_pending(const rt_ctx *ctx, void *p)
{
    (void)p;
    waiting_one = (pending){ctx->rt, ctx->task};
    pthread_create(&completer, NULL, complete_later, NULL);
    return RT_PENDING;
}
static int count_during(const rt_ctx *ctx, void *p)
{
    (void)ctx, (void)p;
    atomic_fetch_add(&during, 1);
    return 0;
}
static int after_pending(const rt_ctx *ctx, void *p)
{
    (void)ctx;
    *(int *)rt_ptr(ctx, 0) = atomic_load(&during) + *(int *)p;
    return 0;
}
static rt_kind pending_kind = {.name = "pending", .cpu = start_pending};
static rt_kind during_kind = {.name = "during", .cpu = count_during};
static rt_kind after_kind = {.name = "after", .cpu = after_pending};

/* A body that returns RT_PENDING frees its worker (with one worker, the others run meanwhile);
 * its successors start only when another thread completes it. */
TEST(runtime_completion_from_another_thread)
{
    rt_runtime *rt = rt_create(&(rt_config){.workers = 1});
    static int slot;
    rt_handle *h = rt_handle_register(rt, &slot, sizeof slot, "slot");
    CHECK(rt_submit(rt, &(rt_task_desc){.kind = &pending_kind, .naccess = 1,
                                        .access = {{h, RT_W}}}) == 0);
    for (int i = 0; i < 100; i++)
        CHECK(rt_submit(rt, &(rt_task_desc){.kind = &during_kind}) == 0);
    int base = 1000;
    CHECK(rt_submit(rt, &(rt_task_desc){.kind = &after_kind, .args = &base,
                                        .args_size = sizeof base, .naccess = 1,
                                        .access = {{h, RT_RW}}}) == 0);
    CHECK(rt_wait_all(rt) == 0);
    pthread_join(completer, NULL);
    CHECKF(slot == 1100, "the successor saw %d tasks run before it", slot - 1000);
    rt_stats st;
    rt_stats_get(rt, &st);
    CHECK(st.tasks == 102);
    rt_handle_unregister(rt, h);
    rt_destroy(rt);
}

/* ---- regions ---- */

TEST(runtime_regions_may_not_overlap)
{
    rt_runtime *rt = rt_create(&(rt_config){.workers = 1});
    static char buf[1000];
    rt_handle *a = rt_handle_register(rt, buf, 600, "a");
    CHECK(a != NULL);
    CHECK(rt_handle_register(rt, buf + 500, 100, "b") == NULL);
    CHECKF(strstr(rt_error(rt), "'b'") && strstr(rt_error(rt), "overlaps 'a'"), "%s", rt_error(rt));
    rt_clear_error(rt);
    rt_handle *c = rt_handle_register(rt, buf + 600, 400, "c");   /* adjacent: fine */
    CHECK(c != NULL);
    /* parts: rows of 10 bytes every 100; another part crossing one row overlaps it */
    rt_handle *p1 = rt_handle_part(rt, a, 0, 6, 10, 100, "p1");
    CHECK(p1 != NULL);
    CHECK(rt_handle_part(rt, a, 10, 6, 90, 100, "p2") != NULL);   /* the rest of each row */
    CHECK(rt_handle_part(rt, a, 205, 1, 10, 0, "p3") == NULL);
    CHECKF(strstr(rt_error(rt), "'p3' overlaps 'p1'"), "%s", rt_error(rt));
    rt_clear_error(rt);
    CHECK(rt_handle_part(rt, a, 550, 1, 100, 0, "past the end") == NULL);
    rt_clear_error(rt);
    /* a buffer with parts is used through them */
    CHECK(rt_submit(rt, &(rt_task_desc){.kind = &during_kind, .naccess = 1,
                                        .access = {{a, RT_R}}}) == -1);
    CHECKF(strstr(rt_error(rt), "split into parts"), "%s", rt_error(rt));
    rt_clear_error(rt);
    rt_handle_unregister(rt, a);
    rt_handle *b = rt_handle_register(rt, buf + 500, 100, "b");   /* free again */
    CHECK(b != NULL);
    rt_handle_unregister(rt, b);
    rt_handle_unregister(rt, c);
    rt_destroy(rt);
}

/* ---- placement's energy term ---- */

static int spin_on_cpu(const rt_ctx *ctx, void *p)
{
    (void)ctx, (void)p;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 2000000L);
    return 0;
}

static int nothing(void *const *v, int n, void *p)
{
    (void)v, (void)n, (void)p;
    return 0;
}

static int nothing_on_device(const rt_ctx *ctx, void *p) { return emu_launch(ctx, 1, nothing, p, 0); }
static rt_kind slow_cpu_fast_device = {.name = "slow_cpu_fast_device", .cpu = spin_on_cpu,
                                       .emulated = nothing_on_device};

/* 120 independent tasks that take 2 ms on a CPU worker and about 0.1 ms on the device, after
 * 12 one at a time so that both are measured; returns how many of the 120 ran on the device.
 * park: the device parked from the start. */
static uint64_t ran_on_device_parked(const rt_energy_model *m, int park)
{
    emu_device *emu = emu_create(100);
    rt_runtime *rt = rt_create(&(rt_config){.workers = 2, .ndevices = 1,
                                            .devices = {emu_as_device(emu, "emu")}});
    if (m)
        rt_set_placement_energy(rt, m);
    rt_park_devices(rt, park);
    static uint64_t cells[132][8];
    rt_handle *h[132];
    for (int i = 0; i < 132; i++) {
        h[i] = rt_handle_register(rt, cells[i], sizeof cells[i], "cell");
        CHECK(rt_submit(rt, &(rt_task_desc){.kind = &slow_cpu_fast_device, .naccess = 1,
                                            .access = {{h[i], RT_W}}}) == 0);
        if (i < 12)
            CHECK(rt_wait_all(rt) == 0);
        if (i == 11)
            rt_stats_reset(rt);
    }
    CHECK(rt_wait_all(rt) == 0);
    rt_stats st;
    rt_stats_get(rt, &st);
    const rt_kind_stats *k = NULL;
    for (int i = 0; i < st.nkinds; i++)
        if (!strcmp(st.kinds[i].name, slow_cpu_fast_device.name))
            k = &st.kinds[i];
    uint64_t on_device = k ? k->count_by[RT_WORKER_EMULATED] : 0;
    CHECK(k && on_device + k->count_by[RT_WORKER_CPU] == 120);
    for (int i = 0; i < 132; i++)
        rt_handle_unregister(rt, h[i]);
    rt_destroy(rt);
    emu_destroy(emu);
    return on_device;
}

static uint64_t ran_on_device(const rt_energy_model *m)
{
    return ran_on_device_parked(m, 0);
}

/* A parked device (a power budget's last resort) gets none of the tasks the CPU can run, by
 * time or by energy; a task only it can run still runs there. */
TEST(runtime_device_parked_takes_only_what_the_cpu_cannot_run)
{
    rt_energy_model m = {RT_PLACE_ENERGY, {0}, 0.1, -1};
    m.active_w[RT_WORKER_CPU] = 500, m.active_w[RT_WORKER_EMULATED] = 5;   /* the device cheaper */
    CHECK(ran_on_device_parked(NULL, 1) == 0);
    CHECK(ran_on_device_parked(&m, 1) == 0);
    emu_device *emu = emu_create(10);
    rt_runtime *rt = rt_create(&(rt_config){.workers = 2, .ndevices = 1,
                                            .devices = {emu_as_device(emu, "emu")}});
    rt_park_devices(rt, 1);
    static float x[1024];
    rt_handle *h = rt_handle_register(rt, x, sizeof x, "x");
    CHECK(rt_submit(rt, &(rt_task_desc){.kind = &device_add, .naccess = 1,
                                        .access = {{h, RT_RW}}}) == 0);
    CHECK(rt_wait_handle(rt, h, RT_R) == 0 && x[0] == 1);
    rt_handle_unregister(rt, h);
    rt_destroy(rt);
    emu_destroy(emu);
}

/* The device is about twenty times faster and draws a hundred times the power of a core: by
 * time the device takes most tasks; by energy the cores do; with a 0% slowdown cap energy may
 * not give up any time, and chooses as time does. */
TEST(runtime_device_placement_weighs_joules_when_asked)
{
    rt_energy_model m = {RT_PLACE_ENERGY, {0}, 0.1, -1};
    m.active_w[RT_WORKER_CPU] = 5, m.active_w[RT_WORKER_EMULATED] = 500;
    uint64_t by_time = ran_on_device(NULL), by_energy = ran_on_device(&m);
    m.max_slowdown = 0;
    uint64_t capped = ran_on_device(&m);
    m.max_slowdown = -1, m.objective = RT_PLACE_EDP;
    uint64_t by_edp = ran_on_device(&m);
    CHECKF(by_time > 60 && by_energy < 30 && capped > 60 && by_edp < by_time,
           "on the device: %llu by time, %llu by energy, %llu with a 0%% cap, %llu by EDP",
           (unsigned long long)by_time, (unsigned long long)by_energy,
           (unsigned long long)capped, (unsigned long long)by_edp);
}
