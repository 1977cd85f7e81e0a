/* The OpenCL devices a run uses, from the job's [execution] devices and device keys: found,
 * filtered, opened (kernels compiled, which it says it is doing), and described to the runtime as
 * workers with memories of their own. What was found, used and fallen back to is said once on
 * the run's output and kept for summary.json. */
#ifndef FRUGAL_DEVICES_H
#define FRUGAL_DEVICES_H

#include "engine/job/config.h"
#include "opencl/device.h"
#include "runtime/runtime.h"

#include <stdio.h>

typedef struct run_devices {
    ocl_list found;
    int n;
    ocl_device *used[OCL_MAX_DEVICES];
    int pinned;                  /* devices = opencl: tasks a device can run run there only */
    char note[600];              /* what was found, used or fallen back to, and why */
    char models[512];            /* the placement models' file, "" when not kept */
    char models_note[640];       /* loaded from it, or why not */
    char energy_note[720];       /* the figures placement weighs under an energy policy
                                    (engine/placement/device_energy.h) */
} run_devices;

/* Fills cfg's devices for rt_create. Returns 0, or -1 with err (devices = opencl and none usable,
 * or a device that fails to open when it was asked for by name). */
int devices_open(run_devices *rd, const job_config *job, rt_config *cfg, FILE *log, char *err,
                 size_t errlen);
void devices_close(run_devices *rd);
/* The placement models (task times per kind and worker kind) a run starts from and leaves for
 * the next: a file per machine and set of devices, in $FRUGAL_PERFMODEL_DIR, else
 * $XDG_CACHE_HOME/frugal/perfmodel, else ~/.cache/frugal/perfmodel. Not read when deterministic
 * (placement is fixed then). Problems are said on log; the run goes on without the file. */
void devices_models_load(run_devices *rd, rt_runtime *rt, int deterministic, FILE *log);
void devices_models_save(run_devices *rd, rt_runtime *rt, FILE *log);
/* frugal info: every platform and device, each opened to run CLBlast's self-check, or why
 * none was found. */
int devices_print_info(FILE *out);
/* What computes, in a few words: "cpu", "opencl: NAME[, NAME]" (pinned) or "cpu+opencl: NAME...". */
void devices_describe(const run_devices *rd, char *out, size_t cap);
/* The devices as JSON members (no braces), for summary.json. */
void devices_write_json(const run_devices *rd, FILE *f);

#endif
