/* Gradients from nodes checked against this machine's own (synchronous training). A node holding
 * the key is trusted to compute, but a buggy or hostile one could send gradients scaled up a
 * thousandfold, which the fixed-order sum would take silently. Non-finite values are refused in
 * the decoder (proto.c); here, the size of each layer's gradient is bounded.
 *
 * The bound. A chunk's gradient of a layer is the sum of its samples' gradients, so its L2
 * norm over its sample count is at most the largest of its samples' norms (the triangle
 * inequality), and chunks of one run draw their samples from the same data: the norm per
 * sample of a node's chunk should be of the size of the chunks computed here. Each layer keeps
 * the norms per sample of the last GRAD_WINDOW chunks computed here (every batch keeps one
 * here at least); a node's gradient whose norm per sample exceeds GRAD_BOUND times the largest
 * of them is refused, the node dropped and named, its chunks computed again elsewhere. The
 * window follows the gradients as they shrink over training; the factor leaves room for a
 * chunk of unlucky samples: over 2 epochs of examples/dahl-fashion-mnist, deeper-fashion-mnist
 * and cifar-shaped-fashion-mnist with a real node (2,000 gradients), a node's norm per sample
 * was at most 2.2, 1.8 and 3.0 times the window's largest. Until this machine computed a chunk
 * of the layer, a node's gradient is not checked.
 *
 * Refused, the gradient never reaches the sum, but that node's earlier ones, within the bound,
 * did: the run no longer says its weights are one machine's. Within the bound, a gradient
 * scaled a little, or of flipped sign, passes: only recomputing it could tell. */
#include "engine/cluster/sync_internal.h"

#include <math.h>
#include <stdio.h>

#define GRAD_BOUND 10.0

/* The squared L2 norm of n floats. */
static double norm2(const float *v, long n)
{
    double s = 0;
    for (long i = 0; i < n; i++)
        s += (double)v[i] * v[i];
    return s;
}

/* The samples of chunks [chunk, chunk + count) of a batch of `size`. */
static int chunk_samples(const coordinator *c, int chunk, int count, int size)
{
    int samples = 0, s0, s1;
    for (int k = chunk; k < chunk + count; k++) {
        plan_chunk(trainer_plan(c->t), k, size, &s0, &s1);
        samples += s1 - s0;
    }
    return samples;
}

/* The peer worker: chunk a->chunk of layer a->layer ran here (remote.h). */
void sync_grad_ran_here(remote_sink *sink, const remote_args *a, const float *grad)
{
    coordinator *c = ((sync_state *)sink)->c;
    int samples = chunk_samples(c, a->chunk, 1, a->size);
    if (samples <= 0)
        return;
    double per_sample = sqrt(norm2(grad, c->layer_params[a->layer])) / samples;
    pthread_mutex_lock(&c->lock);
    grad_window *w = &sync_of(c)->grad_here[a->layer];
    w->norm[w->n++ % GRAD_WINDOW] = per_sample;
    pthread_mutex_unlock(&c->lock);
}

const char *sync_grad_check(coordinator *c, const msg_layer *g, int size, char *why, size_t whylen)
{
    const grad_window *w = &sync_of(c)->grad_here[g->layer];
    int kept = w->n < GRAD_WINDOW ? w->n : GRAD_WINDOW;
    double largest = 0;
    for (int i = 0; i < kept; i++)
        largest = w->norm[i] > largest ? w->norm[i] : largest;
    int samples = chunk_samples(c, (int)g->chunk, (int)g->chunks, size);
    if (!kept || largest <= 0 || samples <= 0)
        return NULL;
    double per_sample = sqrt(norm2(g->values, c->layer_params[g->layer])) / samples;
    if (per_sample <= GRAD_BOUND * largest)
        return NULL;
    snprintf(why, whylen, "a gradient of layer %u %.3g times the largest per sample of the last "
             "%d chunks computed here (at most %g)", g->layer, per_sample / largest, kept,
             GRAD_BOUND);
    return why;
}
