/* Where valid copies of a handle's data live, and the copies that move it.
 *
 * On a runtime with devices every handle with data knows which memories hold its current value
 * (`valid`, a bit per memory; the host is memory 0). Before a worker runs a task, the data the
 * task reads is copied into the worker's memory if it is not there (data_prepare); the copy is
 * asynchronous, and the task waits in the handle's list while its worker runs other tasks. When
 * the copy completes, the waiting tasks go back to their workers. A task that writes makes its
 * memory the only valid one (data_written). Devices copy to and from the host only: a value
 * that lives on another device is relayed through the host.
 *
 * Dependencies already keep a writer away from a handle while anyone reads it, so the valid bits
 * change under a lock only where copies run: readers on several memories may ask for the same
 * copy at once, and the first one starts it.
 *
 * On a runtime without devices none of this runs: the host holds everything. */
#include "common/clock.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

struct rt_transfer {
    rt_runtime *rt;
    rt_handle *h;
    int from, to;
    uint64_t start;
};

typedef struct wait_list { rt_task **items; int n, cap; } wait_list;

/* The per-memory lists of tasks waiting for a copy, kept beside the coherence state. */
typedef struct coherence_full {
    coherence c;
    wait_list waiting[RT_MAX_MEMORIES];
    uint32_t relay;                 /* memories to fill from the host once it has the value */
} coherence_full;

static coherence_full *full(rt_handle *h) { return h->info ? (coherence_full *)h->info->coh : NULL; }

/* A handle with data on a runtime with devices (its info is made first). */
int coherence_attach(rt_runtime *rt, rt_handle *h)
{
    if (rt->nmemories == 1 || !h->reg.rows)
        return 0;
    coherence_full *c = calloc(1, sizeof *c);
    if (!c) {
        rt_set_error(rt, "out of memory registering '%s'", h->name);
        return -1;
    }
    pthread_mutex_init(&c->c.lock, NULL);
    h->info->coh = &c->c;
    return 0;
}

void coherence_detach(rt_runtime *rt, rt_handle *h)
{
    coherence_full *c = full(h);   /* NULL without info or coherence */
    if (!c)
        return;
    for (int m = 1; m < rt->nmemories; m++) {
        if (c->c.replica[m])
            rt->memories[m].dev.memory->free(rt->memories[m].dev.ctx, c->c.replica[m]);
        free(c->waiting[m].items);
    }
    free(c->waiting[0].items);
    pthread_mutex_destroy(&c->c.lock);
    free(c);
    h->info->coh = NULL;
}

void *rt_replica_base(rt_handle *h, int memory)
{
    rt_handle *w = h->whole;
    return memory == 0 ? (void *)w->reg.start : w->info->coh->replica[memory];
}

/* The whole buffer's copy in device memory m, allocated on first use. */
static int ensure_replica(rt_runtime *rt, rt_handle *h, int m)
{
    rt_handle *w = h->whole;
    coherence *c = w->info->coh;
    if (m == 0 || c->replica[m])
        return 0;
    pthread_mutex_lock(&c->lock);
    if (!c->replica[m]) {
        const rt_device *d = &rt->memories[m].dev;
        c->replica[m] = d->memory->alloc(d->ctx, region_extent(&w->reg));
    }
    void *got = c->replica[m];
    pthread_mutex_unlock(&c->lock);
    if (got)
        return 0;
    rt_set_error(rt, "device %s: out of memory for '%s' (%zu bytes)",
                      rt->memories[m].dev.name, w->name, region_extent(&w->reg));
    return -1;
}

static int lowest_bit(uint32_t x) { return __builtin_ctz(x); }

