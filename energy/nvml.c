#include "energy/nvml.h"
#include "common/env_switches.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The few entry points used, as NVML declares them (nvml.h is not needed to build). */
typedef void *nvml_device;
enum { NVML_SUCCESS = 0, NVML_ERROR_NOT_SUPPORTED = 3, NVML_ERROR_NO_PERMISSION = 4 };

static struct {
    void *lib;
    int (*init)(void);
    int (*count)(unsigned *n);
    int (*handle)(unsigned i, nvml_device *d);
    int (*name)(nvml_device d, char *name, unsigned len);
    int (*energy_mj)(nvml_device d, unsigned long long *mj);
    int (*power_mw)(nvml_device d, unsigned *mw);
    const char *(*error)(int rc);
    int ready;                   /* loaded and initialised */
    char why[256];               /* or why not (a library found but unusable) */
} nvml;

static pthread_mutex_t loading = PTHREAD_MUTEX_INITIALIZER;

#define LOAD(field, symbol) (*(void **)&nvml.field = dlsym(nvml.lib, symbol))

static void load(void)
{
    const char *path = env_switch_value(ENV_NVML_LIBRARY);
    nvml.lib = dlopen(path && path[0] ? path : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!nvml.lib)
        return;   /* no NVIDIA driver: nothing to say */
    if (!LOAD(init, "nvmlInit_v2") || !LOAD(count, "nvmlDeviceGetCount_v2") ||
        !LOAD(handle, "nvmlDeviceGetHandleByIndex_v2") || !LOAD(name, "nvmlDeviceGetName") ||
        !LOAD(power_mw, "nvmlDeviceGetPowerUsage") || !LOAD(error, "nvmlErrorString")) {
        snprintf(nvml.why, sizeof nvml.why, "NVML: the library lacks %s", dlerror());
        return;
    }
    LOAD(energy_mj, "nvmlDeviceGetTotalEnergyConsumption");   /* older drivers lack it */
    int rc = nvml.init();
    if (rc != NVML_SUCCESS) {
        snprintf(nvml.why, sizeof nvml.why, "NVML: nvmlInit failed: %s", nvml.error(rc));
        return;
    }
    nvml.ready = 1;
}

static int errno_of(int rc)
{
    return rc == NVML_ERROR_NO_PERMISSION ? EACCES : rc == NVML_ERROR_NOT_SUPPORTED ? ENOTSUP : EIO;
}

static sensor *add(sensor *s, int *n, int max, const char *name)
{
    if (*n >= max)
        return NULL;
    sensor *z = &s[(*n)++];
    memset(z, 0, sizeof *z);
    snprintf(z->name, sizeof z->name, "%s", name);
    z->source = "nvml";
    z->scope = SCOPE_GPU;
    return z;
}

void nvml_probe(sensor *s, int *n, int max)
{
    pthread_mutex_lock(&loading);   /* loaded once found; looked for again by every meter until */
    if (!nvml.lib)
        load();
    pthread_mutex_unlock(&loading);
    if (!nvml.lib)
        return;
    sensor *z;
    unsigned count = 0;
    int rc = nvml.ready ? nvml.count(&count) : NVML_SUCCESS;
    if (!nvml.ready || rc != NVML_SUCCESS) {
        if ((z = add(s, n, max, "nvidia gpus"))) {
            z->kind = SENSOR_GAUGE, z->status = SENSOR_UNREADABLE;
            snprintf(z->why, sizeof z->why, "%s", nvml.ready ? nvml.error(rc) : nvml.why);
        }
        return;
    }
    for (unsigned i = 0; i < count; i++) {
        nvml_device d;
        char model[96] = "", name[64];
        if (nvml.handle(i, &d) != NVML_SUCCESS)
            continue;
        nvml.name(d, model, sizeof model);
        snprintf(name, sizeof name, "nvidia%u %.40s", i, model);
        if (!(z = add(s, n, max, name)))
            return;
        snprintf(z->path, sizeof z->path, "nvml:%u", i);   /* how sensors are told apart */
        unsigned long long mj;
        unsigned mw;
        if (nvml.energy_mj && nvml.energy_mj(d, &mj) == NVML_SUCCESS) {
            z->kind = SENSOR_COUNTER, z->max_uj = UINT64_MAX;
        } else if ((rc = nvml.power_mw(d, &mw)) == NVML_SUCCESS) {
            z->kind = SENSOR_GAUGE;
        } else {
            z->kind = SENSOR_GAUGE, z->status = SENSOR_UNREADABLE;
            snprintf(z->why, sizeof z->why, "NVML: no energy counter, and its power: %s",
                     nvml.error(rc));
        }
    }
}

int nvml_read(const sensor *s, double *value)
{
    unsigned index;
    nvml_device d;
    if (!nvml.ready || sscanf(s->path, "nvml:%u", &index) != 1)
        return ENODEV;
    int rc = nvml.handle(index, &d);
    if (rc == NVML_SUCCESS && s->kind == SENSOR_COUNTER) {
        unsigned long long mj;
        if ((rc = nvml.energy_mj(d, &mj)) == NVML_SUCCESS)
            *value = 1e3 * (double)mj;
    } else if (rc == NVML_SUCCESS) {
        unsigned mw;
        if ((rc = nvml.power_mw(d, &mw)) == NVML_SUCCESS)
            *value = 1e3 * (double)mw;
    }
    return rc == NVML_SUCCESS ? 0 : errno_of(rc);
}
