#include "opencl/device.h"
#include "common/env_switches.h"
#include "opencl/completion.h"

#include "opencl/kernels_cl.h"   /* the kernels' source, generated from kernels.cl */

#include <clblast_c.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void info_string(cl_device_id d, cl_device_info what, char *out, size_t n)
{
    if (clGetDeviceInfo(d, what, n, out, NULL) != CL_SUCCESS)
        snprintf(out, n, "?");
    out[n - 1] = 0;
}

static void describe_found(ocl_device *d)
{
    char ext[4096];
    info_string(d->id, CL_DEVICE_NAME, d->name, sizeof d->name);
    info_string(d->id, CL_DEVICE_VENDOR, d->vendor, sizeof d->vendor);
    info_string(d->id, CL_DEVICE_VERSION, d->version, sizeof d->version);
    info_string(d->id, CL_DEVICE_EXTENSIONS, ext, sizeof ext);
    d->fp64 = strstr(ext, "cl_khr_fp64") != NULL;
    clGetDeviceInfo(d->id, CL_DEVICE_TYPE, sizeof d->type, &d->type, NULL);
    clGetDeviceInfo(d->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof d->compute_units,
                    &d->compute_units, NULL);
    clGetDeviceInfo(d->id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof d->global_mem, &d->global_mem, NULL);
    clGetDeviceInfo(d->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof d->max_alloc, &d->max_alloc, NULL);
}

/* Vendors' drivers often installed without the ICD file that lists them (a container given a
 * GPU's driver but not /etc/OpenCL/vendors): looked for when no platform of theirs is listed. */
static const struct { const char *vendor, *library, *icd; } vendor_drivers[] = {
    {"NVIDIA", "libnvidia-opencl.so.1", "nvidia.icd"},
    {"AMD", "libamdocl64.so", "amdocl64.icd"},
    {"Intel", "libigdrcl.so", "intel.icd"},
};

/* listed: the platforms' names and vendors, one string. */
static void find_unlisted(ocl_list *list, const char *listed)
{
    const char *vendors = getenv("OCL_ICD_VENDORS");
    for (size_t i = 0; i < sizeof vendor_drivers / sizeof vendor_drivers[0]; i++) {
        if (strstr(listed, vendor_drivers[i].vendor))
            continue;
        void *h = dlopen(vendor_drivers[i].library, RTLD_LAZY | RTLD_LOCAL);
        if (!h)
            continue;
        dlclose(h);
        snprintf(list->unlisted, sizeof list->unlisted, "%s's OpenCL driver %s is installed but "
                 "no ICD file in %s names it: a file there holding its name (e.g. %s) makes its "
                 "devices usable", vendor_drivers[i].vendor, vendor_drivers[i].library,
                 vendors ? vendors : "/etc/OpenCL/vendors", vendor_drivers[i].icd);
        return;
    }
}

int ocl_discover(ocl_list *list)
{
    memset(list, 0, sizeof *list);
    if (ocl_load(list->why, sizeof list->why))
        return 0;
    cl_platform_id platforms[8];
    cl_uint np = 0;
    cl_int rc = clGetPlatformIDs(8, platforms, &np);
    char listed[8 * 256] = "";
    for (cl_uint p = 0; rc == CL_SUCCESS && p < np && p < 8; p++) {
        char name[128] = "", vendor[128] = "";
        clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof name, name, NULL);
        clGetPlatformInfo(platforms[p], CL_PLATFORM_VENDOR, sizeof vendor, vendor, NULL);
        snprintf(listed + strlen(listed), sizeof listed - strlen(listed), "%.127s %.127s; ", name,
                 vendor);
    }
    find_unlisted(list, listed);
    if (rc != CL_SUCCESS || np == 0) {
        const char *vendors = getenv("OCL_ICD_VENDORS");
        snprintf(list->why, sizeof list->why, "no OpenCL platform: the loader found no driver "
                 "(%s; ICDs are listed in %s; install one, e.g. pocl-opencl-icd)",
                 rc == CL_SUCCESS ? "none installed" : ocl_error_name(rc),
                 vendors ? vendors : "/etc/OpenCL/vendors");
        return 0;
    }
    for (cl_uint p = 0; p < np && p < 8; p++) {
        cl_device_id ids[OCL_MAX_DEVICES];
        cl_uint nd = 0;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, OCL_MAX_DEVICES, ids, &nd) != CL_SUCCESS)
            continue;
        char pname[128];
        if (clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL))
            snprintf(pname, sizeof pname, "?");
        for (cl_uint i = 0; i < nd && list->n < OCL_MAX_DEVICES; i++) {
            ocl_device *d = &list->dev[list->n];
            d->index = list->n++;
            d->platform = platforms[p];
            d->id = ids[i];
            snprintf(d->platform_name, sizeof d->platform_name, "%s", pname);
            describe_found(d);
        }
    }
    if (!list->n)
        snprintf(list->why, sizeof list->why, "%u OpenCL platform%s, but no device in any",
                 np, np == 1 ? "" : "s");
    return list->n;
}

void ocl_describe(const ocl_device *d, char *out, size_t n)
{
    snprintf(out, n, "%s (%s, %u compute units, %.1f GB, %s)", d->name, d->vendor,
             d->compute_units, (double)d->global_mem / 1e9, d->version);
}

int ocl_check(ocl_device *d, cl_int rc, const char *what, char *err, size_t errlen)
{
    if (rc == CL_SUCCESS)
        return 0;
    snprintf(err, errlen, "OpenCL device %s: %s: %s%s", d->name, what, ocl_error_name(rc),
             rc == CL_OUT_OF_RESOURCES && atomic_load(&d->injected)
                 ? " (injected by FRUGAL_OPENCL_FAIL_AFTER)" : "");
    return -1;
}