static void start_copy(rt_runtime *rt, rt_handle *h, int from, int to)
{
    rt_transfer *x = malloc(sizeof *x);
    int dev = from ? from : to;
    char err[256] = "out of memory";
    if (x) {
        *x = (rt_transfer){rt, h, from, to, clock_ticks()};
        if (ensure_replica(rt, h, dev)) {
            rt_transfer_done(x, 1, "no memory for the copy");
            return;
        }
        const rt_device *d = &rt->memories[dev].dev;
        rt_copy c = {.to_device = to != 0, .device_base = rt_replica_base(h, dev),
                     .host_base = rt_replica_base(h, 0), .offset = handle_offset(h), .rows = h->reg.rows,
                     .row_bytes = h->reg.row_bytes, .stride = h->reg.stride, .done = x};
        if (d->memory->copy(d->ctx, &c, err, sizeof err) == 0)
            return;
    }
    if (x)
        rt_transfer_done(x, 1, err);
    else
        rt_set_error(rt, "out of memory starting a copy of '%s'", h->name);
}

/* Under the lock: which copy brings h to memory m, given what is valid. Returns the source, or
 * -1 when m waits for the host copy (relay) that is already on its way. */
static int plan_copy(coherence_full *c, uint32_t valid, int m, int *from, int *to)
{
    if (m == 0 || (valid & 1u)) {
        *from = m == 0 ? lowest_bit(valid) : 0;
        *to = m;
        return 0;
    }
    c->relay |= 1u << m;   /* device to device: through the host */
    if (c->c.fetching & 1u)
        return -1;
    c->c.fetching |= 1u;
    *from = lowest_bit(valid);
    *to = 0;
    return 0;
}

/* t waits until h is valid in memory m; a copy starts unless one is on its way. Returns 1 if t
 * now waits (its pending count was raised), 0 if h is already there. */
static int request_copy(rt_runtime *rt, rt_handle *h, int m, rt_task *t)
{
    coherence_full *c = full(h);
    pthread_mutex_lock(&c->c.lock);
    uint32_t valid = atomic_load(&h->info->valid);
    if (valid & (1u << m)) {
        pthread_mutex_unlock(&c->c.lock);
        return 0;
    }
    wait_list *l = &c->waiting[m];
    if (t) {
        if (l->n == l->cap) {
            int cap = l->cap ? 2 * l->cap : 4;
            rt_task **items = realloc(l->items, sizeof *items * (size_t)cap);
            if (!items) {
                pthread_mutex_unlock(&c->c.lock);
                rt_set_error(rt, "out of memory waiting for a copy of '%s'", h->name);
                return 0;   /* the task runs as skipped: the run has failed */
            }
            l->items = items, l->cap = cap;
        }
        l->items[l->n++] = t;
        atomic_fetch_add(&t->npending, 1);
    } else {
        c->c.host_waits++;
    }
    int from = -1, to = -1;
    if (!(c->c.fetching & (1u << m))) {
        c->c.fetching |= 1u << m;
        if (plan_copy(c, valid, m, &from, &to))
            from = -1;
    }
    pthread_mutex_unlock(&c->c.lock);
    if (from >= 0)
        start_copy(rt, h, from, to);
    return 1;
}

/* The tasks waiting for h in memory m go back to their workers. */
static void release_waiters(rt_runtime *rt, wait_list *done)
{
    for (int i = 0; i < done->n; i++)
        if (atomic_fetch_sub(&done->items[i]->npending, 1) == 1)
            rt_task_hand_to(rt, done->items[i]->worker, done->items[i]);
    free(done->items);
}

/* A copy to memory `to` ended: mark it valid (unless it failed) and take its waiting list. */
static wait_list copy_arrived(rt_handle *h, int to, int failed, int *owner_waits,
                              uint32_t *relay)
{
    coherence_full *c = full(h);
    pthread_mutex_lock(&c->c.lock);
    if (!failed)
        atomic_fetch_or(&h->info->valid, 1u << to);
    c->c.fetching &= ~(1u << to);
    wait_list done = c->waiting[to];
    c->waiting[to] = (wait_list){0};
    *owner_waits = to == 0 && c->c.host_waits > 0;
    *relay = to == 0 ? c->relay : 0;
    if (to == 0)
        c->relay = 0;
    pthread_mutex_unlock(&c->c.lock);
    return done;
}

