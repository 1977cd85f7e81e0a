/* Data handles: the regions they name, and dependency inference.
 *
 * Each handle remembers who produced its current value and who has read it since; a new access
 * depends on exactly the tasks it must follow (RAW, WAR, WAW), and commutative RT_ACCUM updates
 * form groups that depend on what came before but not on each other. Only the submitting thread
 * touches this history, so it needs no lock. It holds no reference counts: finished tasks are
 * recycled at once, and a history entry to one reads as done (task_ref in internal.h). */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static void list_init(task_list *l)
{
    l->n = 0;
    l->cap = 2;
    l->items = l->inline_items;
}

static void list_free(task_list *l)
{
    if (l->items != l->inline_items)
        free(l->items);
    list_init(l);
}

/* Drop finished tasks: a handle read by thousands of tasks between writes stays small. */
static void list_compact(task_list *l)
{
    int kept = 0;
    for (int i = 0; i < l->n; i++)
        if (ref_unfinished(l->items[i]))
            l->items[kept++] = l->items[i];
    l->n = kept;
}

static inline int list_add(task_list *l, task_ref r)
{
    if (l->n == l->cap) {
        list_compact(l);
        if (l->n * 2 > l->cap) {   /* mostly live: grow */
            int cap = l->cap * 2;
            task_ref *items = malloc((size_t)cap * sizeof *items);
            if (!items)
                return -1;
            memcpy(items, l->items, (size_t)l->n * sizeof *items);
            if (l->items != l->inline_items)
                free(l->items);
            l->items = items;
            l->cap = cap;
        }
    }
    l->items[l->n++] = r;
    return 0;
}

static rt_handle *handle_new(rt_runtime *rt, const char *name)
{
    if (rt_worker_self(rt) != 0) {
        rt_set_error(rt, "handle '%s' registered from a thread that does not own the runtime",
                          name ? name : "?");
        return NULL;
    }
    /* From a pool: cache-line aligned (the history that linking reads is exactly the first
     * line), and handles registered together lie together, whatever malloc's heap looks like. */
    rt_handle *h = pool_alloc(&rt->handles, 0);
    if (!h) {
        rt_set_error(rt, "rt_handle_register: out of memory for handle '%s'", name);
        return NULL;
    }
    memset(h, 0, sizeof *h);
    h->name = name ? name : "handle";
    h->whole = h;
    list_init(&h->readers);
    return h;
}

/* h's info, made on first need. */
static handle_info *info_of(rt_runtime *rt, rt_handle *h)
{
    if (!h->info && (h->info = calloc(1, sizeof *h->info)))
        atomic_init(&h->info->valid, 1u);   /* the host holds the value */
    if (!h->info)
        rt_set_error(rt, "out of memory registering '%s'", h->name);
    return h->info;
}

rt_handle *rt_handle_register(rt_runtime *rt, void *ptr, size_t bytes, const char *name)
{
    rt_handle *h = handle_new(rt, name);
    if (!h)
        return NULL;
    if (ptr && bytes) {
        h->reg = (region){(uintptr_t)ptr, bytes, bytes, 1};
        void *other = region_index_add(&rt->buffers, h->reg.start, region_end(&h->reg), h);
        if (other) {
            if (other == (void *)-1)
                rt_set_error(rt, "rt_handle_register: out of memory indexing '%s'", h->name);
            else
                rt_set_error(rt, "rt_handle_register: '%s' (%zu bytes at %p) overlaps "
                                  "'%s' (%zu bytes at %p)", h->name, bytes, ptr,
                                  ((rt_handle *)other)->name, region_extent(&((rt_handle *)other)->reg),
                                  (void *)((rt_handle *)other)->reg.start);
            pool_free(&rt->handles, 0, h);
            return NULL;
        }
    }
    if ((rt->nmemories > 1 && h->reg.rows && !info_of(rt, h)) || coherence_attach(rt, h)) {
        rt_handle_unregister(rt, h);
        return NULL;
    }
    return h;
}

