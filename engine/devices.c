#include "engine/devices.h"

#include "common/json.h"
#include "opencl/memory.h"

#include <stdlib.h>
#include <string.h>

/* Whether device d passes the job's filter: its index in a comma-separated list, or a part of
 * its name. Empty: every device. */
static int wanted(const ocl_device *d, const char *filter)
{
    if (!filter[0])
        return 1;
    if (strspn(filter, "0123456789, ") == strlen(filter)) {
        char list[128];
        snprintf(list, sizeof list, "%s", filter);
        for (char *save = NULL, *t = strtok_r(list, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
            if (atoi(t) == d->index)
                return 1;
        return 0;
    }
    return strstr(d->name, filter) != NULL;
}

/* PoCL compiles kernels with the linker from PATH and aborts without one: give an empty PATH
 * the usual places (said in the note). */
static void ensure_path(run_devices *rd)
{
    const char *path = getenv("PATH");
    if (path && *path)
        return;
    setenv("PATH", "/usr/local/bin:/usr/bin:/bin", 1);
    snprintf(rd->note + strlen(rd->note), sizeof rd->note - strlen(rd->note),
             "%sPATH was empty: set to /usr/local/bin:/usr/bin:/bin for the OpenCL compiler",
             rd->note[0] ? "; " : "");
}

/* The devices to open: auto takes GPUs and accelerators only (an OpenCL CPU device shares the
 * cores frugal already uses). */
static int choose(run_devices *rd, const job_config *job)
{
    int chosen = 0;
    for (int i = 0; i < rd->found.n; i++) {
        ocl_device *d = &rd->found.dev[i];
        int cpu_device = (d->type & CL_DEVICE_TYPE_CPU) != 0;
        if (wanted(d, job->device_filter) && !(job->devices == DEVICES_AUTO && cpu_device &&
                                               !job->device_filter[0]))
            rd->used[chosen++] = d;
    }
    return chosen;
}

int devices_open(run_devices *rd, const job_config *job, rt_config *cfg, FILE *log, char *err,
                 size_t errlen)
{
    memset(rd, 0, sizeof *rd);
    if (job->devices == DEVICES_CPU) {
        snprintf(rd->note, sizeof rd->note, "devices = cpu: OpenCL not looked for");
        return 0;
    }
    int explicit = job->devices == DEVICES_OPENCL;
    if (!ocl_discover(&rd->found) || !(rd->n = choose(rd, job))) {
        if (rd->found.n)
            snprintf(rd->found.why, sizeof rd->found.why, "%d OpenCL device%s, none %s",
                     rd->found.n, rd->found.n == 1 ? "" : "s",
                     job->device_filter[0] ? "matches [execution] device"
                                           : "a GPU or accelerator (devices = cpu+opencl uses "
                                             "OpenCL CPU devices too)");
        if (explicit) {
            snprintf(err, errlen, "devices = opencl, but %s", rd->found.why);
            return -1;
        }
        snprintf(rd->note, sizeof rd->note, "OpenCL: %s; training on the CPU", rd->found.why);
        fprintf(log, "%s\n", rd->note);
        return 0;
    }
    ensure_path(rd);
    for (int i = 0; i < rd->n; i++) {
        ocl_device *d = rd->used[i];
        char what[300];
        ocl_describe(d, what, sizeof what);
        fprintf(log, "OpenCL: compiling OpenCL kernels for %s ...\n", what);
        fflush(log);
        if (ocl_open(d, err, errlen))
            return -1;
        fprintf(log, "OpenCL: %s ready; CLBlast: %s\n", d->name, d->clblast_why);
        cfg->devices[cfg->ndevices++] = (rt_device){RT_WORKER_OPENCL, d->name, &ocl_memory_ops, d};
    }
    rd->pinned = explicit;
    return 0;
}

void devices_close(run_devices *rd)
{
    for (int i = 0; i < rd->n; i++)
        ocl_close(rd->used[i]);
    rd->n = 0;
}

void devices_write_json(const run_devices *rd, FILE *f)
{
    fputs("\"opencl\": [", f);
    for (int i = 0; i < rd->found.n; i++) {
        const ocl_device *d = &rd->found.dev[i];
        int used = 0;
        for (int j = 0; j < rd->n; j++)
            used |= rd->used[j] == d;
        fprintf(f, "%s{\"index\": %d, \"name\": ", i ? ", " : "", d->index);
        json_string(f, d->name);
        fputs(", \"vendor\": ", f);
        json_string(f, d->vendor);
        fprintf(f, ", \"compute_units\": %u, \"memory_bytes\": %llu, \"used\": %s", d->compute_units,
                (unsigned long long)d->global_mem, used ? "true" : "false");
        if (used) {
            fputs(", \"clblast\": ", f);
            json_string(f, d->clblast_why);
        }
        fputc('}', f);
    }
    fputs("], \"devices_note\": ", f);
    json_string(f, rd->note);
}
