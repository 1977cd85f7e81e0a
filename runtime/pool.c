#include "pool.h"

#include <stdint.h>
#include <stdlib.h>

enum { MAGAZINE = 64, CHUNK_OBJS = 256 };

/* A magazine in the depot: its first object holds the link to the next magazine. */
typedef struct depot_head { pool_obj obj; pool_obj *next_mag; } depot_head;

int pool_init(pool *p, size_t objsize, int nworkers)
{
    if (objsize < sizeof(depot_head))
        objsize = sizeof(depot_head);
    p->objsize = (objsize + 63) & ~(size_t)63;   /* whole cache lines: no false sharing */
    p->full = NULL;
    p->chunks = NULL;
    p->ncaches = nworkers;
    p->caches = calloc((size_t)nworkers, sizeof *p->caches);
    if (!p->caches)
        return -1;
    pthread_mutex_init(&p->lock, NULL);
    return 0;
}

void pool_destroy(pool *p)
{
    void *c = p->chunks;
    while (c) {
        void *next = *(void **)c;
        free(c);
        c = next;
    }
    free(p->caches);
    pthread_mutex_destroy(&p->lock);
}

/* Under the lock: a magazine from the depot, or a fresh chunk cut into objects. */
static pool_obj *refill(pool *p, int *count)
{
    pool_obj *objs = NULL;
    pthread_mutex_lock(&p->lock);
    if (p->full) {
        depot_head *h = (depot_head *)p->full;
        p->full = h->next_mag;
        objs = &h->obj;
        *count = MAGAZINE;
    } else {
        /* The chunk's first cache line links the chunk list. */
        char *chunk = aligned_alloc(64, 64 + CHUNK_OBJS * p->objsize);
        if (chunk) {
            *(void **)chunk = p->chunks;
            p->chunks = chunk;
            for (int i = CHUNK_OBJS - 1; i >= 0; i--) {
                pool_obj *o = (pool_obj *)(chunk + 64 + (size_t)i * p->objsize);
                o->next = objs;
                objs = o;
            }
            *count = CHUNK_OBJS;
        }
    }
    pthread_mutex_unlock(&p->lock);
    return objs;
}

void *pool_alloc(pool *p, int worker)
{
    pool_cache *c = &p->caches[worker];
    if (!c->cur) {
        if (c->spare) {
            c->cur = c->spare;
            c->spare = NULL;
            c->ncur = MAGAZINE;
        } else {
            c->cur = refill(p, &c->ncur);
            if (!c->cur)
                return NULL;
        }
    }
    pool_obj *o = c->cur;
    c->cur = o->next;
    c->ncur--;
    /* Recycled objects were last written by whichever core freed them: start fetching the next
     * one now so that its cache-line transfer overlaps the caller's work. */
    if (c->cur)
        for (size_t off = 0; off < p->objsize; off += 64)
            __builtin_prefetch((char *)c->cur + off, 1);
    return o;
}

void pool_free(pool *p, int worker, void *obj)
{
    pool_cache *c = &p->caches[worker];
    if (c->ncur >= MAGAZINE) {
        if (c->spare) {   /* both full: hand the spare magazine to the depot */
            depot_head *h = (depot_head *)c->spare;
            pthread_mutex_lock(&p->lock);
            h->next_mag = p->full;
            p->full = c->spare;
            pthread_mutex_unlock(&p->lock);
        }
        /* cur may hold more than MAGAZINE after a chunk refill: keep exactly MAGAZINE as spare. */
        pool_obj *tail = c->cur;
        for (int i = 1; i < MAGAZINE; i++)
            tail = tail->next;
        c->spare = c->cur;
        c->cur = tail->next;
        c->ncur -= MAGAZINE;
        tail->next = NULL;
    }
    pool_obj *o = obj;
    o->next = c->cur;
    c->cur = o;
    c->ncur++;
}
