/* Random task DAGs with random access modes: any parallel execution must equal the serial one. */
#include "common/env_switches.h"
#include "runtime/runtime.h"
#include "test.h"

#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_HANDLES = 12, MAX_TASKS = 160 };

typedef struct dag_args {
    int id;
    int n;
    int handle[3];
    rt_mode mode[3];
    int spin;
} dag_args;

typedef struct dag_state {
    uint64_t value[MAX_HANDLES];
    uint64_t seen[MAX_TASKS];     /* what each task observed, written only by that task */
} dag_state;

static dag_state *current;        /* the state the task bodies work on */

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static void apply(dag_state *st, const dag_args *a)
{
    uint64_t seen = 0;
    for (int i = 0; i < a->n; i++) {
        uint64_t *v = &st->value[a->handle[i]];
        switch (a->mode[i]) {
        case RT_R: seen = seen * 31 + *v; break;
        case RT_W: *v = mix((uint64_t)a->id * 7 + (uint64_t)i); break;
        case RT_RW: seen = seen * 31 + *v; *v = mix(*v + (uint64_t)a->id); break;
        case RT_ACCUM: *v += mix((uint64_t)a->id + 1000); break;   /* commutative */
        }
    }
    st->seen[a->id] = seen;
}

static int dag_body(const rt_ctx *ctx, void *p)
{
    (void)ctx;
    dag_args *a = p;
    for (volatile int i = 0; i < a->spin; i++) {
    }
    if (a->spin == 7)
        sched_yield();   /* perturb the interleaving */
    apply(current, a);
    return 0;
}

static rt_kind dag_kind = {.name = "dag", .cpu = dag_body};
static rt_kind dag_kind_hi = {.name = "dag_hi", .cpu = dag_body};

static unsigned next_rand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

/* One random DAG on rt: returns the number of mismatches against the serial run. */
static int run_seed(rt_runtime *rt, unsigned seed)
{
    unsigned s = seed;
    int nh = 2 + (int)(next_rand(&s) % (MAX_HANDLES - 1));
    int nt = 20 + (int)(next_rand(&s) % (MAX_TASKS - 20));
    dag_state par, ser;
    memset(&par, 0, sizeof par);
    memset(&ser, 0, sizeof ser);
    for (int h = 0; h < nh; h++)
        par.value[h] = ser.value[h] = mix((uint64_t)h + seed);
    current = &par;
    rt_handle *handles[MAX_HANDLES];
    for (int h = 0; h < nh; h++)
        handles[h] = rt_handle_register(rt, &par.value[h], sizeof par.value[h], "v");
    rt_task *kept[MAX_TASKS] = {0};
    int bad = 0;
    for (int t = 0; t < nt; t++) {
        dag_args a = {.id = t, .n = 1 + (int)(next_rand(&s) % 3), .spin = (int)(next_rand(&s) % 64)};
        if (a.n > nh)
            a.n = nh;
        rt_task_desc d = {.kind = next_rand(&s) % 4 ? &dag_kind : &dag_kind_hi,
                          .args = &a, .args_size = sizeof a,
                          .priority = (int)(next_rand(&s) % RT_PRIO_LEVELS)};
        for (int i = 0; i < a.n; i++) {
            int h;
            do {   /* distinct handles within a task */
                h = (int)(next_rand(&s) % (unsigned)nh);
            } while ((i > 0 && h == a.handle[0]) || (i > 1 && h == a.handle[1]));
            a.handle[i] = h;
            a.mode[i] = (rt_mode[]){RT_R, RT_W, RT_RW, RT_ACCUM, RT_ACCUM, RT_R}[next_rand(&s) % 6];
            d.access[d.naccess++] = (rt_access){handles[h], a.mode[i]};
        }
        if (t > 0 && next_rand(&s) % 8 == 0) {   /* an explicit edge: harmless, must not break */
            int p = (int)(next_rand(&s) % (unsigned)t);
            if (kept[p])
                d.after[d.nafter++] = kept[p];
        }
        /* Most tasks are not kept: they are recycled as soon as they finish, while the handles'
         * histories still name them. */
        if (next_rand(&s) % 4 == 0) {
            kept[t] = rt_submit_kept(rt, &d);
            CHECK(kept[t] != NULL);
        } else {
            CHECK(rt_submit(rt, &d) == 0);
        }
        apply(&ser, &a);
        if (next_rand(&s) % 32 == 0) {   /* the owner waits on one handle mid-flow and reads it */
            int h = (int)(next_rand(&s) % (unsigned)nh);
            CHECK(rt_wait_handle(rt, handles[h], RT_R) == 0);
            if (par.value[h] != ser.value[h])
                bad++;
        }
    }
    CHECK(rt_wait_all(rt) == 0);
    for (int t = 0; t < nt; t++)
        rt_task_release(rt, kept[t]);   /* NULL for the tasks not kept: a no-op */
    for (int h = 0; h < nh; h++) {
        if (par.value[h] != ser.value[h])
            bad++;
        rt_handle_unregister(rt, handles[h]);
    }
    for (int t = 0; t < nt; t++)
        if (par.seen[t] != ser.seen[t])
            bad++;
    return bad;
}

static void run_workers(int workers, int seeds)
{
    rt_runtime *rt = rt_create(&(rt_config){.workers = workers});
    CHECK(rt != NULL);
    for (int seed = 1; seed <= seeds; seed++) {
        int bad = run_seed(rt, (unsigned)seed * 2654435761u + (unsigned)workers);
        CHECKF(bad == 0, "workers=%d seed=%d: %d values differ from the serial run", workers,
               seed, bad);
        if (bad)
            break;
    }
    rt_stats st;
    rt_stats_get(rt, &st);
    CHECK(st.tasks > 0);
    rt_destroy(rt);
}

/* As on a kernel without membarrier(2) (or a sandbox refusing it): pushers fence. */
TEST(runtime_dag_without_membarrier)
{
    setenv("FRUGAL_MEMBARRIER", "off", 1);
    env_switches_read();
    run_workers(3, test_scale(1000));
    unsetenv("FRUGAL_MEMBARRIER");
    env_switches_read();
}

TEST(runtime_dag_1_worker) { run_workers(1, test_scale(2000)); }
TEST(runtime_dag_2_workers) { run_workers(2, test_scale(3000)); }
TEST(runtime_dag_3_workers) { run_workers(3, test_scale(2000)); }
TEST(runtime_dag_4_workers) { run_workers(4, test_scale(2000)); }
TEST(runtime_dag_8_workers) { run_workers(8, test_scale(1000)); }
TEST(runtime_dag_16_workers) { run_workers(16, test_scale(1000)); }
