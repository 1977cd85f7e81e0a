/* Data handles and dependency inference.
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

rt_handle *rt_handle_register(rt_runtime *rt, void *ptr, size_t bytes, const char *name)
{
    (void)rt;
    rt_handle *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->ptr = ptr;
    h->bytes = bytes;
    h->name = name ? name : "handle";
    list_init(&h->readers);
    return h;
}

void rt_handle_unregister(rt_runtime *rt, rt_handle *h)
{
    if (!h)
        return;
    rt_wait_handle(rt, h, RT_RW);
    list_free(&h->readers);
    if (h->accum) {
        list_free(&h->accum->members);
        list_free(&h->accum->base);
        pthread_mutex_destroy(&h->accum->lock);
        free(h->accum);
    }
    free(h);
}

/* The accumulators that produced the value, or NULL. */
static const task_list *accumulators(const rt_handle *h)
{
    return h->accum && h->accum->members.n ? &h->accum->members : NULL;
}

static int wait_ref(rt_runtime *rt, task_ref r)
{
    return ref_unfinished(r) ? wait_tasks(rt, &r.task, 1) : 0;
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
    int rc = wait_ref(rt, h->writer) | wait_list(rt, accumulators(h));
    if (mode != RT_R)
        rc |= wait_list(rt, &h->readers);
    return rc ? -1 : 0;
}

void *rt_handle_ptr(const rt_handle *h) { return h->ptr; }
size_t rt_handle_bytes(const rt_handle *h) { return h->bytes; }

int task_add_edge(rt_runtime *rt, int worker, rt_task *pred, rt_task *succ)
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
    return r.task && r.task->gen == r.gen ? task_add_edge(rt, w, r.task, t) : 0;
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
