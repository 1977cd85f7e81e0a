#include "engine/job/devices.h"

#include "common/env_switches.h"
#include "common/json.h"
#include "engine/job/cache_dir.h"
#include "opencl/completion.h"
#include "opencl/memory.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Adds a part to what summary.json records of the devices (rd->note), "; " between parts. */
static void __attribute__((format(printf, 2, 3))) note_add(run_devices *rd, const char *fmt, ...)
{
    size_t at = strlen(rd->note);
    if (at && at + 2 < sizeof rd->note)
        memcpy(rd->note + at, "; ", 3), at += 2;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rd->note + at, sizeof rd->note - at, fmt, ap);
    va_end(ap);
}

/* PoCL compiles kernels with the linker from PATH and aborts without one: give an empty PATH
 * the usual places (said in the note). */
static void ensure_path(run_devices *rd)
{
    const char *path = getenv("PATH");
    if (path && *path)
        return;
    setenv("PATH", "/usr/local/bin:/usr/bin:/bin", 1);
    note_add(rd, "PATH was empty: set to /usr/local/bin:/usr/bin:/bin for the OpenCL compiler");
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
    int found = ocl_discover(&rd->found);
    if (rd->found.unlisted[0]) {   /* a GPU the run may be missing */
        note_add(rd, "%s", rd->found.unlisted);
        fprintf(log, "OpenCL: %s\n", rd->found.unlisted);
    }
    if (!found || !(rd->n = choose(rd, job))) {
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
        note_add(rd, "OpenCL: %s; training on the CPU", rd->found.why);
        fprintf(log, "OpenCL: %s; training on the CPU\n", rd->found.why);
        return 0;
    }
    ensure_path(rd);
    for (int i = 0; i < rd->n; i++) {
        ocl_device *d = rd->used[i];
        char what[300];
        ocl_describe(d, what, sizeof what);
        fprintf(log, "OpenCL: compiling OpenCL kernels for %s ...\n", what);
        fflush(log);
        if (ocl_open(d, err, errlen)) {
            ocl_close(d);
            if (explicit || job->device_filter[0])
                return -1;
            /* found by auto or cpu+opencl: the run goes on without it, and says so */
            note_add(rd, "%.300s; not used", err);
            fprintf(log, "OpenCL: %s; not used\n", err);
            rd->used[i--] = rd->used[--rd->n];
            continue;
        }
        fprintf(log, "OpenCL: %s ready; CLBlast: %s\n", d->name, d->clblast_why);
        int host_cores = (d->type & CL_DEVICE_TYPE_CPU) ? (int)d->compute_units : 0;
        /* Given everything (devices = opencl), a GPU's worker keeps a core to itself, polling
         * while the GPU works; beside busy CPU workers (cpu+opencl) it would take theirs. */
        int spin = explicit && !host_cores && ocl_polling();
        if (spin)
            note_add(rd, "%s's worker polls it without sleeping while it works (devices = opencl)",
                     d->name);
        const char *pipeline = env_switch_value(ENV_OPENCL_PIPELINE);
        d->done_when_enqueued = explicit && !(pipeline && !strcmp(pipeline, "off"));
        if (d->done_when_enqueued)
            note_add(rd, "%s's tasks are done once their kernels are on its in-order queue "
                     "(devices = opencl)", d->name);
        cfg->devices[cfg->ndevices++] =
            (rt_device){RT_WORKER_OPENCL, d->name, &ocl_memory_ops, d, host_cores,
                        ocl_polling() ? ocl_poll_device : NULL, spin};
    }
    if (!rd->n)
        fprintf(log, "OpenCL: no device opened; training on the CPU\n");
    rd->pinned = explicit;
    return 0;
}

static const char *type_name(cl_device_type t)
{
    return t & CL_DEVICE_TYPE_GPU ? "GPU" : t & CL_DEVICE_TYPE_CPU ? "CPU"
         : t & CL_DEVICE_TYPE_ACCELERATOR ? "accelerator" : "other";
}

