/* Waiting for an OpenCL device: a command's completion function runs once, from the command's
 * event callback (a thread of the driver) or from ocl_poll, called by a worker that is waiting
 * for the device anyway, whichever sees the command done first. A driver may call back tens of
 * microseconds after a short kernel ends, and the worker it wakes takes tens more (measured on an
 * H200: a chain of tasks ran 60-250 us a hop against kernels of 10-15 us); a worker that polls
 * starts the next task at once. The callback stays for when no one polls (the worker sleeps). */
#ifndef FRUGAL_OPENCL_COMPLETION_H
#define FRUGAL_OPENCL_COMPLETION_H

#include "opencl/device.h"

typedef void (CL_CALLBACK *ocl_done_fn)(cl_event e, cl_int status, void *arg);

/* fn(e, status, arg) once e completes (status CL_COMPLETE) or fails (a negative status); fn
 * releases e. Returns CL_SUCCESS, or the error of clSetEventCallback: then nothing will call fn
 * and e is still the caller's. */
cl_int ocl_await(ocl_device *d, cl_event e, ocl_done_fn fn, void *arg);
/* Runs the completion function of each awaited command that is done; returns how many, and in
 * *in_flight (if not NULL) how many are still awaited. Any thread; it holds no lock while a
 * completion function runs. */
int ocl_poll(ocl_device *d, int *in_flight);
/* ocl_poll for the runtime (rt_device.poll): device is an ocl_device. */
int ocl_poll_device(void *device, int *in_flight);
/* A task's kernels enqueued on a device whose tasks are done once enqueued: the kernel queue is
 * flushed every few tasks, or when its worker runs out of them and polls (ocl_poll_device); at
 * once where nothing polls (FRUGAL_OPENCL_POLL=off). */
void ocl_flush_later(ocl_device *d);
/* Whether polling is on: FRUGAL_OPENCL_POLL=off leaves completions to the callbacks alone. */
int ocl_polling(void);
/* At close, once every command has ended: forgets what is awaited. */
void ocl_await_close(ocl_device *d);

#endif
