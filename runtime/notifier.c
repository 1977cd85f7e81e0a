#include "notifier.h"
#include "common/env_switches.h"

#include <errno.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Returns at once if *addr != expected; spurious returns are fine, the caller loops. 1 when the
 * time ran out. */
static int futex_wait(_Atomic uint32_t *addr, uint32_t expected, const struct timespec *limit)
{
    return syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, expected, limit, NULL, 0) &&
           errno == ETIMEDOUT;
}

static void futex_wake(_Atomic uint32_t *addr)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* A barrier on every running thread of the process, or -1 where the kernel does not offer it. */
static int barrier_everywhere(int cmd)
{
    return (int)syscall(SYS_membarrier, cmd, 0, 0);
}

void notifier_init(notifier *nt, sleeper *sleepers, int n)
{
    atomic_init(&nt->nsleeping, 0);
    const char *knob = env_switch_value(ENV_MEMBARRIER);   /* "off": behave as where it is missing */
    atomic_init(&nt->sleeper_fences,
                !(knob && !strcmp(knob, "off")) &&
                    barrier_everywhere(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0);
    nt->sleepers = sleepers;
    nt->n = n;
    atomic_init(&nt->active, n);
    for (int i = 0; i < n; i++)
        atomic_init(&sleepers[i].state, SLEEP_AWAKE);
}

void rt_sleep_prepare(notifier *nt, int who)
{
    atomic_store_explicit(&nt->sleepers[who].state, SLEEP_SLEEPING, memory_order_seq_cst);
    atomic_fetch_add_explicit(&nt->nsleeping, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&nt->sleeper_fences, memory_order_relaxed) &&
        barrier_everywhere(MEMBARRIER_CMD_PRIVATE_EXPEDITED))
        atomic_store(&nt->sleeper_fences, 0);   /* refused after all: pushers fence from now on */
}

void rt_sleep_cancel(notifier *nt, int who)
{
    uint32_t expected = SLEEP_SLEEPING;
    /* If a waker claimed us meanwhile it has already taken us off the count. */
    if (atomic_compare_exchange_strong(&nt->sleepers[who].state, &expected, SLEEP_AWAKE))
        atomic_fetch_sub_explicit(&nt->nsleeping, 1, memory_order_relaxed);
    else
        atomic_store_explicit(&nt->sleepers[who].state, SLEEP_AWAKE, memory_order_relaxed);
}

int rt_sleep_commit(notifier *nt, int who)
{
    static const struct timespec limit = {0, SLEEP_LIMIT_MS * 1000000L};
    _Atomic uint32_t *state = &nt->sleepers[who].state;
    while (atomic_load_explicit(state, memory_order_acquire) == SLEEP_SLEEPING)
        if (futex_wait(state, SLEEP_SLEEPING, &limit)) {
            uint32_t expected = SLEEP_SLEEPING;   /* nobody claimed us: withdraw */
            if (atomic_compare_exchange_strong(state, &expected, SLEEP_AWAKE)) {
                atomic_fetch_sub_explicit(&nt->nsleeping, 1, memory_order_relaxed);
                return 1;
            }
        }
    atomic_store_explicit(state, SLEEP_AWAKE, memory_order_relaxed);
    return 0;
}

static int claim(notifier *nt, int who)
{
    uint32_t expected = SLEEP_SLEEPING;
    if (atomic_load_explicit(&nt->sleepers[who].state, memory_order_relaxed) != SLEEP_SLEEPING ||
        !atomic_compare_exchange_strong(&nt->sleepers[who].state, &expected, SLEEP_NOTIFIED))
        return 0;
    atomic_fetch_sub_explicit(&nt->nsleeping, 1, memory_order_relaxed);
    futex_wake(&nt->sleepers[who].state);
    return 1;
}

/* A read-modify-write rather than fence + load: as much a full barrier on x86, and one that
 * ThreadSanitizer understands. */
static int anyone_sleeping(notifier *nt)
{
    return atomic_fetch_add_explicit(&nt->nsleeping, 0, memory_order_seq_cst) > 0;
}

void rt_notify_one_slow(notifier *nt, unsigned hint)
{
    if (!atomic_load_explicit(&nt->sleeper_fences, memory_order_relaxed) && !anyone_sleeping(nt))
        return;
    unsigned active = (unsigned)atomic_load_explicit(&nt->active, memory_order_relaxed);
    for (unsigned i = 0; i < active; i++)
        if (claim(nt, (int)((hint + i) % active)))
            return;
}

void notifier_set_active(notifier *nt, int active)
{
    atomic_store(&nt->active, active < 1 ? 1 : active > nt->n ? nt->n : active);
}

void rt_notify_worker(notifier *nt, int who)
{
    if (anyone_sleeping(nt))
        claim(nt, who);
}

void rt_notify_all(notifier *nt)
{
    if (!anyone_sleeping(nt))
        return;
    for (int i = 0; i < nt->n; i++)
        claim(nt, i);
}

int notifier_asleep(notifier *nt)
{
    int active = atomic_load_explicit(&nt->active, memory_order_relaxed), asleep = 0;
    for (int i = 0; i < active; i++)
        asleep += atomic_load_explicit(&nt->sleepers[i].state, memory_order_relaxed) == SLEEP_SLEEPING;
    return asleep;
}
