#include "common/env_switches.h"

#include "common/json.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[ENV_SWITCHES] = {
    "FRUGAL_ISA", "FRUGAL_CONV", "FRUGAL_INPUT", "FRUGAL_MEMBARRIER", "FRUGAL_NET_CIPHER",
    "FRUGAL_CACHE_DIR", "FRUGAL_PERFMODEL_DIR", "FRUGAL_OPENCL_LOADER",
    "FRUGAL_OPENCL_FAIL_AFTER", "FRUGAL_OPENCL_POLL", "FRUGAL_OPENCL_CONV", "FRUGAL_NVML_LIBRARY",
    "FRUGAL_SYSFS_ROOT", "FRUGAL_PROCFS_ROOT", "FRUGAL_MODEL_SCOPE", "FRUGAL_LAUNCH_RSH",
    "FRUGAL_LAYOUT", "FRUGAL_OPENCL_PIPELINE"};

static char *values[ENV_SWITCHES];   /* copies: a later setenv does not change them */
static pthread_once_t read_once = PTHREAD_ONCE_INIT;

void env_switches_read(void)
{
    for (int i = 0; i < ENV_SWITCHES; i++) {
        free(values[i]);
        const char *v = getenv(names[i]);
        values[i] = v && *v ? strdup(v) : NULL;   /* out of memory: as if unset */
    }
}

const char *env_switch_value(env_switch s)
{
    pthread_once(&read_once, env_switches_read);   /* again after a first read: the same */
    return (unsigned)s < ENV_SWITCHES ? values[s] : NULL;
}

const char *env_switch_name(env_switch s)
{
    return (unsigned)s < ENV_SWITCHES ? names[s] : "?";
}

void env_switches_write_json(FILE *f)
{
    fputc('{', f);
    for (int i = 0, first = 1; i < ENV_SWITCHES; i++)
        if (env_switch_value((env_switch)i)) {
            fprintf(f, "%s\"%s\": ", first ? "" : ", ", names[i]);
            json_string(f, values[i]);
            first = 0;
        }
    fputc('}', f);
}
