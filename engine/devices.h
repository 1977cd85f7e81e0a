/* The OpenCL devices a run uses, from the job's [execution] devices and device keys: found,
 * filtered, opened (kernels compiled, which it says it is doing), and described to the runtime as
 * workers with memories of their own. What was found, used and fallen back to is said once on
 * the run's output and kept for summary.json. */
#ifndef FRUGAL_DEVICES_H
#define FRUGAL_DEVICES_H

#include "engine/config.h"
#include "opencl/device.h"
#include "runtime/runtime.h"

#include <stdio.h>

typedef struct run_devices {
    ocl_list found;
    int n;
    ocl_device *used[OCL_MAX_DEVICES];
    int pinned;                  /* devices = opencl: tasks a device can run run there only */
    char note[600];              /* what was found, used or fallen back to, and why */
} run_devices;

/* Fills cfg's devices for rt_create. Returns 0, or -1 with err (devices = opencl and none usable,
 * or a device that fails to open when it was asked for by name). */
int devices_open(run_devices *rd, const job_config *job, rt_config *cfg, FILE *log, char *err,
                 size_t errlen);
void devices_close(run_devices *rd);
/* The devices as JSON members (no braces), for summary.json. */
void devices_write_json(const run_devices *rd, FILE *f);

#endif
