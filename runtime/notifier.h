/* Sleeping and waking idle workers without lost wake-ups or wake-up storms.
 *
 * Each worker has a sleep state. A worker with nothing to do announces itself (sleep_prepare),
 * re-checks for work, then either withdraws (sleep_cancel) or sleeps on a futex (sleep_commit).
 * Each sleeper is claimed (SLEEPING -> NOTIFIED) by exactly one waker, so a burst of pushes makes
 * one futex_wake per sleeper, not one per push.
 *
 * Announcing, and a waker's check, are ordered so that either the sleeper's re-check sees the
 * work or the waker sees the sleeper. notify_one runs on every push, so its side of that pact
 * must be cheap: a full fence there waits for the push's store to a line that idle thieves keep
 * reading, a cross-core round trip per task. Where the kernel offers membarrier(2), the sleeper
 * pays instead: after announcing it makes every running thread of the process execute a barrier,
 * so a push made before that is visible to its re-check, and one made after sees the sleeper
 * with a plain load. Without membarrier, notify_one fences. */
#ifndef FRUGAL_NOTIFIER_H
#define FRUGAL_NOTIFIER_H

#include <stdatomic.h>
#include <stdint.h>

enum { SLEEP_AWAKE = 0, SLEEP_SLEEPING = 1, SLEEP_NOTIFIED = 2 };
#define SLEEP_LIMIT_MS 100

typedef struct sleeper {
    _Alignas(64) _Atomic uint32_t state;
} sleeper;

typedef struct notifier {
    _Alignas(64) _Atomic int nsleeping;
    sleeper *sleepers;
    int n;
    _Atomic int active;           /* notify_one wakes only sleepers [0, active): the rest park */
    _Atomic int sleeper_fences;   /* membarrier works: sleepers fence for notify_one */
} notifier;

void notifier_init(notifier *nt, sleeper *sleepers, int n);
void rt_sleep_prepare(notifier *nt, int who);
void rt_sleep_cancel(notifier *nt, int who);
/* Sleeps until claimed, or SLEEP_LIMIT_MS at most: then returns 1. A sleeper that wakes by the
 * limit and finds what it should have been woken for (a task handed to it, the end of the
 * owner's wait) shows a lost wake-up, which the runtime counts (rt_stats.late_wakeups): the
 * limit turns such a bug, were there one, into a delay instead of a hang. */
int rt_sleep_commit(notifier *nt, int who);
void rt_notify_one_slow(notifier *nt, unsigned hint);
void notifier_set_active(notifier *nt, int active);
/* Active sleepers (parked ones left out) asleep, or about to be, right now. */
int notifier_asleep(notifier *nt);

/* After a push. hint spreads wake-ups over the active sleepers. */
static inline void notify_one(notifier *nt, unsigned hint)
{
    if (atomic_load_explicit(&nt->sleeper_fences, memory_order_relaxed)) {
        atomic_signal_fence(memory_order_seq_cst);   /* keeps the push before the load */
        if (atomic_load_explicit(&nt->nsleeping, memory_order_relaxed) <= 0)
            return;
    }
    rt_notify_one_slow(nt, hint);
}
void rt_notify_worker(notifier *nt, int who);
void rt_notify_all(notifier *nt);

#endif
