#include "opencl/completion.h"
#include "common/env_switches.h"

#include <stdlib.h>
#include <string.h>

/* An awaited command: held by its callback and by the device's list, freed by the last. */
struct ocl_awaited {
    cl_event e;              /* a reference of the record's own */
    ocl_done_fn fn;
    void *arg;
    _Atomic int fired;       /* fn has run (or will: it was claimed) */
    _Atomic int refs;
    cl_int status;           /* what ocl_poll saw */
    struct ocl_awaited *next;
};

/* Claims the completion; only the first caller runs fn. */
static int fire(struct ocl_awaited *a, cl_int status)
{
    if (atomic_exchange(&a->fired, 1))
        return 0;
    a->fn(a->e, status, a->arg);
    return 1;
}

static void release(struct ocl_awaited *a)
{
    if (atomic_fetch_sub(&a->refs, 1) == 1) {
        clReleaseEvent(a->e);
        free(a);
    }
}

static void CL_CALLBACK on_event(cl_event e, cl_int status, void *arg)
{
    (void)e;
    fire(arg, status);
    release(arg);
}

int ocl_polling(void)
{
    const char *v = env_switch_value(ENV_OPENCL_POLL);
    return !v || strcmp(v, "off") != 0;
}

cl_int ocl_await(ocl_device *d, cl_event e, ocl_done_fn fn, void *arg)
{
    struct ocl_awaited *a = ocl_polling() ? malloc(sizeof *a) : NULL;
    if (!a)   /* not polled: the callback alone */
        return clSetEventCallback(e, CL_COMPLETE, fn, arg);
    *a = (struct ocl_awaited){.e = e, .fn = fn, .arg = arg};
    atomic_init(&a->fired, 0);
    atomic_init(&a->refs, 2);
    clRetainEvent(e);
    cl_int rc = clSetEventCallback(e, CL_COMPLETE, on_event, a);
    if (rc != CL_SUCCESS) {
        clReleaseEvent(e);
        free(a);
        return rc;
    }
    /* The callback may have run already: then the list's reference is the last. Records whose
     * callbacks ran are dropped here too: a worker that is never idle never polls, and each
     * record holds an event. */
    struct ocl_awaited *fired = NULL;
    pthread_mutex_lock(&d->awaited_lock);
    for (struct ocl_awaited **p = &d->awaited; *p;)
        if (atomic_load(&(*p)->fired)) {
            struct ocl_awaited *f = *p;
            *p = f->next;
            f->next = fired;
            fired = f;
        } else
            p = &(*p)->next;
    a->next = d->awaited;
    d->awaited = a;
    pthread_mutex_unlock(&d->awaited_lock);
    while (fired) {
        struct ocl_awaited *next = fired->next;
        release(fired);
        fired = next;
    }
    return CL_SUCCESS;
}

/* Whether a's command has ended (completed or failed), its status in a->status. */
static int ended(struct ocl_awaited *a)
{
    if (atomic_load(&a->fired))
        return 1;
    cl_int st = CL_QUEUED;
    if (clGetEventInfo(a->e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL) != CL_SUCCESS)
        return 0;   /* left to the callback */
    a->status = st;
    return st <= CL_COMPLETE;
}

int ocl_poll(ocl_device *d, int *in_flight)
{
    struct ocl_awaited *done = NULL;
    int left = 0;
    pthread_mutex_lock(&d->awaited_lock);
    for (struct ocl_awaited **p = &d->awaited; *p;) {
        struct ocl_awaited *a = *p;
        if (ended(a)) {
            *p = a->next;
            a->next = done;
            done = a;
        } else {
            p = &a->next;
            left++;
        }
    }
    pthread_mutex_unlock(&d->awaited_lock);
    if (in_flight)
        *in_flight = left;
    int n = 0;
    while (done) {
        struct ocl_awaited *next = done->next;
        n += fire(done, done->status);
        release(done);
        done = next;
    }
    return n;
}

/* Tasks a device's kernel queue may hold unflushed (ocl_flush_later): a flush a task cost an
 * H200's driver a seventh of DAHL 28x28x1's speed (182,320 img/s against 213,050), and a
 * worker still enqueuing has more coming. */
#define FLUSH_EVERY 8

int ocl_poll_device(void *device, int *in_flight)
{
    ocl_device *d = device;
    if (atomic_load(&d->unflushed) && atomic_exchange(&d->unflushed, 0))
        clFlush(d->queue);   /* the worker ran out of tasks to enqueue */
    return ocl_poll(device, in_flight);
}

void ocl_flush_later(ocl_device *d)
{
    if (ocl_polling() && atomic_fetch_add(&d->unflushed, 1) + 1 < FLUSH_EVERY)
        return;   /* flushed by ocl_poll_device when the worker runs out of tasks */
    atomic_store(&d->unflushed, 0);
    clFlush(d->queue);
}

void ocl_await_close(ocl_device *d)
{
    while (d->awaited) {
        struct ocl_awaited *next = d->awaited->next;
        release(d->awaited);
        d->awaited = next;
    }
}
