#include "deque.h"

#include <stdlib.h>

static deque_array *array_new(int64_t capacity)
{
    deque_array *a = malloc(sizeof *a + (size_t)capacity * sizeof(a->slot[0]));
    if (!a)
        return NULL;
    a->mask = capacity - 1;
    a->older = NULL;
    return a;
}

int deque_init(deque *q, int64_t capacity)
{
    int64_t cap = 4 * DEQUE_MAX_BATCH;
    while (cap < capacity)
        cap *= 2;
    deque_array *a = array_new(cap);
    if (!a)
        return -1;
    atomic_init(&q->top, 0);
    atomic_init(&q->bottom, 0);
    q->top_seen = 0;
    atomic_init(&q->array, a);
    pthread_mutex_init(&q->thieves, NULL);
    return 0;
}

void deque_destroy(deque *q)
{
    deque_array *a = atomic_load_explicit(&q->array, memory_order_relaxed);
    while (a) {
        deque_array *older = a->older;
        free(a);
        a = older;
    }
    pthread_mutex_destroy(&q->thieves);
}

/* Owner only: copy live items [t, b) into an array twice the size. */
static deque_array *grow(deque *q, deque_array *a, int64_t b, int64_t t)
{
    deque_array *bigger = array_new(2 * (a->mask + 1));
    if (!bigger)
        return NULL;
    for (int64_t i = t; i < b; i++) {
        void *x = atomic_load_explicit(&a->slot[i & a->mask], memory_order_relaxed);
        atomic_store_explicit(&bigger->slot[i & bigger->mask], x, memory_order_relaxed);
    }
    bigger->older = a;
    atomic_store_explicit(&q->array, bigger, memory_order_release);
    return bigger;
}

/* The fast path (deque.h) found the array full as far as it knew. */
int deque_push_slow(deque *q, void *item)
{
    int64_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed);
    deque_array *a = atomic_load_explicit(&q->array, memory_order_relaxed);
    int64_t t = q->top_seen = atomic_load_explicit(&q->top, memory_order_acquire);
    if (b - t > a->mask - DEQUE_MAX_BATCH) {
        a = grow(q, a, b, t);   /* the item goes into the new array */
        if (!a)
            return -1;
    }
    atomic_store_explicit(&a->slot[b & a->mask], item, memory_order_relaxed);
    atomic_store_explicit(&q->bottom, b + 1, memory_order_release);
    return 0;
}

/* Claims slot bottom-1 if no thief holds it; returns 0 on a conflict with a thief. */
static int claim_bottom(deque *q, int64_t *slot)
{
    int64_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed) - 1;
    atomic_store_explicit(&q->bottom, b, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    int64_t t = atomic_load_explicit(&q->top, memory_order_seq_cst);
    if (t <= b) {
        *slot = b;
        return 1;
    }
    atomic_store_explicit(&q->bottom, b + 1, memory_order_relaxed);
    return 0;
}

void *deque_take(deque *q)
{
    int64_t b;
    if (!claim_bottom(q, &b)) {
        /* Empty, or a thief is mid-batch: settle it under the thieves' lock. */
        pthread_mutex_lock(&q->thieves);
        int ok = claim_bottom(q, &b);
        pthread_mutex_unlock(&q->thieves);
        if (!ok)
            return NULL;
    }
    deque_array *a = atomic_load_explicit(&q->array, memory_order_relaxed);
    return atomic_load_explicit(&a->slot[b & a->mask], memory_order_relaxed);
}

int deque_steal(deque *q, void **out, int max)
{
    if (max > DEQUE_MAX_BATCH)
        max = DEQUE_MAX_BATCH;
    if (max < 1 || deque_size_hint(q) <= 0 || pthread_mutex_trylock(&q->thieves))
        return 0;
    int64_t t = atomic_load_explicit(&q->top, memory_order_relaxed);
    int64_t n = atomic_load_explicit(&q->bottom, memory_order_acquire) - t;
    /* Load the array before advancing top: once top moves, a growing owner no longer copies the
     * slots we claim into its new array, but this one keeps them. */
    deque_array *a = atomic_load_explicit(&q->array, memory_order_acquire);
    int64_t k = n / 2 > max ? max : n / 2 > 0 ? n / 2 : 1;
    int got = 0;
    if (n > 0) {
        atomic_store_explicit(&q->top, t + k, memory_order_relaxed);
        atomic_thread_fence(memory_order_seq_cst);
        int64_t b = atomic_load_explicit(&q->bottom, memory_order_seq_cst);
        if (t + k > b) {
            /* The owner took from below meanwhile: back off rather than split hairs. */
            atomic_store_explicit(&q->top, t, memory_order_relaxed);
        } else {
            for (int64_t i = 0; i < k; i++)
                out[got++] = atomic_load_explicit(&a->slot[(t + i) & a->mask], memory_order_relaxed);
        }
    }
    pthread_mutex_unlock(&q->thieves);
    return got;
}
