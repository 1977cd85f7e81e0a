/* What the OpenCL implementations of task kinds share: each access's buffer in the device's
 * memory, a launch on the worker's device, and completing the task when the device has run the
 * launch's last command (the body returns RT_PENDING, so its worker feeds the device other work
 * meanwhile). */
#ifndef FRUGAL_DEVICE_TASK_H
#define FRUGAL_DEVICE_TASK_H

#include "engine/model/layer.h"
#include "opencl/kernels.h"
#include "runtime/runtime.h"

typedef struct device_task {
    ocl_launch l;
    char err[400];
} device_task;

void device_task_start(device_task *dt, const rt_ctx *ctx);
/* Access i's buffer; with `back` bytes taken off its offset (a part that starts inside what the
 * kernel is given, such as a filter group's share of a chunk). */
ocl_buf device_buf(const rt_ctx *ctx, int i, size_t back);
/* rc: what the launch's calls returned. 0 (done: a device whose tasks are done once enqueued,
 * opencl/kernels.h), RT_PENDING, or -1 after rt_fail naming the device. */
int device_task_finish(device_task *dt, const rt_ctx *ctx, int rc);

/* A layer's kernels for one task, enqueued on dt's launch; backward ones read the output
 * gradient from dy. Returns 0 or -1 (dt's err says why). */
typedef int (*device_enqueue_fn)(const rt_ctx *ctx, const layer_task *a, device_task *dt,
                                 ocl_buf dy);
/* A layer task on the device: its kernels, dy being the at.dy access (if any). */
int device_layer_task(const rt_ctx *ctx, const layer_task *a, device_enqueue_fn enqueue);
/* With the relu after the layer fused into its tasks (a device-pinned run: engine/train/plan.c),
 * which saves the relu's two tasks per chunk, each a round trip to the device. Forward: the
 * layer's kernels, then the relu in place on its output (at.out, the relu's). Backward: the
 * relu's output gradient (at.dy) through its output (at.out) into the device's scratch, then
 * the layer's kernels from there. */
int device_layer_relu_forward(const rt_ctx *ctx, const layer_task *a, device_enqueue_fn enqueue);
int device_layer_relu_backward(const rt_ctx *ctx, const layer_task *a, device_enqueue_fn enqueue);

#endif