void rt_transfer_done(rt_transfer *x, int failed, const char *why)
{
    rt_runtime *rt = x->rt;
    atomic_fetch_add(&rt->completing, 1);   /* rt_destroy waits for this thread to leave */
    rt_handle *h = x->h;
    int to = x->to, dir = to != 0, dev = to ? to : x->from;
    uint64_t bytes = (uint64_t)h->reg.rows * h->reg.row_bytes, ticks = clock_ticks() - x->start;
    atomic_fetch_add(&rt->transfers[dir].count, 1);
    atomic_fetch_add(&rt->transfers[dir].bytes, bytes);
    atomic_fetch_add(&rt->transfers[dir].ticks, ticks);
    if (!failed)
        placement_copy_measured(rt, to, (double)bytes, clock_ticks_to_s(ticks));
    if (rt->trace)
        trace_record_late(rt, trace_copy_track(rt, dev, dir), dir ? TRACE_COPY_IN : TRACE_COPY_OUT,
                          x->start, x->start + ticks);
    free(x);
    if (failed)
        rt_set_error(rt, "copying '%s' %s device %s failed: %s", h->name,
                          dir ? "to" : "from", rt->memories[dev].dev.name, why ? why : "?");
    int owner_waits;
    uint32_t relay;
    wait_list done = copy_arrived(h, to, failed, &owner_waits, &relay);
    for (int m = 1; relay; m++)   /* the host has it now: on to the devices that asked */
        if (relay & (1u << m)) {
            relay &= ~(1u << m);
            if (!failed) {
                start_copy(rt, h, 0, m);
            } else {
                int ignored;
                uint32_t none;
                wait_list w = copy_arrived(h, m, 1, &ignored, &none);
                release_waiters(rt, &w);
            }
        }
    release_waiters(rt, &done);
    if (owner_waits)
        rt_owner_wake(rt);
    atomic_fetch_sub(&rt->completing, 1);
}

int rt_data_prepare(rt_runtime *rt, rt_task *t)
{
    if (t->naccum && !t->holds_accum && !rt_accum_acquire(rt, t))
        return 0;
    if (rt->nmemories == 1)
        return 1;
    int memory = rt->workers[t->worker].memory;
    atomic_store(&t->npending, 1);   /* a guard while the copies are requested */
    for (int i = 0; i < t->naccess; i++) {
        rt_handle *h = access_handle(t->access[i]);
        if (!h->reg.rows)
            continue;
        if (ensure_replica(rt, h, memory)) {
            atomic_store(&t->npending, 0);
            return -1;
        }
        if (access_mode(t->access[i]) != RT_W)
            request_copy(rt, h, memory, t);
    }
    return atomic_fetch_sub(&t->npending, 1) == 1;
}

void rt_data_written(rt_runtime *rt, rt_task *t)
{
    if (rt->nmemories == 1)
        return;
    int memory = rt->workers[t->worker].memory;
    for (int i = 0; i < t->naccess; i++) {
        rt_handle *h = access_handle(t->access[i]);
        if (h->reg.rows && access_mode(t->access[i]) != RT_R)
            atomic_store(&h->info->valid, 1u << memory);
    }
}

int rt_host_copy_request(rt_runtime *rt, rt_handle *h)
{
    return !request_copy(rt, h, 0, NULL);
}

/* After host_copy_request returned 0 and the owner saw the copy arrive. */
void rt_host_copy_received(rt_handle *h)
{
    coherence *c = h->info->coh;
    pthread_mutex_lock(&c->lock);
    c->host_waits--;
    pthread_mutex_unlock(&c->lock);
}

void *rt_ptr(const rt_ctx *ctx, int i)
{
    rt_handle *h = access_handle(ctx->task->access[i]);
    if (ctx->memory == 0)
        return (void *)h->reg.start;
    return (char *)rt_replica_base(h, ctx->memory) + handle_offset(h);
}

void *rt_mem(const rt_ctx *ctx, int i, size_t *offset)
{
    rt_handle *h = access_handle(ctx->task->access[i]);
    *offset = handle_offset(h);
    return rt_replica_base(h, ctx->memory);
}
