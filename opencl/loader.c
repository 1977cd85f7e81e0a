#include "opencl/loader.h"
#include "common/env_switches.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* Calling OpenCL before the loader is in: a bug in frugal, not a condition to recover from. */
static void unloaded(const char *name)
{
    fprintf(stderr, "frugal: %s called before the OpenCL loader was loaded\n", name);
    abort();
}

/* A pointer per function, and the function itself forwarding to it. */
#define CL_FN(ret, name, params, args)                                                         \
    static ret(CL_API_CALL *p_##name) params;                                                 \
    CL_API_ENTRY ret CL_API_CALL name params                                                   \
    {                                                                                          \
        if (!p_##name)                                                                         \
            unloaded(#name);                                                                   \
        return p_##name args;                                                                  \
    }
#include "opencl/cl_forwarders.h"
#undef CL_FN

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char failure[512];   /* empty when the loader is in */

static void load(void)
{
    const char *lib = env_switch_value(ENV_OPENCL_LOADER);
    if (!lib || !*lib)
        lib = "libOpenCL.so.1";
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(failure, sizeof failure, "no OpenCL loader: %s (install ocl-icd-libopencl1 and "
                 "a driver, e.g. pocl-opencl-icd)", dlerror());
        return;
    }
    /* each pointer from its symbol; a loader too old for one of them is refused whole */
#define CL_FN(ret, name, params, args)                                                         \
    if (!failure[0] && !(*(void **)&p_##name = dlsym(h, #name)))                               \
        snprintf(failure, sizeof failure, "the OpenCL loader %s lacks %s (OpenCL 1.2 needed)", \
                 lib, #name);
#include "opencl/cl_forwarders.h"
#undef CL_FN
}

int ocl_load(char *why, size_t n)
{
    pthread_once(&once, load);
    if (failure[0])
        snprintf(why, n, "%s", failure);
    return failure[0] ? -1 : 0;
}

const char *ocl_error_name(cl_int code)
{
    static const struct { cl_int code; const char *name; } names[] = {
        {CL_SUCCESS, "CL_SUCCESS"},
        {CL_DEVICE_NOT_FOUND, "CL_DEVICE_NOT_FOUND"},
        {CL_DEVICE_NOT_AVAILABLE, "CL_DEVICE_NOT_AVAILABLE"},
        {CL_COMPILER_NOT_AVAILABLE, "CL_COMPILER_NOT_AVAILABLE"},
        {CL_MEM_OBJECT_ALLOCATION_FAILURE, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
        {CL_OUT_OF_RESOURCES, "CL_OUT_OF_RESOURCES"},
        {CL_OUT_OF_HOST_MEMORY, "CL_OUT_OF_HOST_MEMORY"},
        {CL_BUILD_PROGRAM_FAILURE, "CL_BUILD_PROGRAM_FAILURE"},
        {CL_MISALIGNED_SUB_BUFFER_OFFSET, "CL_MISALIGNED_SUB_BUFFER_OFFSET"},
        /* a copy after a kernel that failed while it ran (kernels.h, ocl_kernel_tail) */
        {CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
         "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST (a command it waited for failed)"},
        {CL_INVALID_VALUE, "CL_INVALID_VALUE"},
        {CL_INVALID_PLATFORM, "CL_INVALID_PLATFORM"},
        {CL_INVALID_DEVICE, "CL_INVALID_DEVICE"},
        {CL_INVALID_CONTEXT, "CL_INVALID_CONTEXT"},
        {CL_INVALID_COMMAND_QUEUE, "CL_INVALID_COMMAND_QUEUE"},
        {CL_INVALID_MEM_OBJECT, "CL_INVALID_MEM_OBJECT"},
        {CL_INVALID_BUILD_OPTIONS, "CL_INVALID_BUILD_OPTIONS"},
        {CL_INVALID_PROGRAM_EXECUTABLE, "CL_INVALID_PROGRAM_EXECUTABLE"},
        {CL_INVALID_KERNEL_NAME, "CL_INVALID_KERNEL_NAME"},
        {CL_INVALID_KERNEL, "CL_INVALID_KERNEL"},
        {CL_INVALID_ARG_INDEX, "CL_INVALID_ARG_INDEX"},
        {CL_INVALID_ARG_VALUE, "CL_INVALID_ARG_VALUE"},
        {CL_INVALID_ARG_SIZE, "CL_INVALID_ARG_SIZE"},
        {CL_INVALID_KERNEL_ARGS, "CL_INVALID_KERNEL_ARGS"},
        {CL_INVALID_WORK_DIMENSION, "CL_INVALID_WORK_DIMENSION"},
        {CL_INVALID_WORK_GROUP_SIZE, "CL_INVALID_WORK_GROUP_SIZE"},
        {CL_INVALID_GLOBAL_OFFSET, "CL_INVALID_GLOBAL_OFFSET"},
        {CL_INVALID_EVENT_WAIT_LIST, "CL_INVALID_EVENT_WAIT_LIST"},
        {CL_INVALID_OPERATION, "CL_INVALID_OPERATION"},
        {CL_INVALID_BUFFER_SIZE, "CL_INVALID_BUFFER_SIZE"},
        {CL_INVALID_GLOBAL_WORK_SIZE, "CL_INVALID_GLOBAL_WORK_SIZE"},
        {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
    };
    static _Thread_local char other[40];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].code == code)
            return names[i].name;
    snprintf(other, sizeof other, "OpenCL error %d", (int)code);
    return other;
}
