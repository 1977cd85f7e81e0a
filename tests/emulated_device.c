#include "emulated_device.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A copy or a task, done by the device's thread in arrival order. */
typedef struct job {
    struct job *next;
    rt_copy copy;                    /* a copy, when task is NULL */
    rt_runtime *rt;
    rt_task *task;
    emu_fn fn;
    void *data[RT_MAX_ACCESS];
    int ndata;
    _Alignas(16) unsigned char args[RT_MAX_ARGS];
} job;

struct emu_device {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    job *head, *tail;
    int polled;                      /* tasks complete through emu_poll only */
    job *finished;                   /* polled: run, not yet completed */
    int tasks_in_flight;             /* polled: launched, not yet completed */
    int stop;
    int delay_us;
    long copies, fail_after;
    size_t limit, used;
    pthread_t thread;
};

static void pause_us(int us)
{
    struct timespec ts = {0, (long)us * 1000};
    if (us)
        nanosleep(&ts, NULL);
    else
        sched_yield();   /* still let the workers run between its jobs */
}

static void do_copy(emu_device *d, const rt_copy *c)
{
    long n = __atomic_add_fetch(&d->copies, 1, __ATOMIC_RELAXED);
    if (d->fail_after >= 0 && n > d->fail_after) {
        rt_transfer_done(c->done, 1, "injected copy failure");
        return;
    }
    char *dev = (char *)c->device_base + c->offset, *host = (char *)c->host_base + c->offset;
    for (size_t r = 0; r < c->rows; r++)
        memcpy(c->to_device ? dev + r * c->stride : host + r * c->stride,
               c->to_device ? host + r * c->stride : dev + r * c->stride, c->row_bytes);
    rt_transfer_done(c->done, 0, NULL);
}

static void *device_main(void *arg)
{
    emu_device *d = arg;
    pthread_mutex_lock(&d->lock);
    for (;;) {
        while (!d->head && !d->stop)
            pthread_cond_wait(&d->wake, &d->lock);
        if (!d->head)
            break;
        job *j = d->head;
        d->head = j->next;
        if (!d->head)
            d->tail = NULL;
        pthread_mutex_unlock(&d->lock);
        pause_us(d->delay_us);
        if (!j->task) {
            do_copy(d, &j->copy);
        } else {
            int rc = j->fn(j->data, j->ndata, j->args);
            if (d->polled) {   /* left for the worker's poll, with its status */
                j->ndata = rc;
                pthread_mutex_lock(&d->lock);
                j->next = d->finished;
                d->finished = j;
                continue;
            }
            rt_task_complete(j->rt, j->task, rc, rc ? "the emulated kernel failed" : NULL);
        }
        free(j);
        pthread_mutex_lock(&d->lock);
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

static void enqueue(emu_device *d, job *j)
{
    pthread_mutex_lock(&d->lock);
    if (d->tail)
        d->tail->next = j;
    else
        d->head = j;
    d->tail = j;
    pthread_cond_signal(&d->wake);
    pthread_mutex_unlock(&d->lock);
}

static void *emu_alloc(void *dev, size_t bytes)
{
    emu_device *d = dev;
    if (d->limit && __atomic_add_fetch(&d->used, bytes, __ATOMIC_RELAXED) > d->limit)
        return NULL;
    return calloc(1, bytes ? bytes : 1);
}

static void emu_free(void *dev, void *base)
{
    (void)dev;
    free(base);
}

static int emu_copy(void *dev, const rt_copy *c, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    job *j = calloc(1, sizeof *j);
    if (!j)
        return -1;
    j->copy = *c;
    enqueue(dev, j);
    return 0;
}

static const rt_memory_ops emu_memory = {emu_alloc, emu_free, emu_copy, 1};

emu_device *emu_create(int delay_us)
{
    emu_device *d = calloc(1, sizeof *d);
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->wake, NULL);
    d->delay_us = delay_us;
    d->fail_after = -1;
    pthread_create(&d->thread, NULL, device_main, d);
    return d;
}

void emu_fail_copies_after(emu_device *d, long copies) { d->fail_after = copies; }
void emu_memory_limit(emu_device *d, size_t bytes) { d->limit = bytes; }

void emu_destroy(emu_device *d)
{
    pthread_mutex_lock(&d->lock);
    d->stop = 1;
    pthread_cond_signal(&d->wake);
    pthread_mutex_unlock(&d->lock);
    pthread_join(d->thread, NULL);
    pthread_mutex_destroy(&d->lock);
    pthread_cond_destroy(&d->wake);
    free(d);
}

static int emu_poll(void *dev, int *in_flight)
{
    emu_device *d = dev;
    pthread_mutex_lock(&d->lock);
    job *done = d->finished;
    d->finished = NULL;
    int n = 0;
    for (job *j = done; j; j = j->next)
        n++;
    d->tasks_in_flight -= n;
    *in_flight = d->tasks_in_flight;
    pthread_mutex_unlock(&d->lock);
    while (done) {
        job *next = done->next;
        rt_task_complete(done->rt, done->task, done->ndata,
                         done->ndata ? "the emulated kernel failed" : NULL);
        free(done);
        done = next;
    }
    return n;
}

rt_device emu_as_polled_device(emu_device *d, const char *name)
{
    d->polled = 1;
    return (rt_device){RT_WORKER_EMULATED, name, &emu_memory, d, 0, emu_poll, 1};
}

rt_device emu_as_device(emu_device *d, const char *name)
{
    return (rt_device){RT_WORKER_EMULATED, name, &emu_memory, d, 0, NULL, 0};
}

int emu_launch(const rt_ctx *ctx, int naccess, emu_fn fn, const void *args, size_t size)
{
    job *j = calloc(1, sizeof *j);
    j->rt = ctx->rt;
    j->task = ctx->task;
    j->fn = fn;
    j->ndata = naccess;
    for (int i = 0; i < naccess; i++)
        j->data[i] = rt_ptr(ctx, i);
    memcpy(j->args, args, size);
    emu_device *d = rt_device_ctx(ctx);
    if (d->polled) {
        pthread_mutex_lock(&d->lock);
        d->tasks_in_flight++;
        pthread_mutex_unlock(&d->lock);
    }
    enqueue(d, j);
    return RT_PENDING;
}
