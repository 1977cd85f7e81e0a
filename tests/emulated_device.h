/* A device emulated in host memory, for the runtime's tests (not part of frugal): its memory is
 * malloc'd, so a copy to or from it is a real copy, made on its own thread after a short delay;
 * its tasks run on that thread after a delay too and complete with rt_task_complete. These are
 * the paths an OpenCL device or another machine takes: asynchronous copies, completion from
 * outside a task body, data that is valid in one memory and not another. */
#ifndef FRUGAL_TEST_EMULATED_DEVICE_H
#define FRUGAL_TEST_EMULATED_DEVICE_H

#include "runtime/runtime.h"

#include <stddef.h>

typedef struct emu_device emu_device;

/* delay_us: before each copy and each task; fail_copies: every copy after that many fails. */
emu_device *emu_create(int delay_us);
void emu_fail_copies_after(emu_device *d, long copies);
void emu_memory_limit(emu_device *d, size_t bytes);   /* allocations beyond it fail */
void emu_destroy(emu_device *d);
rt_device emu_as_device(emu_device *d, const char *name);
/* The same, but its tasks complete only when its worker polls it (rt_device.poll), as a GPU's
 * commands may: the worker must not sleep while some are in flight. */
rt_device emu_as_polled_device(emu_device *d, const char *name);

/* For an RT_WORKER_EMULATED body: runs fn on the device's thread with each access's pointer in
 * its memory and a copy of args, then completes the task (failed if fn returns non-zero).
 * Returns RT_PENDING. */
typedef int (*emu_fn)(void *const *data, int ndata, void *args);
int emu_launch(const rt_ctx *ctx, int naccess, emu_fn fn, const void *args, size_t size);

#endif
