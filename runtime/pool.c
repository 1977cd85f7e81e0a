#include "pool.h"

#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

/* At the start of each slab (see carve). */
struct slab_header {
    struct slab_header *next;
    size_t bytes;
};
typedef struct slab_header slab_header;

/* Every magazine is linked here for pool_destroy. */
static void *remember(pool *p, void *block)
{
    if (block) {
        *(void **)block = p->magazines;
        p->magazines = block;
    }
    return block;
}

static magazine *magazine_new(pool *p)
{
    char *block = remember(p, malloc(64 + sizeof(magazine)));
    if (!block)
        return NULL;
    magazine *m = (magazine *)(block + 64);
    m->n = 0;
    return m;
}

int pool_init(pool *p, size_t objsize, int nworkers)
{
    p->objsize = (objsize + 63) & ~(size_t)63;   /* whole cache lines: no false sharing */
    p->full = p->empty = NULL;
    p->magazines = NULL;
    p->slabs = NULL;
    p->slab = NULL;
    p->slab_left = 0;
    p->ncaches = nworkers + 1;
    p->caches = aligned_alloc(64, (size_t)p->ncaches * sizeof *p->caches);
    if (!p->caches)
        return -1;
    memset(p->caches, 0, (size_t)p->ncaches * sizeof *p->caches);
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->shared_lock, NULL);
    return 0;
}

void pool_destroy(pool *p)
{
    void *c = p->magazines;
    while (c) {
        void *next = *(void **)c;
        free(c);
        c = next;
    }
    for (slab_header *s = p->slabs, *next; s; s = next) {
        next = s->next;
        munmap(s, s->bytes);
    }
    free(p->caches);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->shared_lock);
}

/* Depot operations, each under the lock. */
static void put(pool *p, magazine **list, magazine *m)
{
    pthread_mutex_lock(&p->lock);
    m->next = *list;
    *list = m;
    pthread_mutex_unlock(&p->lock);
}

static magazine *get_empty(pool *p)
{
    pthread_mutex_lock(&p->lock);
    magazine *m = p->empty;
    if (m)
        p->empty = m->next;
    else
        m = magazine_new(p);
    pthread_mutex_unlock(&p->lock);
    if (m)
        m->n = 0;
    return m;
}

/* Objects come from large slabs mapped straight from the kernel, which hands them back zeroed,
 * and are carved a magazine at a time. (Small aligned mallocs grow costly once the heap holds
 * many freed blocks; big ones make malloc consolidate its free lists first.) */
enum { SLAB_BYTES = 256 << 10 };


static int carve(pool *p, magazine *m)
{
    if (p->slab_left < MAGAZINE) {
        size_t n = SLAB_BYTES / p->objsize < MAGAZINE ? MAGAZINE : SLAB_BYTES / p->objsize;
        size_t bytes = 64 + n * p->objsize;
        slab_header *s = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (s == MAP_FAILED)
            return -1;
        *s = (slab_header){p->slabs, bytes};
        p->slabs = s;
        p->slab = (char *)s + 64;
        p->slab_left = n;
    }
    for (int i = 0; i < MAGAZINE; i++)   /* handed out from the top: in address order */
        m->obj[i] = p->slab + (size_t)(MAGAZINE - 1 - i) * p->objsize;
    p->slab += MAGAZINE * p->objsize;
    p->slab_left -= MAGAZINE;
    m->n = MAGAZINE;
    return 0;
}

/* A full magazine from the depot, else an empty one filled from the slab. */
static magazine *get_full(pool *p)
{
    pthread_mutex_lock(&p->lock);
    magazine *m = p->full;
    if (m) {
        p->full = m->next;
        pthread_mutex_unlock(&p->lock);
        return m;
    }
    pthread_mutex_unlock(&p->lock);
    m = get_empty(p);
    if (!m)
        return NULL;
    pthread_mutex_lock(&p->lock);
    int rc = carve(p, m);
    pthread_mutex_unlock(&p->lock);
    if (rc) {
        put(p, &p->empty, m);
        return NULL;
    }
    return m;
}

static void swap(pool_cache *c)
{
    magazine *t = c->cur;
    c->cur = c->spare;
    c->spare = t;
}

/* The fast path (pool.h) found the current magazine empty or nearly so. */
void *pool_alloc_slow(pool *p, int worker)
{
    pool_cache *c = &p->caches[worker];
    if (!c->cur || c->cur->n == 0) {
        if (c->spare && c->spare->n > 0) {
            swap(c);
        } else {
            magazine *m = get_full(p);
            if (!m)
                return NULL;
            if (c->cur && !c->spare)
                c->spare = c->cur;
            else if (c->cur)
                put(p, &p->empty, c->cur);
            c->cur = m;
            for (int i = m->n > POOL_PREFETCH_AHEAD ? m->n - POOL_PREFETCH_AHEAD : 0; i < m->n; i++)
                pool_prefetch(p, m->obj[i]);
        }
    }
    magazine *m = c->cur;
    return m->obj[--m->n];
}

/* The fast path (pool.h) found no current magazine or a full one. */
void pool_free_slow(pool *p, int worker, void *obj)
{
    pool_cache *c = &p->caches[worker];
    if (!c->cur && !(c->cur = get_empty(p)))
        return;   /* out of memory: the object is lost to the pool, nothing breaks */
    if (c->cur->n == MAGAZINE) {
        if (c->spare && c->spare->n < MAGAZINE) {
            swap(c);
        } else {
            if (c->spare)
                put(p, &p->full, c->spare);
            c->spare = c->cur;
            if (!(c->cur = get_empty(p)))
                return;
        }
    }
    c->cur->obj[c->cur->n++] = obj;
}

void pool_free_shared(pool *p, void *obj)
{
    pthread_mutex_lock(&p->shared_lock);
    pool_free(p, p->ncaches - 1, obj);
    pthread_mutex_unlock(&p->shared_lock);
}
