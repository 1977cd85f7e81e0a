/* The coordinator's slots: chunks computed on other machines, each part meeting its task
 * (coordinator_internal.h). Called with the coordinator's lock held; the tasks they hand back
 * are completed by the caller once it lets go of the lock. */
#include "engine/cluster/sync_internal.h"

#include <stdlib.h>
#include <string.h>

static size_t part_bytes(const coordinator *c, int p)
{
    return p ? sizeof(float) * (size_t)c->layer_params[p - 1] : sizeof(chunk_stats);
}

static void *held_part(slot *s, const coordinator *c, int p)
{
    return p ? (void *)(s->held + c->layer_offset[p - 1]) : (void *)&s->stats;
}

slot *sync_slot_of(coordinator *c, uint64_t seq, int chunk)
{
    sync_state *ss = sync_of(c);
    for (int i = 0; i < ss->nslots; i++)
        if (ss->slots[i].state != SLOT_FREE && ss->slots[i].a.seq == seq && ss->slots[i].a.chunk == chunk)
            return &ss->slots[i];
    return NULL;
}

slot *sync_slot_new(coordinator *c, const remote_args *a, const float *params, int state)
{
    sync_state *ss = sync_of(c);
    for (int i = 0; i < ss->nslots; i++) {
        slot *s = &ss->slots[i];
        if (s->state == SLOT_FREE) {
            memset(s, 0, sizeof *s);
            s->state = state;
            s->a = *a;
            s->expected = 1 + c->param_layers;
            s->params = params;
            return s;
        }
    }
    return NULL;
}

/* Part p's data into dst, a gradient in this machine's filter groups if to_groups (else as it
 * came); NULL data, a gradient a node summed into another chunk's: -0.0 everywhere, which adds
 * nothing to any sum (-0 + x is x, x = +0 or -0 included). */
static void put(const coordinator *c, int p, const void *data, void *dst, int to_groups)
{
    if (!data) {
        for (long i = 0; i < c->layer_params[p - 1]; i++)
            ((float *)dst)[i] = -0.0f;
    } else if (p && to_groups) {
        trainer_grad_from_wire(c->t, p - 1, data, dst);
    } else {
        memcpy(dst, data, part_bytes(c, p));
    }
}

/* Part p meets its task: the data in place, the task to complete. */
static int meet(const coordinator *c, slot *s, int p, const void *data, rt_task **done)
{
    put(c, p, data, s->dst[p], 1);
    *done = s->task[p];
    s->task[p] = NULL;
    s->met++;
    return 1;
}

int sync_slot_task(coordinator *c, slot *s, int p, void *dst, rt_task *task, rt_task **done)
{
    s->dst[p] = dst, s->task[p] = task;
    int n = s->came[p] ? meet(c, s, p, held_part(s, c, p), done) : 0;
    if (s->met == s->expected)
        sync_slot_free(s);
    return n;
}

int sync_slot_has_gradients(const coordinator *c, const slot *s)
{
    for (int l = 0; l < c->nlayers; l++)
        if (s->came[1 + l])
            return 1;
    return 0;
}

int sync_slot_arrived(coordinator *c, slot *s, int p, const void *data, rt_task **done)
{
    if (s->came[p])
        return 0;   /* it came before the chunk was sent again */
    s->came[p] = 1;
    if (s->task[p])
        return meet(c, s, p, data, done);
    if (s->held || !p)   /* a stolen chunk's: its task has yet to start */
        put(c, p, data, held_part(s, c, p), 0);
    return 0;
}

int sync_slot_result(coordinator *c, slot *s, const msg_result *r, const float *grads, rt_task **done)
{
    int n = 0;
    for (int l = 0; grads && l < c->nlayers; l++)
        if (c->layer_params[l])
            n += sync_slot_arrived(c, s, 1 + l, grads + c->layer_offset[l], done + n);
    chunk_stats st = {r->loss, (int)r->correct, (int)r->samples};
    n += sync_slot_arrived(c, s, 0, &st, done + n);
    if (s->met == s->expected || s->probe)   /* a probe's parts meet no task */
        sync_slot_free(s);
    else
        s->state = SLOT_ARRIVED;
    return n;
}

int sync_slot_fail(slot *s, rt_task **done)
{
    int n = 0;
    for (int p = 0; p < SLOT_PARTS; p++)
        if (s->task[p])
            done[n++] = s->task[p];
    sync_slot_free(s);
    return n;
}

void sync_slot_free(slot *s)
{
    free(s->held);
    s->held = NULL;
    s->state = SLOT_FREE;
}
