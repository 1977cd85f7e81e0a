#include "opencl/memory.h"
#include "opencl/completion.h"
#include "opencl/kernels.h"

#include <stdio.h>

static void *ocl_alloc(void *device, size_t bytes)
{
    ocl_device *d = device;
    if (bytes > d->max_alloc)
        return NULL;
    cl_int rc;
    cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &rc);
    return rc == CL_SUCCESS ? m : NULL;
}

static void ocl_free(void *device, void *base)
{
    (void)device;
    clReleaseMemObject(base);
}

static void CL_CALLBACK copy_done(cl_event e, cl_int status, void *transfer)
{
    rt_transfer_done(transfer, status != CL_COMPLETE, ocl_error_name(status));
    clReleaseEvent(e);
}

/* The region at the same offset in both memories: one run, or rows at a stride (a rectangle). */
static int ocl_copy(void *device, const rt_copy *c, char *err, size_t errlen)
{
    ocl_device *d = device;
    cl_mem m = c->device_base;
    cl_event e = NULL, tail = NULL;   /* after the kernels enqueued so far (kernels.h) */
    cl_int rc = ocl_injected_failure(d);
    if (rc == CL_SUCCESS)
        rc = ocl_kernel_tail(d, &tail);
    cl_uint waits = tail != NULL;
    const cl_event *after = tail ? &tail : NULL;
    if (rc != CL_SUCCESS) {
        /* nothing enqueued */
    } else if (c->rows == 1) {
        void *host = (char *)c->host_base + c->offset;
        rc = c->to_device
                 ? clEnqueueWriteBuffer(d->copies, m, CL_FALSE, c->offset, c->row_bytes, host,
                                       waits, after, &e)
                 : clEnqueueReadBuffer(d->copies, m, CL_FALSE, c->offset, c->row_bytes, host,
                                       waits, after, &e);
    } else {
        size_t origin[3] = {c->offset % c->stride, c->offset / c->stride, 0};
        size_t region[3] = {c->row_bytes, c->rows, 1};
        rc = c->to_device
                 ? clEnqueueWriteBufferRect(d->copies, m, CL_FALSE, origin, origin, region, c->stride,
                                            0, c->stride, 0, c->host_base, waits, after, &e)
                 : clEnqueueReadBufferRect(d->copies, m, CL_FALSE, origin, origin, region, c->stride,
                                           0, c->stride, 0, c->host_base, waits, after, &e);
    }
    if (tail)
        clReleaseEvent(tail);
    if (ocl_check(d, rc, c->to_device ? "copying to the device" : "copying to the host", err,
                  errlen))
        return -1;
    if (ocl_check(d, ocl_await(d, e, copy_done, c->done), "a copy's callback", err, errlen)) {
        clWaitForEvents(1, &e);   /* enqueued all the same: it must not land after the failure */
        clReleaseEvent(e);
        return -1;
    }
    clFlush(d->copies);
    return 0;
}

const rt_memory_ops ocl_memory_ops = {ocl_alloc, ocl_free, ocl_copy, 0};
