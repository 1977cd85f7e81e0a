#include "energy/nvml.h"
#include "energy/power_limit.h"
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
    int (*limit_mw)(nvml_device d, unsigned *mw);                      /* the power limit's */
    int (*limit_range_mw)(nvml_device d, unsigned *min, unsigned *max);
    int (*limit_default_mw)(nvml_device d, unsigned *mw);
    int (*set_limit_mw)(nvml_device d, unsigned mw);
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
    LOAD(limit_mw, "nvmlDeviceGetPowerManagementLimit");
    LOAD(limit_range_mw, "nvmlDeviceGetPowerManagementLimitConstraints");
    LOAD(limit_default_mw, "nvmlDeviceGetPowerManagementDefaultLimit");
    LOAD(set_limit_mw, "nvmlDeviceSetPowerManagementLimit");
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

/* 1 when the library is there (loaded once found; looked for again by every caller until). */
static int loaded(void)
{
    pthread_mutex_lock(&loading);
    if (!nvml.lib)
        load();
    pthread_mutex_unlock(&loading);
    return nvml.lib != NULL;
}

void nvml_probe(sensor *s, int *n, int max)
{
    if (!loaded())
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

/* ---- power limits (energy/power_limit.h) ---- */

static void limit_probe_one(power_limit *z, nvml_device d)
{
    unsigned mw = 0, lo = 0, hi = 0, dflt = 0;
    int rc = nvml.limit_mw(d, &mw);
    if (rc != NVML_SUCCESS) {
        snprintf(z->why, sizeof z->why, "NVML: no power limit: %s", nvml.error(rc));
        return;
    }
    z->now = mw / 1e3;
    if (!nvml.limit_range_mw || nvml.limit_range_mw(d, &lo, &hi) != NVML_SUCCESS || hi < lo || !hi) {
        snprintf(z->why, sizeof z->why, "NVML: no range known to set its limit within");
        return;
    }
    z->min = lo / 1e3, z->max = hi / 1e3;
    z->full = nvml.limit_default_mw && nvml.limit_default_mw(d, &dflt) == NVML_SUCCESS ? dflt / 1e3
                                                                                       : z->max;
    /* Setting the limit it has changes nothing and tells whether setting is allowed. */
    rc = nvml.set_limit_mw ? nvml.set_limit_mw(d, mw) : NVML_ERROR_NOT_SUPPORTED;
    if (rc == NVML_SUCCESS)
        z->settable = 1;
    else
        snprintf(z->why, sizeof z->why, "NVML: setting its power limit: %s%s", nvml.error(rc),
                 rc == NVML_ERROR_NO_PERMISSION ? " (it needs root)" : "");
}

void nvml_limit_probe(power_limit *l, int *n, int max)
{
    unsigned count = 0;
    if (!loaded() || !nvml.ready || !nvml.limit_mw || nvml.count(&count) != NVML_SUCCESS)
        return;
    for (unsigned i = 0; i < count && *n < max; i++) {
        nvml_device d;
        char model[96] = "";
        if (nvml.handle(i, &d) != NVML_SUCCESS)
            continue;
        nvml.name(d, model, sizeof model);
        power_limit *z = &l[(*n)++];
        memset(z, 0, sizeof *z);
        z->kind = POWER_LIMIT_NVML, z->gpu = 1;
        snprintf(z->name, sizeof z->name, "nvidia%u %.40s", i, model);
        snprintf(z->path, sizeof z->path, "nvml:%u", i);
        limit_probe_one(z, d);
    }
}

/* The device a "nvml:I" path names, or an NVML error. */
static int device_of(const char *path, nvml_device *d)
{
    unsigned index;
    if (!loaded() || !nvml.ready || !nvml.limit_mw || sscanf(path, "nvml:%u", &index) != 1)
        return NVML_ERROR_NOT_SUPPORTED;
    return nvml.handle(index, d);
}

int nvml_limit_read(const char *path, double *watts)
{
    nvml_device d;
    unsigned mw;
    int rc = device_of(path, &d);
    if (rc == NVML_SUCCESS && (rc = nvml.limit_mw(d, &mw)) == NVML_SUCCESS)
        *watts = mw / 1e3;
    return rc == NVML_SUCCESS ? 0 : errno_of(rc);
}

int nvml_limit_write(const char *path, double watts, char *why, size_t n)
{
    nvml_device d;
    int rc = device_of(path, &d);
    if (rc == NVML_SUCCESS)
        rc = nvml.set_limit_mw ? nvml.set_limit_mw(d, (unsigned)(watts * 1e3 + 0.5))
                               : NVML_ERROR_NOT_SUPPORTED;
    if (rc != NVML_SUCCESS)
        snprintf(why, n, "%s: NVML: setting the power limit to %g W: %s", path, watts,
                 nvml.error ? nvml.error(rc) : "no NVML");
    return rc == NVML_SUCCESS ? 0 : errno_of(rc);
}
