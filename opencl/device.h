/* OpenCL devices: finding them (platforms, devices, what each offers), and opening one for work:
 * a context, a queue for kernels and one for copies (so copies overlap kernels), frugal's kernels
 * built once, and CLBlast checked on it. Where no OpenCL is found, ocl_discover says why (no
 * loader, no ICD, an ICD that fails to load), naming the library. */
#ifndef FRUGAL_OPENCL_DEVICE_H
#define FRUGAL_OPENCL_DEVICE_H

#include "opencl/loader.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#define OCL_MAX_DEVICES 8

/* A device's scratch buffers, by use (opencl/kernels.c). */
enum {
    OCL_SCRATCH_LOSS,                /* per-sample figures of the loss */
    OCL_SCRATCH_RELU,                /* a gradient through a fused relu */
    OCL_SCRATCH_SLICES,              /* a filter gradient's partial sums */
    OCL_SCRATCH_COLUMNS,             /* a convolution's im2col matrices, or their gradient */
    OCL_SCRATCHES
};

typedef struct ocl_device {
    /* found by ocl_discover */
    int index;                       /* in discovery order, for [execution] device filters */
    cl_platform_id platform;
    cl_device_id id;
    char name[128], vendor[128], version[96], platform_name[128];
    cl_device_type type;
    cl_uint compute_units;
    cl_ulong global_mem, max_alloc;
    int fp64;                        /* cl_khr_fp64 */
    /* set by ocl_open */
    cl_context ctx;
    cl_command_queue queue;          /* kernels, in order */
    cl_command_queue copies;         /* copies to and from the host, in order */
    cl_program program;              /* frugal's kernels */
    pthread_mutex_t kernels_lock;    /* cl_kernel objects are not thread-safe to set up */
    struct ocl_kernel { const char *name; cl_kernel k; } kernels[32];   /* created on first use */
    int nkernels;
    cl_mem scratch[OCL_SCRATCHES];   /* grown on demand, kept: no allocation per task */
    size_t scratch_bytes[OCL_SCRATCHES];
    int clblast;                     /* CLBlast's self-check passed here */
    char clblast_why[160];           /* or why not */
    _Atomic long enqueues;           /* for the failure injection below */
    long fail_after;                 /* FRUGAL_OPENCL_FAIL_AFTER: an injected error (tests) */
    _Atomic int injected;            /* it fired: errors say so */
    int done_when_enqueued;          /* a task is done once enqueued (ocl_kernel_enqueued) */
    _Atomic int unflushed;           /* tasks enqueued since the kernel queue's last flush */
    pthread_mutex_t awaited_lock;
    struct ocl_awaited *awaited;     /* commands whose completion is awaited (completion.h) */
} ocl_device;

typedef struct ocl_list {
    int n;
    ocl_device dev[OCL_MAX_DEVICES];
    char why[512];                   /* when n == 0: why no device was found */
    char unlisted[400];              /* a vendor's driver installed but listed in no ICD file,
                                      * and how to list it ("" if none) */
} ocl_list;

/* Every device of every platform. Returns the number found (0 with list->why set). */
int ocl_discover(ocl_list *list);
/* Context, queues, kernels (built now: the caller says "compiling OpenCL kernels" first) and the
 * CLBlast check. Returns 0, or -1 with err naming the device and the OpenCL error. */
int ocl_open(ocl_device *d, char *err, size_t errlen);
void ocl_close(ocl_device *d);
/* A human line: "NVIDIA GeForce GTX 1080 (NVIDIA Corporation, 20 CUs, 8.0 GB, OpenCL 3.0)". */
void ocl_describe(const ocl_device *d, char *out, size_t n);

/* Checks an OpenCL call made for device d: 0, or -1 with err naming the device and the error. */
int ocl_check(ocl_device *d, cl_int rc, const char *what, char *err, size_t errlen);
/* Called before each enqueue, which are counted: CL_SUCCESS to go ahead. FRUGAL_OPENCL_FAIL_AFTER=N
 * makes every one after the Nth fail on purpose with CL_OUT_OF_RESOURCES (tests: a device that
 * fails mid-run); the caller then enqueues nothing, as when a real enqueue fails. */
cl_int ocl_injected_failure(ocl_device *d);

#endif
