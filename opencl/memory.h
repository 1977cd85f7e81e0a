/* An OpenCL device's memory as the runtime sees it (runtime.h's rt_memory_ops): buffers, and
 * copies to and from the host that run on the device's copy queue, beside its kernels, and
 * complete through event callbacks. */
#ifndef FRUGAL_OPENCL_MEMORY_H
#define FRUGAL_OPENCL_MEMORY_H

#include "opencl/device.h"
#include "runtime/runtime.h"

extern const rt_memory_ops ocl_memory_ops;   /* the device: an ocl_device * */

#endif
