#include "ops/scratch.h"

#include "common/large_alloc.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct scratch {
    float *buf[SCRATCH_SLOTS];
    size_t cap[SCRATCH_SLOTS];
} scratch;

static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *p)
{
    scratch *s = p;
    for (int i = 0; i < SCRATCH_SLOTS; i++)
        free(s->buf[i]);
    free(s);
}

static void make_key(void) { pthread_key_create(&key, scratch_free); }

/* The main thread never runs key destructors; free its scratch at exit so leak checkers agree. */
static void free_main(void)
{
    scratch *s = pthread_getspecific(key);
    if (s) {
        pthread_setspecific(key, NULL);
        scratch_free(s);
    }
}

static pthread_once_t exit_hook = PTHREAD_ONCE_INIT;
static void register_exit_hook(void) { atexit(free_main); }

static size_t limit_bytes;

void ops_scratch_limit(size_t bytes) { __atomic_store_n(&limit_bytes, bytes, __ATOMIC_RELAXED); }

float *ops_scratch(int slot, size_t n)
{
    pthread_once(&key_once, make_key);
    scratch *s = pthread_getspecific(key);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s || pthread_setspecific(key, s)) {
            free(s);
            return NULL;
        }
        pthread_once(&exit_hook, register_exit_hook);
    }
    if (s->cap[slot] < n) {
        size_t limit = __atomic_load_n(&limit_bytes, __ATOMIC_RELAXED);
        if (limit && n * sizeof(float) > limit)
            return NULL;
        size_t cap = n + n / 2 + 1024;
        float *b = large_alloc(cap * sizeof(float));
        if (!b)
            return NULL;
        free(s->buf[slot]);
        s->buf[slot] = b;
        s->cap[slot] = cap;
    }
    return s->buf[slot];
}
