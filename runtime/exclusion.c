/* One RT_ACCUM task at a time per handle.
 *
 * Each accumulated handle has a token. A task takes the tokens of all its RT_ACCUM handles
 * before it runs, in address order, and gives them back when it completes, which may be long
 * after its body returned (a device kernel). A task that finds a token taken gives back the
 * ones it took and parks on that handle; the task that returns the token hands the first parked
 * one back to its worker, which tries again. No worker ever blocks. */
#include "internal.h"

#include <stdlib.h>

static int handle_order(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return (x > y) - (x < y);
}

/* t's accumulated handles, in address order. */
static int accum_handles(const rt_task *t, rt_handle **out)
{
    int n = 0;
    for (int i = 0; i < t->naccess; i++)
        if (access_mode(t->access[i]) == RT_ACCUM)
            out[n++] = access_handle(t->access[i]);
    if (n > 1)
        qsort(out, (size_t)n, sizeof *out, handle_order);
    return n;
}

static void give_back(rt_runtime *rt, accum_group *g)
{
    pthread_mutex_lock(&g->lock);
    g->busy = 0;
    rt_task *first = g->parked;
    if (first)
        g->parked = atomic_load_explicit(&first->ready.next, memory_order_relaxed);
    pthread_mutex_unlock(&g->lock);
    if (first)
        rt_task_hand_to(rt, first->worker, first);
}

int rt_accum_acquire(rt_runtime *rt, rt_task *t)
{
    rt_handle *h[RT_MAX_ACCESS];
    int n = accum_handles(t, h);
    for (int i = 0; i < n; i++) {
        accum_group *g = h[i]->accum;
        pthread_mutex_lock(&g->lock);
        if (!g->busy) {
            g->busy = 1;
            pthread_mutex_unlock(&g->lock);
            continue;
        }
        /* Park on this one; the tokens taken so far go back first, under no other lock. */
        atomic_store_explicit(&t->ready.next, NULL, memory_order_relaxed);
        rt_task **tail = &g->parked;
        while (*tail)
            tail = (rt_task **)&(*tail)->ready.next;
        *tail = t;
        pthread_mutex_unlock(&g->lock);
        for (int j = 0; j < i; j++)
            give_back(rt, h[j]->accum);
        return 0;
    }
    t->holds_accum = 1;
    return 1;
}

void rt_accum_release(rt_runtime *rt, rt_task *t)
{
    if (!t->holds_accum)
        return;
    rt_handle *h[RT_MAX_ACCESS];
    int n = accum_handles(t, h);
    t->holds_accum = 0;
    for (int i = 0; i < n; i++)
        give_back(rt, h[i]->accum);
}
