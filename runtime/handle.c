/* Data handles and dependency inference.
 *
 * Each handle remembers who produced its current value and who has read it since; a new access
 * depends on exactly the tasks it must follow (RAW, WAR, WAW), and commutative RT_ACCUM updates
 * form groups that depend on what came before but not on each other. Only the submitting thread
 * touches this history, so it needs no lock. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>


static void list_clear(rt_runtime *rt, int worker, task_list *l)
{
    for (int i = 0; i < l->n; i++)
        task_let_go(rt, worker, l->items[i]);
    l->n = 0;
}

void task_list_free(task_list *l)
{
    if (l->items != l->inline_items)
        free(l->items);
    l->items = l->inline_items;
    l->cap = 4;
    l->n = 0;
}

/* Drop finished tasks: a handle read by thousands of tasks between writes stays small. */
static void list_compact(rt_runtime *rt, int worker, task_list *l)
{
    int kept = 0;
    for (int i = 0; i < l->n; i++) {
        if (task_done(l->items[i]))
            task_let_go(rt, worker, l->items[i]);
        else
            l->items[kept++] = l->items[i];
    }
    l->n = kept;
}

static int list_add(rt_runtime *rt, int worker, task_list *l, rt_task *t)
{
    if (l->n == l->cap) {
        list_compact(rt, worker, l);
        if (l->n * 2 > l->cap) {   /* mostly live: grow */
            int cap = l->cap * 2;
            rt_task **items = malloc((size_t)cap * sizeof *items);
            if (!items)
                return -1;
            memcpy(items, l->items, (size_t)l->n * sizeof *items);
            if (l->items != l->inline_items)
                free(l->items);
            l->items = items;
            l->cap = cap;
        }
    }
    task_hold(t);
    l->items[l->n++] = t;
    return 0;
}

static void list_init(task_list *l)
{
    l->n = 0;
    l->cap = 4;
    l->items = l->inline_items;
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
    list_init(&h->accums);
    list_init(&h->accum_base);
    pthread_mutex_init(&h->accum_lock, NULL);
    return h;
}


void rt_handle_unregister(rt_runtime *rt, rt_handle *h)
{
    if (!h)
        return;
    rt_wait_handle(rt, h, RT_RW);
    handle_history_clear(rt, h);
    task_list_free(&h->readers);
    task_list_free(&h->accums);
    task_list_free(&h->accum_base);
    pthread_mutex_destroy(&h->accum_lock);
    free(h);
}

void *rt_handle_ptr(const rt_handle *h) { return h->ptr; }
size_t rt_handle_bytes(const rt_handle *h) { return h->bytes; }

int task_add_edge(rt_runtime *rt, int worker, rt_task *pred, rt_task *succ)
{
    if (pred == succ || task_done(pred))
        return 0;
    rt_edge *e = succ->own_edge_used ? pool_alloc(&rt->edges, worker) : &succ->own_edge;
    if (!e)
        return -1;
    if (e == &succ->own_edge)
        succ->own_edge_used = 1;
    e->succ = succ;
    atomic_fetch_add_explicit(&succ->npending, 1, memory_order_relaxed);
    rt_edge *head = atomic_load_explicit(&pred->successors, memory_order_acquire);
    do {
        if (head == EDGES_CLOSED) {   /* pred completed meanwhile: no edge needed */
            if (e == &succ->own_edge)
                succ->own_edge_used = 0;
            else
                pool_free(&rt->edges, worker, e);
            atomic_fetch_sub_explicit(&succ->npending, 1, memory_order_relaxed);
            return 0;
        }
        e->next = head;
    } while (!atomic_compare_exchange_weak_explicit(&pred->successors, &head, e,
                                                    memory_order_acq_rel, memory_order_acquire));
    return 0;
}

static int depend_on_list(rt_runtime *rt, int w, rt_task *t, const task_list *l)
{
    for (int i = 0; i < l->n; i++)
        if (task_add_edge(rt, w, l->items[i], t))
            return -1;
    return 0;
}

/* The tasks that produced the handle's current value: one writer or a group of accumulators. */
static int depend_on_producers(rt_runtime *rt, int w, rt_task *t, rt_handle *h)
{
    if (h->writer)
        return task_add_edge(rt, w, h->writer, t);
    return depend_on_list(rt, w, t, &h->accums);
}

/* What overwriting the handle must wait for: the readers of its value, or else its producers. */
static int depend_as_writer(rt_runtime *rt, int w, rt_task *t, rt_handle *h)
{
    return h->readers.n ? depend_on_list(rt, w, t, &h->readers) : depend_on_producers(rt, w, t, h);
}

/* Forget readers and producers (not the accumulator base), releasing their references. */
static void drop_history(rt_runtime *rt, int w, rt_handle *h)
{
    if (h->writer)
        task_let_go(rt, w, h->writer);
    h->writer = NULL;
    list_clear(rt, w, &h->readers);
    list_clear(rt, w, &h->accums);
}

void handle_history_clear(rt_runtime *rt, rt_handle *h)
{
    int w = worker_self(rt);
    drop_history(rt, w, h);
    list_clear(rt, w, &h->accum_base);
}

int handle_link(rt_runtime *rt, rt_task *t, const rt_access *a)
{
    int w = worker_self(rt);
    rt_handle *h = a->handle;

    switch (a->mode) {
    case RT_R:
        if (depend_on_producers(rt, w, t, h))
            return -1;
        return list_add(rt, w, &h->readers, t);

    case RT_W:
    case RT_RW:
        if (depend_as_writer(rt, w, t, h))
            return -1;
        drop_history(rt, w, h);
        task_hold(t);
        h->writer = t;
        return 0;

    case RT_ACCUM:
        /* An open group (accumulators, nobody read them since) takes t as one more member, with
         * the same predecessors and no order among members. Otherwise t opens a group whose base
         * is what a writer would wait for. */
        if (!(h->accums.n > 0 && h->readers.n == 0)) {
            list_clear(rt, w, &h->accum_base);
            int rc = 0;
            if (h->readers.n || !h->writer) {
                const task_list *src = h->readers.n ? &h->readers : &h->accums;
                for (int i = 0; i < src->n && !rc; i++)
                    rc = list_add(rt, w, &h->accum_base, src->items[i]);
            } else {
                rc = list_add(rt, w, &h->accum_base, h->writer);
            }
            drop_history(rt, w, h);
            if (rc)
                return -1;
        }
        return depend_on_list(rt, w, t, &h->accum_base) ? -1 : list_add(rt, w, &h->accums, t);
    }
    return -1;
}
