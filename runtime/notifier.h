/* Sleeping and waking idle workers without lost wake-ups or wake-up storms.
 *
 * Each worker has a sleep state. A worker with nothing to do announces itself (sleep_prepare),
 * re-checks for work, then either withdraws (sleep_cancel) or sleeps on a futex (sleep_commit).
 * A producer that published work calls notify_one, which wakes at most one announced sleeper and
 * costs one fence and one load when nobody sleeps. Announcing, and the producer's check, are
 * seq_cst: either the sleeper's re-check sees the work or the producer sees the sleeper. Each
 * sleeper is claimed (SLEEPING -> NOTIFIED) by exactly one waker, so a burst of pushes makes one
 * futex_wake per sleeper, not one per push. */
#ifndef FRUGAL_NOTIFIER_H
#define FRUGAL_NOTIFIER_H

#include <stdatomic.h>
#include <stdint.h>

enum { SLEEP_AWAKE = 0, SLEEP_SLEEPING = 1, SLEEP_NOTIFIED = 2 };

typedef struct sleeper {
    _Alignas(64) _Atomic uint32_t state;
} sleeper;

typedef struct notifier {
    _Alignas(64) _Atomic int nsleeping;
    sleeper *sleepers;
    int n;
} notifier;

void notifier_init(notifier *nt, sleeper *sleepers, int n);
void sleep_prepare(notifier *nt, int who);
void sleep_cancel(notifier *nt, int who);
void sleep_commit(notifier *nt, int who);
void notify_one(notifier *nt, unsigned hint);  /* hint spreads wake-ups over sleepers */
void notify_worker(notifier *nt, int who);
void notify_all(notifier *nt);

#endif