rt_handle *rt_handle_part(rt_runtime *rt, rt_handle *whole, size_t offset, size_t rows,
                          size_t row_bytes, size_t stride, const char *name)
{
    size_t span, last;
    if (rows == 1)
        stride = row_bytes;
    if (whole->whole != whole || !rows || rows > UINT32_MAX || !row_bytes || stride < row_bytes ||
        __builtin_mul_overflow(rows - 1, stride, &last) ||
        __builtin_add_overflow(last, row_bytes, &span) ||
        __builtin_add_overflow(span, offset, &span) || span > region_extent(&whole->reg)) {
        rt_set_error(rt, "rt_handle_part: '%s' (%zu rows of %zu bytes, %zu apart, from "
                          "byte %zu) is not a part of '%s' (%zu bytes)", name ? name : "?", rows,
                          row_bytes, stride, offset, whole->name, region_extent(&whole->reg));
        return NULL;
    }
    region reg = {whole->reg.start + offset, row_bytes, stride, (uint32_t)rows};
    handle_info *wi = info_of(rt, whole);
    if (!wi)
        return NULL;
    for (int i = 0; i < wi->nparts; i++)
        if (region_overlap(&reg, &wi->parts[i]->reg)) {
            rt_set_error(rt, "rt_handle_part: '%s' overlaps '%s', another part of '%s'",
                              name ? name : "?", wi->parts[i]->name, whole->name);
            return NULL;
        }
    rt_handle **parts = realloc(wi->parts, sizeof *parts * (size_t)(wi->nparts + 1));
    rt_handle *h = parts ? handle_new(rt, name) : NULL;
    if (parts)
        wi->parts = parts;
    if (!h)
        return NULL;
    rt_wait_handle(rt, whole, RT_RW);   /* what used the whole buffer comes first */
    h->reg = reg;
    h->whole = whole;
    if (rt->nmemories > 1) {
        if (!info_of(rt, h)) {
            pool_free(&rt->handles, 0, h);
            return NULL;
        }
        atomic_store(&h->info->valid, atomic_load(&wi->valid));
    }
    if (coherence_attach(rt, h)) {
        free(h->info);
        pool_free(&rt->handles, 0, h);
        return NULL;
    }
    wi->parts[wi->nparts++] = h;
    whole->writer = (task_ref){HAS_PARTS, 0};
    return h;
}

static void handle_free(rt_runtime *rt, rt_handle *h)
{
    list_free(&h->readers);
    if (h->accum) {
        list_free(&h->accum->members);
        list_free(&h->accum->base);
        pthread_mutex_destroy(&h->accum->lock);
        free(h->accum);
    }
    coherence_detach(rt, h);
    if (h->info)
        free(h->info->parts);
    free(h->info);
    pool_free(&rt->handles, 0, h);
}

void rt_handle_unregister(rt_runtime *rt, rt_handle *h)
{
    if (!h)
        return;
    while (handle_nparts(h))   /* newest first: removal is then a pop */
        rt_handle_unregister(rt, h->info->parts[h->info->nparts - 1]);
    rt_wait_handle(rt, h, RT_R);    /* the current value back in host memory */
    rt_wait_handle(rt, h, RT_RW);
    if (h->whole != h) {
        handle_info *wi = h->whole->info;
        for (int i = 0; i < wi->nparts; i++)
            if (wi->parts[i] == h) {
                wi->parts[i] = wi->parts[--wi->nparts];
                break;
            }
        if (!wi->nparts)
            h->whole->writer = (task_ref){0};   /* usable as a whole again */
    } else if (h->reg.rows) {
        region_index_remove(&rt->buffers, h->reg.start, h);
    }
    handle_free(rt, h);
}

/* The accumulators that produced the value, or NULL. */
static const task_list *accumulators(const rt_handle *h)
{
    return h->accum && h->accum->members.n ? &h->accum->members : NULL;
}

static int wait_ref(rt_runtime *rt, task_ref r)
{
    return ref_unfinished(r) ? rt_wait_tasks(rt, &r.task, 1) : 0;
}

static int wait_list(rt_runtime *rt, const task_list *l)
{
    int rc = 0;
    for (int i = 0; l && i < l->n; i++)
        rc |= wait_ref(rt, l->items[i]);
    return rc;
}

int rt_wait_handle(rt_runtime *rt, rt_handle *h, rt_mode mode)
{
    int rc = 0;
    for (int i = 0; i < handle_nparts(h); i++)
        rc |= rt_wait_handle(rt, h->info->parts[i], mode);
    rc |= wait_ref(rt, h->writer) | wait_list(rt, accumulators(h));
    if (mode != RT_R)
        rc |= wait_list(rt, &h->readers);
    if (rt->nmemories > 1 && !handle_nparts(h) && h->reg.rows) {
        if (!(mode == RT_W) && !rt_host_copy_request(rt, h))
            rc |= rt_wait_host_copy(rt, h);
        if (mode != RT_R)   /* the caller is about to change the host copy */
            atomic_store(&h->info->valid, 1u);
    }
    return rc ? -1 : 0;
}

