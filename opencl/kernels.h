/* The device versions of the CPU kernels (ops/), for one chunk of samples: each enqueues its
 * work on the device's kernel queue and returns the event of its last command (the caller
 * completes its task on it), or -1 with err naming the device and the OpenCL error. Buffers are
 * (cl_mem, byte offset) pairs: a handle's part in its buffer's device copy. Layouts and
 * arguments are those of ops/, on samples [0, n). */
#ifndef FRUGAL_OPENCL_KERNELS_H
#define FRUGAL_OPENCL_KERNELS_H

#include "opencl/device.h"
#include "ops/conv.h"
#include "ops/layers.h"

#include <stdint.h>

typedef struct ocl_buf {
    cl_mem mem;
    size_t offset;       /* bytes */
} ocl_buf;

typedef struct ocl_launch {
    ocl_device *d;
    cl_event done;       /* the last command's event; the caller releases it */
    char *err;
    size_t errlen;
} ocl_launch;

/* floats = bytes * scale through the order (order.mem NULL: samples first..first+n-1). */
int ocl_kernel_load(ocl_launch *l, ocl_buf pixels, ocl_buf labels_in, ocl_buf order, long first,
              long per, int n, float scale, ocl_buf out, ocl_buf labels);
int ocl_kernel_conv_forward(ocl_launch *l, const conv_geom *g, ocl_buf x, ocl_buf params, ocl_buf y,
                      int n, int f0, int f1);
int ocl_kernel_conv_backward_input(ocl_launch *l, const conv_geom *g, ocl_buf dy, ocl_buf params,
                             ocl_buf dx, int n);
/* The gradient of filters [f0, f1): their weights then their biases, into part. */
int ocl_kernel_conv_backward_filter(ocl_launch *l, const conv_geom *g, ocl_buf x, ocl_buf dy,
                              ocl_buf part, int n, int f0, int f1);
int ocl_kernel_maxpool_forward(ocl_launch *l, const pool_geom *g, ocl_buf x, ocl_buf y,
                         ocl_buf argmax, int n);
int ocl_kernel_maxpool_backward(ocl_launch *l, const pool_geom *g, ocl_buf dy, ocl_buf argmax,
                          ocl_buf dx, int n);
int ocl_kernel_relu_forward(ocl_launch *l, ocl_buf x, ocl_buf y, long count);
int ocl_kernel_relu_backward(ocl_launch *l, ocl_buf y, ocl_buf dy, ocl_buf dx, long count);
/* The same into a scratch buffer of the device's (*dx), for the kernels the caller enqueues next
 * in the same task: a relu fused after a layer (engine/model/device_task.h). */
int ocl_kernel_relu_backward_scratch(ocl_launch *l, ocl_buf y, ocl_buf dy, long count,
                                     ocl_buf *dx);
/* params: W (out x in) then b. The forward pass is a work-group per output value; the gradients
 * are GEMMs, through CLBlast where it passed its self-check and the inner dimension is long. */
int ocl_kernel_dense_forward(ocl_launch *l, int in, int out, ocl_buf x, ocl_buf params, ocl_buf y,
                       int n);
/* part gets dW then db; dx (if dx.mem) dy W. */
int ocl_kernel_dense_backward(ocl_launch *l, int in, int out, ocl_buf x, ocl_buf dy, ocl_buf params,
                        ocl_buf part, ocl_buf dx, int n);
/* The chunk's chunk_stats (engine/model/layer.h's layout: double loss, int correct, int samples);
 * dz and pred when their mem is set. */
int ocl_kernel_softmax_xent(ocl_launch *l, int classes, ocl_buf z, ocl_buf labels, float scale,
                      ocl_buf dz, ocl_buf pred, ocl_buf stats, int n);
int ocl_kernel_copy_or_add(ocl_launch *l, ocl_buf dst, ocl_buf src, long count, int copy);
int ocl_kernel_sgd(ocl_launch *l, ocl_buf w, ocl_buf g, ocl_buf v, long count, float lr,
             float momentum, float weight_decay);

/* Has fn complete an asynchronous task when l->done completes (and release the event): from the
 * event's callback or from ocl_poll (completion.h). Returns 0 or -1 with err. */
int ocl_kernel_on_done(ocl_launch *l, void (CL_CALLBACK *fn)(cl_event, cl_int, void *), void *arg);

/* For a device whose tasks are done once enqueued (d->done_when_enqueued: every task of the run
 * on it, `devices = opencl`): the task's kernels go to the device's in-order queue without
 * events, and the queue is flushed a few tasks at a time (completion.h). The next task is
 * enqueued while they run, where waiting to see them complete left a GPU idle 15-30 us a task;
 * the queue keeps them in order, and copies wait for them (ocl_kernel_tail). On an H200 (docs/
 * benchmarks.md): DAHL 28x28x1 119,543 img/s waiting, 138,946 done once enqueued, 213,050 so
 * without events or a flush a task. */
void ocl_kernel_enqueued(ocl_launch *l);

/* What a copy on the device waits for, in *tail: a marker after the kernels enqueued so far (the
 * caller releases it), or NULL where tasks complete with their kernels. Returns CL_SUCCESS or
 * the enqueue's error. Errors of those kernels show as the copy's. */
cl_int ocl_kernel_tail(ocl_device *d, cl_event *tail);

#endif
