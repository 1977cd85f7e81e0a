/* What the OpenCL implementations of task kinds share: each access's buffer in the device's
 * memory, a launch on the worker's device, and completing the task when the device has run the
 * launch's last command (the body returns RT_PENDING, so its worker feeds the device other work
 * meanwhile). */
#ifndef FRUGAL_DEVICE_TASK_H
#define FRUGAL_DEVICE_TASK_H

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
/* rc: what the launch's calls returned. RT_PENDING, or -1 after rt_fail naming the device. */
int device_task_finish(device_task *dt, const rt_ctx *ctx, int rc);

#endif
