/* Fixed-size object pool with per-worker caches, for tasks and dependency edges.
 *
 * Objects are allocated on one thread (the submitter) and freed on another (whoever ran the
 * task), so each worker keeps a private free list and trades full "magazines" of MAGAZINE objects
 * through a mutex-protected depot: one lock per MAGAZINE allocations, none on the hot path. */
#ifndef FRUGAL_POOL_H
#define FRUGAL_POOL_H

#include <pthread.h>
#include <stddef.h>

typedef struct pool_obj { struct pool_obj *next; } pool_obj;

typedef struct pool_cache {
    pool_obj *cur, *spare;   /* spare is empty or holds exactly MAGAZINE objects */
    int ncur;
} pool_cache;

typedef struct pool_mag { pool_obj *objs; struct pool_mag *next; } pool_mag;

typedef struct pool {
    size_t objsize;
    pthread_mutex_t lock;
    pool_obj *full;          /* depot: chain of magazines, linked through their first object */
    void *chunks;            /* every malloc'd chunk, freed by pool_destroy */
    pool_cache *caches;      /* one per worker */
    int ncaches;
} pool;

int pool_init(pool *p, size_t objsize, int nworkers);
void pool_destroy(pool *p);
void *pool_alloc(pool *p, int worker);          /* NULL only if memory ran out */
void pool_free(pool *p, int worker, void *obj);

#endif