cl_int ocl_injected_failure(ocl_device *d)
{
    long n = atomic_fetch_add(&d->enqueues, 1) + 1;
    if (d->fail_after <= 0 || n <= d->fail_after)
        return CL_SUCCESS;
    atomic_store(&d->injected, 1);
    return CL_OUT_OF_RESOURCES;
}

/* frugal's kernels, built for the device; the build log on failure. */
static int build_kernels(ocl_device *d, char *err, size_t errlen)
{
    cl_int rc;
    const char *src = frugal_kernels_cl;
    d->program = clCreateProgramWithSource(d->ctx, 1, &src, NULL, &rc);
    if (ocl_check(d, rc, "creating the kernels' program", err, errlen))
        return -1;
    const char *options = d->fp64 ? "-cl-std=CL1.2 -DHAVE_FP64" : "-cl-std=CL1.2";
    rc = clBuildProgram(d->program, 1, &d->id, options, NULL, NULL);
    if (rc != CL_SUCCESS) {
        char log[2048] = "";
        clGetProgramBuildInfo(d->program, d->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        snprintf(err, errlen, "OpenCL device %s: building frugal's kernels: %s: %.1500s", d->name,
                 ocl_error_name(rc), log);
        return -1;
    }
    return 0;
}

/* A small SGEMM through CLBlast against the same product on the host. */
static void check_clblast(ocl_device *d)
{
    enum { M = 5, N = 7, K = 3 };
    float a[M * K], b[K * N], c[M * N], want[M * N];
    for (int i = 0; i < M * K; i++)
        a[i] = (float)(i % 7) - 3;
    for (int i = 0; i < K * N; i++)
        b[i] = (float)(i % 5) * 0.5f;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            want[i * N + j] = 0;
            for (int k = 0; k < K; k++)
                want[i * N + j] += a[i * K + k] * b[k * N + j];
        }
    cl_int rc;
    cl_mem A = clCreateBuffer(d->ctx, CL_MEM_COPY_HOST_PTR, sizeof a, a, &rc);
    cl_mem B = clCreateBuffer(d->ctx, CL_MEM_COPY_HOST_PTR, sizeof b, b, &rc);
    cl_mem C = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, sizeof c, NULL, &rc);
    cl_event ev = NULL;
    CLBlastStatusCode s = A && B && C
        ? CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, M, N, K,
                       1.0f, A, 0, K, B, 0, N, 0.0f, C, 0, N, &d->queue, &ev)
        : CLBlastTempBufferAllocFailure;
    if (s == CLBlastSuccess)
        s = (CLBlastStatusCode)clEnqueueReadBuffer(d->queue, C, CL_TRUE, 0, sizeof c, c, 1, &ev, NULL);
    int same = s == CLBlastSuccess;
    for (int i = 0; same && i < M * N; i++)
        same = fabsf(c[i] - want[i]) <= 1e-5f * (1 + fabsf(want[i]));
    d->clblast = same;
    snprintf(d->clblast_why, sizeof d->clblast_why, "%s",
             same ? "SGEMM self-check passed"
             : s == CLBlastSuccess ? "SGEMM self-check gave a wrong product"
                                   : "SGEMM self-check failed");
    if (ev)
        clReleaseEvent(ev);
    for (cl_mem *m = (cl_mem[]){A, B, C}, *end = m + 3; m < end; m++)
        if (*m)
            clReleaseMemObject(*m);
}

int ocl_open(ocl_device *d, char *err, size_t errlen)
{
    cl_int rc;
    const char *inject = env_switch_value(ENV_OPENCL_FAIL_AFTER);
    d->fail_after = inject ? atol(inject) : 0;
    atomic_store(&d->enqueues, 0);
    atomic_store(&d->injected, 0);
    pthread_mutex_init(&d->kernels_lock, NULL);
    pthread_mutex_init(&d->awaited_lock, NULL);
    d->awaited = NULL;
    d->ctx = clCreateContext(NULL, 1, &d->id, NULL, NULL, &rc);
    if (ocl_check(d, rc, "creating a context", err, errlen))
        return -1;
    d->queue = clCreateCommandQueue(d->ctx, d->id, 0, &rc);
    if (ocl_check(d, rc, "creating the kernel queue", err, errlen))
        return -1;
    d->copies = clCreateCommandQueue(d->ctx, d->id, 0, &rc);
    if (ocl_check(d, rc, "creating the copy queue", err, errlen) || build_kernels(d, err, errlen))
        return -1;
    check_clblast(d);
    return 0;
}

void ocl_close(ocl_device *d)
{
    if (d->queue)
        clFinish(d->queue);
    if (d->copies)
        clFinish(d->copies);
    ocl_await_close(d);
    for (int i = 0; i < d->nkernels; i++)
        clReleaseKernel(d->kernels[i].k);
    d->nkernels = 0;
    for (int i = 0; i < OCL_SCRATCHES; i++) {
        if (d->scratch[i])
            clReleaseMemObject(d->scratch[i]);
        d->scratch[i] = NULL;
        d->scratch_bytes[i] = 0;
    }
    if (d->program)
        clReleaseProgram(d->program);
    if (d->copies)
        clReleaseCommandQueue(d->copies);
    if (d->queue)
        clReleaseCommandQueue(d->queue);
    if (d->ctx)
        clReleaseContext(d->ctx);
    d->program = NULL, d->copies = d->queue = NULL, d->ctx = NULL;
    pthread_mutex_destroy(&d->kernels_lock);
    pthread_mutex_destroy(&d->awaited_lock);
}
