/* The environment variables that change what frugal does, read once at start (frugal's main,
 * or a test after it sets one) into one table that every module asks, and that summary.json
 * records. A module never calls getenv for a switch of its own.
 *
 *   FRUGAL_ISA             portable | avx2 | avx512: the CPU kernels' path (ops/cpu.c)
 *   FRUGAL_CONV            direct | wide | im2col | winograd | winograd4: the convolution path
 *   FRUGAL_INPUT           floats | bytes: how a first convolution reads its input (plan.c)
 *   FRUGAL_LAYOUT          nchw | auto: activations between convolutions in NCHW, or in channel
 *                          lanes where both take them (plan.c, ops/conv.h)
 *   FRUGAL_MEMBARRIER      off: the runtime's sleepers fence as where membarrier() is missing
 *   FRUGAL_NET_CIPHER      auto | xchacha20poly1305: the cluster's cipher
 *   FRUGAL_CACHE_DIR       where a node keeps the coordinator's files
 *   FRUGAL_PERFMODEL_DIR   where measured task costs and worker counts are kept
 *   FRUGAL_OPENCL_LOADER   the OpenCL ICD loader to dlopen (default libOpenCL.so.1)
 *   FRUGAL_OPENCL_FAIL_AFTER  N: the N-th OpenCL enqueue fails (tests of the fallback)
 *   FRUGAL_OPENCL_POLL     off: a device's commands complete through their callbacks alone, not
 *                          also polled by its waiting worker (opencl/completion.h)
 *   FRUGAL_OPENCL_PIPELINE  off: with devices = opencl, a device's task is done when its kernels
 *                          complete, not once they are enqueued (opencl/kernels.h)
 *   FRUGAL_OPENCL_CONV     direct | gemm: how a device runs a convolution (a work-item per
 *                          value, or im2col and CLBlast's GEMM; default: by size,
 *                          opencl/kernels.c)
 *   FRUGAL_NVML_LIBRARY    NVIDIA's NVML to dlopen (default libnvidia-ml.so.1)
 *   FRUGAL_SYSFS_ROOT, FRUGAL_PROCFS_ROOT  a folder standing for /sys, /proc (the energy tests'
 *                          fake sensors)
 *   FRUGAL_MODEL_SCOPE     process: the fallback model counts this process's CPU time, not the
 *                          host's (several frugal processes on one host: a loopback benchmark)
 *   FRUGAL_LAUNCH_RSH      how an OAR job's first host starts frugal on the others (default
 *                          oarsh; e.g. "ssh -o BatchMode=yes"), engine/cli/launch_spawn.c */
#ifndef FRUGAL_ENV_SWITCHES_H
#define FRUGAL_ENV_SWITCHES_H

#include <stdio.h>

typedef enum env_switch {
    ENV_ISA, ENV_CONV, ENV_INPUT, ENV_MEMBARRIER, ENV_NET_CIPHER, ENV_CACHE_DIR,
    ENV_PERFMODEL_DIR, ENV_OPENCL_LOADER, ENV_OPENCL_FAIL_AFTER, ENV_OPENCL_POLL, ENV_OPENCL_CONV,
    ENV_NVML_LIBRARY, ENV_SYSFS_ROOT, ENV_PROCFS_ROOT, ENV_MODEL_SCOPE, ENV_LAUNCH_RSH, ENV_LAYOUT,
    ENV_OPENCL_PIPELINE, ENV_SWITCHES
} env_switch;

/* Reads every switch from the environment (again). Call it before threads start. */
void env_switches_read(void);
/* A switch's value, NULL when it is not set (or empty); the first call reads them all if
 * env_switches_read was not called. */
const char *env_switch_value(env_switch s);
/* Its variable's name ("FRUGAL_CONV"). */
const char *env_switch_name(env_switch s);
/* The switches that are set, as a JSON object: {"FRUGAL_CONV": "im2col"} ({} for none). */
void env_switches_write_json(FILE *f);

#endif
