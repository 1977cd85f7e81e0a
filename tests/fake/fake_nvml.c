/* A stand-in for NVIDIA's libnvidia-ml.so.1, for energy/nvml.c's test (built as
 * build/VARIANT/libfake_nvml.so and named by FRUGAL_NVML_LIBRARY). Its GPUs are files in
 * $FAKE_NVML_DIR, read at every call: `count`, and per GPU i `energyI` (millijoules; absent: no
 * counter) and `powerI` (milliwatts; absent: not supported). Without $FAKE_NVML_DIR it has no
 * GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SUCCESS = 0, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3 };

static int read_number(const char *file, unsigned i, unsigned long long *out)
{
    const char *dir = getenv("FAKE_NVML_DIR");
    char path[1024];
    if (!dir)
        return -1;
    if (i == ~0u)
        snprintf(path, sizeof path, "%s/%s", dir, file);
    else
        snprintf(path, sizeof path, "%s/%s%u", dir, file, i);
    FILE *f = fopen(path, "r");
    int ok = f && fscanf(f, "%llu", out) == 1;
    if (f)
        fclose(f);
    return ok ? 0 : -1;
}

int nvmlInit_v2(void) { return SUCCESS; }
int nvmlShutdown(void) { return SUCCESS; }
const char *nvmlErrorString(int rc) { return rc == NOT_SUPPORTED ? "Not Supported" : "Unknown Error"; }

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

int nvmlDeviceGetTotalEnergyConsumption(void *device, unsigned long long *mj)
{
    return read_number("energy", (unsigned)((unsigned long)device - 1), mj) ? NOT_SUPPORTED : SUCCESS;
}

int nvmlDeviceGetPowerUsage(void *device, unsigned *mw)
{
    unsigned long long v;
    if (read_number("power", (unsigned)((unsigned long)device - 1), &v))
        return NOT_SUPPORTED;
    *mw = (unsigned)v;
    return SUCCESS;
}
