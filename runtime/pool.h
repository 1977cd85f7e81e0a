/* Fixed-size object pool with per-worker caches, for tasks, dependency edges and handles.
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
    void *magazines;         /* every magazine malloc'd, freed by pool_destroy */
    struct slab_header *slabs;   /* the objects' memory, mapped, unmapped by pool_destroy */
    char *slab;              /* zeroed objects not yet in any magazine */
    size_t slab_left;        /* how many */
    pool_cache *caches;      /* one per worker, and a last one for other threads */
    int ncaches;
    pthread_mutex_t shared_lock;   /* guards the last cache */
} pool;

enum { POOL_PREFETCH_AHEAD = 4 };

/* nworkers private caches plus one that threads which are not workers share (pool_free_shared). */
int pool_init(pool *p, size_t objsize, int nworkers);
void pool_destroy(pool *p);
void *pool_alloc_slow(pool *p, int worker);
void pool_free_slow(pool *p, int worker, void *obj);

/* Objects often come from another core's cache: ask for one a few allocations before it is
 * handed out, so that the transfer overlaps the caller's work. */
static inline void pool_prefetch(const pool *p, void *obj)
{
    for (size_t off = 0; off < p->objsize; off += 64)
        __builtin_prefetch((char *)obj + off, 1);
}

/* NULL only if memory ran out. */
static inline void *pool_alloc(pool *p, int worker)
{
    magazine *m = p->caches[worker].cur;
    if (m && m->n > POOL_PREFETCH_AHEAD) {
        pool_prefetch(p, m->obj[m->n - 1 - POOL_PREFETCH_AHEAD]);
        return m->obj[--m->n];
    }
    return pool_alloc_slow(p, worker);
}

static inline void pool_free(pool *p, int worker, void *obj)
{
    magazine *m = p->caches[worker].cur;
    if (m && m->n < MAGAZINE)
        m->obj[m->n++] = obj;
    else
        pool_free_slow(p, worker, obj);
}

/* From a thread that is not a worker (a device's completion callback). */
void pool_free_shared(pool *p, void *obj);

#endif