void *rt_handle_acquire(rt_runtime *rt, rt_handle *h, rt_mode mode)
{
    return rt_wait_handle(rt, h, mode) ? NULL : rt_handle_ptr(h);
}

void *rt_handle_ptr(const rt_handle *h) { return (void *)h->reg.start; }
size_t rt_handle_bytes(const rt_handle *h) { return region_extent(&h->reg); }
const char *rt_handle_name(const rt_handle *h) { return h->name; }

int rt_task_add_edge(rt_runtime *rt, int worker, rt_task *pred, rt_task *succ)
{
    if (pred == succ || task_done(pred))
        return 0;
    rt_edge *e = succ->nedges ? pool_alloc(&rt->edges, worker) : &succ->own_edge;
    if (!e)
        return -1;
    e->succ = succ;
    rt_edge *head = atomic_load_explicit(&pred->successors, memory_order_acquire);
    do {
        if (head == EDGES_CLOSED) {   /* pred completed meanwhile: no edge needed */
            if (e != &succ->own_edge)
                pool_free(&rt->edges, worker, e);
            return 0;
        }
        e->next = head;
    } while (!atomic_compare_exchange_weak_explicit(&pred->successors, &head, e,
                                                    memory_order_acq_rel, memory_order_acquire));
    succ->nedges++;
    return 0;
}

/* An edge from the referred task, unless it is done or the reference is stale. */
static inline int depend_on(rt_runtime *rt, int w, rt_task *t, task_ref r)
{
    return r.task && r.task->gen == r.gen ? rt_task_add_edge(rt, w, r.task, t) : 0;
}

static inline int depend_on_list(rt_runtime *rt, int w, rt_task *t, const task_list *l)
{
    for (int i = 0; l && i < l->n; i++)
        if (depend_on(rt, w, t, l->items[i]))
            return -1;
    return 0;
}

/* The tasks that produced the handle's current value: one writer or a group of accumulators. */
static inline int depend_on_producers(rt_runtime *rt, int w, rt_task *t, rt_handle *h)
{
    if (h->writer.task)
        return depend_on(rt, w, t, h->writer);
    return depend_on_list(rt, w, t, accumulators(h));
}

/* What overwriting the handle must wait for: the readers of its value, or else its producers. */
static int depend_as_writer(rt_runtime *rt, int w, rt_task *t, rt_handle *h)
{
    return h->readers.n ? depend_on_list(rt, w, t, &h->readers) : depend_on_producers(rt, w, t, h);
}

/* Forget readers and producers (not the accumulators' base). */
static void drop_history(rt_handle *h)
{
    h->writer = (task_ref){0};
    h->readers.n = 0;
    if (h->accum)
        h->accum->members.n = 0;
}

static accum_group *accum_group_of(rt_handle *h)
{
    if (!h->accum) {
        accum_group *g = calloc(1, sizeof *g);
        if (!g)
            return NULL;
        list_init(&g->members);
        list_init(&g->base);
        pthread_mutex_init(&g->lock, NULL);
        h->accum = g;
    }
    return h->accum;
}

/* An open group (accumulators, nobody read them since) takes t as one more member, with the same
 * predecessors and no order among members. Otherwise t opens a group whose base is what a writer
 * would wait for. */
static int link_accumulator(rt_runtime *rt, int w, rt_task *t, rt_handle *h)
{
    accum_group *g = accum_group_of(h);
    if (!g)
        return -1;
    if (!(g->members.n > 0 && h->readers.n == 0)) {
        g->base.n = 0;
        int rc = 0;
        if (h->readers.n || !h->writer.task) {
            const task_list *src = h->readers.n ? &h->readers : &g->members;
            for (int i = 0; i < src->n && !rc; i++)
                rc = list_add(&g->base, src->items[i]);
        } else {
            rc = list_add(&g->base, h->writer);
        }
        drop_history(h);
        if (rc)
            return -1;
    }
    return depend_on_list(rt, w, t, &g->base) ? -1 : list_add(&g->members, ref_to(t));
}

int handle_link(rt_runtime *rt, int w, rt_task *t, const rt_access *a)
{
    rt_handle *h = a->handle;

    switch (a->mode) {
    case RT_R:
        if (depend_on_producers(rt, w, t, h))
            return -1;
        return list_add(&h->readers, ref_to(t));

    case RT_W:
    case RT_RW:
        if (depend_as_writer(rt, w, t, h))
            return -1;
        drop_history(h);
        h->writer = ref_to(t);
        return 0;

    case RT_ACCUM:
        return link_accumulator(rt, w, t, h);
    }
    return -1;
}
