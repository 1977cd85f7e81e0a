/* Fixed-size object pool with per-worker caches, for tasks and dependency edges.
 *
 * Objects are allocated on one thread (the submitter) and freed on another (whoever ran the
 * task), so each worker keeps private magazines (arrays of MAGAZINE free objects) and trades full
 * ones through a mutex-protected depot: one lock per MAGAZINE allocations, none on the hot path.
 * A magazine arriving from another core holds objects whose cache lines that core still owns;
 * being an array, it lets each object be prefetched a few allocations before it is handed out,
 * where a free list would have to be followed one miss at a time.
 *
 * Objects start zeroed, and their memory stays the pool's until pool_destroy: a freed object may
 * still be read (internal.h's task_ref relies on it). */
#ifndef FRUGAL_POOL_H
#define FRUGAL_POOL_H

#include <pthread.h>
#include <stddef.h>

enum { MAGAZINE = 64 };

typedef struct magazine {
    struct magazine *next;   /* in the depot */
    int n;
    void *obj[MAGAZINE];
} magazine;

typedef struct pool_cache {
    _Alignas(64) magazine *cur, *spare;   /* allocate from and free into cur; spare is full or empty */
} pool_cache;

typedef struct pool {
    size_t objsize;
    pthread_mutex_t lock;
    magazine *full, *empty;  /* the depot */
    void *chunks;            /* every malloc'd chunk, freed by pool_destroy */
    pool_cache *caches;      /* one per worker */
    int ncaches;
} pool;

int pool_init(pool *p, size_t objsize, int nworkers);
void pool_destroy(pool *p);
void *pool_alloc(pool *p, int worker);          /* NULL only if memory ran out */
void pool_free(pool *p, int worker, void *obj);

#endif
