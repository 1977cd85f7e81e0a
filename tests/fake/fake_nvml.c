/* A stand-in for NVIDIA's libnvidia-ml.so.1, for energy/nvml.c's test (built as
 * build/VARIANT/libfake_nvml.so and named by FRUGAL_NVML_LIBRARY). Its GPUs are files in
 * $FAKE_NVML_DIR, read at every call: `count`, and per GPU i `energyI` (millijoules; absent: no
 * counter) and `powerI` (milliwatts; absent: not supported), and its power limit: `limitI`
 * (milliwatts; absent: none), `limit_minI`, `limit_maxI`, `limit_defaultI`; with `lockedI`
 * present, setting the limit is refused as without root. A limit set is written to `limitI` and
 * appended to `limit_logI`; the power read is never above the limit. While a file `hold` is
 * there, a reading waits (an NVML sample that lasts, as in a VM), having written `held`. Without
 * $FAKE_NVML_DIR it has no GPU. */
#define _POSIX_C_SOURCE 200809L   /* nanosleep */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { SUCCESS = 0, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3, NO_PERMISSION = 4 };

/* $FAKE_NVML_DIR/FILE, or FILEI for GPU i; 0 without the variable. */
static int path_of(const char *file, unsigned i, char *path, size_t n)
{
    const char *dir = getenv("FAKE_NVML_DIR");
    if (!dir)
        return 0;
    if (i == ~0u)
        snprintf(path, n, "%s/%s", dir, file);
    else
        snprintf(path, n, "%s/%s%u", dir, file, i);
    return 1;
}

static int read_number(const char *file, unsigned i, unsigned long long *out)
{
    char path[1024];
    if (!path_of(file, i, path, sizeof path))
        return -1;
    FILE *f = fopen(path, "r");
    int ok = f && fscanf(f, "%llu", out) == 1;
    if (f)
        fclose(f);
    return ok ? 0 : -1;
}

int nvmlInit_v2(void) { return SUCCESS; }
int nvmlShutdown(void) { return SUCCESS; }
const char *nvmlErrorString(int rc)
{
    return rc == NOT_SUPPORTED ? "Not Supported" : rc == NO_PERMISSION ? "Insufficient Permissions"
                                                                        : "Unknown Error";
}

int nvmlDeviceGetCount_v2(unsigned *n)
{
    unsigned long long count = 0;
    read_number("count", ~0u, &count);
    *n = (unsigned)count;
    return SUCCESS;
}

/* A device handle is its index plus one (never NULL). */
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **device)
{
    unsigned n;
    nvmlDeviceGetCount_v2(&n);
    if (i >= n)
        return INVALID_ARGUMENT;
    *device = (void *)(unsigned long)(i + 1);
    return SUCCESS;
}

int nvmlDeviceGetName(void *device, char *name, unsigned len)
{
    snprintf(name, len, "Fake GPU %lu", (unsigned long)device - 1);
    return SUCCESS;
}

/* Waits while $FAKE_NVML_DIR/hold exists, saying so with $FAKE_NVML_DIR/held. */
static void wait_while_held(void)
{
    char hold[1024], held[1024];
    if (!path_of("hold", ~0u, hold, sizeof hold) || access(hold, F_OK))
        return;
    path_of("held", ~0u, held, sizeof held);
    FILE *f = fopen(held, "w");
    if (f)
        fclose(f);
    while (!access(hold, F_OK))
        nanosleep(&(struct timespec){0, 1000000L}, NULL);
}

int nvmlDeviceGetTotalEnergyConsumption(void *device, unsigned long long *mj)
{
    wait_while_held();
    return read_number("energy", (unsigned)((unsigned long)device - 1), mj) ? NOT_SUPPORTED : SUCCESS;
}

int nvmlDeviceGetPowerUsage(void *device, unsigned *mw)
{
    wait_while_held();
    unsigned long long v;
    unsigned i = (unsigned)((unsigned long)device - 1);
    unsigned long long limit;
    if (read_number("power", i, &v))
        return NOT_SUPPORTED;
    *mw = (unsigned)(read_number("limit", i, &limit) || limit > v ? v : limit);
    return SUCCESS;
}

static int get(const char *file, void *device, unsigned *mw)
{
    unsigned long long v;
    if (read_number(file, (unsigned)((unsigned long)device - 1), &v))
        return NOT_SUPPORTED;
    *mw = (unsigned)v;
    return SUCCESS;
}

int nvmlDeviceGetPowerManagementLimit(void *device, unsigned *mw) { return get("limit", device, mw); }
int nvmlDeviceGetPowerManagementDefaultLimit(void *device, unsigned *mw) { return get("limit_default", device, mw); }

int nvmlDeviceGetPowerManagementLimitConstraints(void *device, unsigned *min, unsigned *max)
{
    return get("limit_min", device, min) || get("limit_max", device, max) ? NOT_SUPPORTED : SUCCESS;
}

int nvmlDeviceSetPowerManagementLimit(void *device, unsigned mw)
{
    unsigned i = (unsigned)((unsigned long)device - 1), lo, hi;
    char path[1024], tmp[1100];
    if (nvmlDeviceGetPowerManagementLimitConstraints(device, &lo, &hi))
        return NOT_SUPPORTED;
    if (path_of("locked", i, path, sizeof path) && access(path, F_OK) == 0)
        return NO_PERMISSION;
    if (mw < lo || mw > hi)
        return INVALID_ARGUMENT;
    path_of("limit", i, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%u\n", mw) < 0 || fclose(f) || rename(tmp, path))
        return NOT_SUPPORTED;
    path_of("limit_log", i, path, sizeof path);
    if ((f = fopen(path, "a"))) {
        fprintf(f, "%u\n", mw);
        fclose(f);
    }
    return SUCCESS;
}
