/* The work-stealing deque under concurrent push/take/steal: every item is taken exactly once. */
#include "runtime/deque.h"
#include "test.h"

#include <pthread.h>
#include <stdlib.h>

enum { THIEVES = 3 };

typedef struct stress {
    deque q;
    int nitems;
    _Atomic int *seen;
    _Atomic int owner_done;
} stress;

static void take_item(stress *s, void *x)
{
    intptr_t id = (intptr_t)x - 1;   /* items are id+1: never NULL */
    if (id >= 0 && id < s->nitems)
        atomic_fetch_add(&s->seen[id], 1);
    else
        test_fail(__FILE__, __LINE__, "foreign item %ld", (long)id);
}

static void *thief(void *arg)
{
    stress *s = arg;
    void *batch[DEQUE_MAX_BATCH];
    unsigned r = (unsigned)(uintptr_t)&batch;
    for (;;) {
        r = r * 1103515245u + 12345u;
        int got = deque_steal(&s->q, batch, 1 + (int)((r >> 16) % DEQUE_MAX_BATCH));
        for (int i = 0; i < got; i++)
            take_item(s, batch[i]);
        if (!got && atomic_load(&s->owner_done) && deque_size_hint(&s->q) <= 0)
            break;
    }
    return NULL;
}

static void run_stress(int nitems, unsigned seed)
{
    stress s = {.nitems = nitems};
    CHECK(deque_init(&s.q, 1) == 0);   /* small: the run must grow it under contention */
    s.seen = calloc((size_t)nitems, sizeof *s.seen);
    pthread_t th[THIEVES];
    for (int i = 0; i < THIEVES; i++)
        pthread_create(&th[i], NULL, thief, &s);
    for (int i = 0; i < nitems; i++) {
        CHECK(deque_push(&s.q, (void *)(intptr_t)(i + 1)) == 0);
        seed = seed * 1103515245u + 12345u;
        /* The owner also takes, racing the thieves: mostly fewer than it pushes, so the deque
         * grows while being stolen from; sometimes it drains it, for conflicts at the last item. */
        int takes = (int)((seed >> 16) % 3 == 0);
        if ((seed >> 8) % 4096 == 0)
            takes = 1 << 20;
        for (int k = 0; k < takes; k++) {
            void *x = deque_take(&s.q);
            if (!x)
                break;
            take_item(&s, x);
        }
    }
    void *x;
    while ((x = deque_take(&s.q)))
        take_item(&s, x);
    atomic_store(&s.owner_done, 1);
    for (int i = 0; i < THIEVES; i++)
        pthread_join(th[i], NULL);
    int bad = 0;
    for (int i = 0; i < nitems; i++)
        if (atomic_load(&s.seen[i]) != 1 && bad++ < 5)
            test_fail(__FILE__, __LINE__, "item %d taken %d times", i, atomic_load(&s.seen[i]));
    CHECK(bad == 0);
    free(s.seen);
    deque_destroy(&s.q);
}

TEST(runtime_deque_every_item_once)
{
    for (unsigned seed = 1; seed <= 8; seed++)
        run_stress(test_scale(200000), seed);
}

TEST(runtime_deque_owner_lifo_thief_fifo)
{
    deque q;
    CHECK(deque_init(&q, 4) == 0);
    for (intptr_t i = 1; i <= 100; i++)
        CHECK(deque_push(&q, (void *)i) == 0);
    void *batch[DEQUE_MAX_BATCH];
    CHECK(deque_steal(&q, batch, 3) == 3);   /* oldest first, from the top */
    CHECK(batch[0] == (void *)1 && batch[2] == (void *)3);
    CHECK(deque_take(&q) == (void *)100);     /* newest from the bottom */
    int n = 0;
    while (deque_take(&q))
        n++;
    CHECK(n == 96);
    CHECK(deque_take(&q) == NULL);
    CHECK(deque_steal(&q, batch, DEQUE_MAX_BATCH) == 0);
    CHECK(deque_push(&q, (void *)7) == 0);     /* a lone item can still be stolen */
    CHECK(deque_steal(&q, batch, DEQUE_MAX_BATCH) == 1 && batch[0] == (void *)7);
    deque_destroy(&q);
}
