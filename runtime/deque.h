/* Work-stealing deque: the owner pushes and takes at the bottom without locks; thieves take a
 * batch (up to half the items) from the top, one thief at a time under a lock.
 *
 * This is Cilk's THE protocol extended to batches: a thief advances top by k, fences, and backs
 * off if that crossed bottom; the owner decrements bottom, fences, and falls back to the lock only
 * when it meets top. The seq_cst fences on both sides mean at least one of them sees the other.
 * Batches matter because moving a task between cores costs more than running a small one.
 * The array grows when full; old arrays live until the deque is destroyed because a thief may
 * still be reading one. */
#ifndef FRUGAL_DEQUE_H
#define FRUGAL_DEQUE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

typedef struct deque_array {
    int64_t mask;                 /* capacity - 1, capacity a power of two */
    struct deque_array *older;    /* retired arrays, freed with the deque */
    _Atomic(void *) slot[];
} deque_array;

typedef struct deque {
    _Alignas(64) _Atomic int64_t top;
    _Alignas(64) _Atomic int64_t bottom;
    int64_t top_seen;             /* owner only: top as last read (see deque_push) */
    _Atomic(deque_array *) array;
    pthread_mutex_t thieves;
} deque;

#define DEQUE_MAX_BATCH 16

int deque_init(deque *q, int64_t capacity);
void deque_destroy(deque *q);
int deque_push_slow(deque *q, void *item);
void *deque_take(deque *q);             /* owner only; NULL when empty */
/* Any thread: moves up to max (<= DEQUE_MAX_BATCH) of the oldest items into out, returns how
 * many. 0 means empty or busy with another thief. */
int deque_steal(deque *q, void **out, int max);

/* Owner only; -1 if memory ran out. */
static inline int deque_push(deque *q, void *item)
{
    int64_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed);
    deque_array *a = atomic_load_explicit(&q->array, memory_order_relaxed);
    /* A thief may have advanced top by up to a batch and be about to back off: keep that much
     * headroom so the slot written here never holds a live item. Top only grows otherwise, so an
     * old copy of it overstates the size: thieves write top all the time, and reading it on every
     * push would cost a cache miss each. */
    if (b - q->top_seen > a->mask - DEQUE_MAX_BATCH)
        return deque_push_slow(q, item);
    atomic_store_explicit(&a->slot[b & a->mask], item, memory_order_relaxed);
    /* Release on bottom publishes the slot and the item's contents to thieves. */
    atomic_store_explicit(&q->bottom, b + 1, memory_order_release);
    return 0;
}

/* Size with seq_cst loads, for a sleeper's last look (ordered against producers' fences). */
static inline int64_t deque_size_ordered(deque *q)
{
    return atomic_load(&q->bottom) - atomic_load(&q->top);
}

/* Owner only: whether the deque holds more than n items. Reads the thieves' top (a line they
 * write on every steal) only when the copy from the last read says it might. */
static inline int deque_owner_holds_more_than(deque *q, int64_t n)
{
    int64_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed);
    if (b - q->top_seen <= n)
        return 0;
    q->top_seen = atomic_load_explicit(&q->top, memory_order_relaxed);
    return b - q->top_seen > n;
}

/* A racy hint, for deciding whether to bother: may be stale by the time it returns. */
static inline int64_t deque_size_hint(deque *q)
{
    return atomic_load_explicit(&q->bottom, memory_order_relaxed) -
           atomic_load_explicit(&q->top, memory_order_relaxed);
}

#endif