int devices_print_info(FILE *out)
{
    run_devices rd = {0};
    int found = ocl_discover(&rd.found);
    if (rd.found.unlisted[0])
        fprintf(out, "OpenCL: %s\n", rd.found.unlisted);
    if (!found) {
        fprintf(out, "OpenCL: none: %s\n", rd.found.why);
        return 0;
    }
    ensure_path(&rd);
    fprintf(out, "OpenCL: %d device%s (opening each to check CLBlast; the first run compiles "
            "kernels)\n", rd.found.n, rd.found.n == 1 ? "" : "s");
    for (int i = 0; i < rd.found.n; i++) {
        ocl_device *d = &rd.found.dev[i];
        fprintf(out, "  [%d] %s\n      platform %s, vendor %s, %s, %u compute units, %.2f GB "
                "(largest buffer %.2f GB), %s%s\n", d->index, d->name, d->platform_name, d->vendor,
                type_name(d->type), d->compute_units, (double)d->global_mem / 1e9,
                (double)d->max_alloc / 1e9, d->version, d->fp64 ? ", fp64" : "");
        fflush(out);
        char err[600];
        if (ocl_open(d, err, sizeof err))
            fprintf(out, "      cannot be used: %s\n", err);
        else
            fprintf(out, "      CLBlast: %s\n", d->clblast_why);
        ocl_close(d);
    }
    if (rd.note[0])
        fprintf(out, "  (%s)\n", rd.note);
    return 0;
}

void devices_close(run_devices *rd)
{
    for (int i = 0; i < rd->n; i++)
        ocl_close(rd->used[i]);
    rd->n = 0;
}

/* The file: the cache folder, then the host and the devices. */
static int models_path(run_devices *rd, char *why, size_t whylen)
{
    char dir[300], name[256];
    if (cache_dir(dir, sizeof dir, why, whylen))
        return -1;
    cache_host_name(name, sizeof name);
    for (int i = 0; i < rd->n; i++)
        snprintf(name + strlen(name), sizeof name - strlen(name), "+%s", rd->used[i]->name);
    cache_sanitize(name);
    snprintf(rd->models, sizeof rd->models, "%.300s/%.200s.txt", dir, name);
    return 0;
}

void devices_models_load(run_devices *rd, rt_runtime *rt, int deterministic, FILE *log)
{
    char why[400];
    rd->models[0] = 0;
    if (!rd->n)
        return;
    if (models_path(rd, why, sizeof why)) {
        snprintf(rd->models_note, sizeof rd->models_note, "not kept: %s", why);
        rd->models[0] = 0;
    } else if (deterministic) {
        snprintf(rd->models_note, sizeof rd->models_note, "not read (deterministic = on)");
    } else {
        FILE *f = fopen(rd->models, "r");
        int lines = f ? rt_placement_load(rt, f) : 0;
        if (f)
            snprintf(rd->models_note, sizeof rd->models_note, "loaded %d model%s from %s", lines,
                     lines == 1 ? "" : "s", rd->models);
        else
            snprintf(rd->models_note, sizeof rd->models_note, "none yet: calibrating, then "
                     "saving to %s", rd->models);
        if (f)
            fclose(f);
    }
    fprintf(log, "placement models: %s\n", rd->models_note);
}

void devices_models_save(run_devices *rd, rt_runtime *rt, FILE *log)
{
    if (!rd->models[0])
        return;
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", rd->models, (long)getpid());
    FILE *f = fopen(tmp, "w");
    int bad = !f || rt_placement_save(rt, f);
    if (f && fclose(f))
        bad = 1;
    if (bad || rename(tmp, rd->models)) {
        fprintf(log, "placement models: cannot write %s: %s\n", rd->models, strerror(errno));
        unlink(tmp);
    }
}

void devices_describe(const run_devices *rd, char *out, size_t cap)
{
    size_t at = (size_t)snprintf(out, cap, "%s", rd->n == 0 ? "cpu" : rd->pinned ? "opencl" : "cpu+opencl");
    for (int i = 0; i < rd->n && at < cap; i++)
        at += (size_t)snprintf(out + at, cap - at, "%s%s", i ? ", " : ": ", rd->used[i]->name);
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
    fputs(", \"placement_models\": ", f);
    json_string(f, rd->models[0] ? rd->models : "");
    fputs(", \"placement_models_note\": ", f);
    json_string(f, rd->models_note);
    fputs(", \"placement_energy\": ", f);
    json_string(f, rd->energy_note);
}
