#include "engine/report.h"

#include "ops/cpu.h"
#include "runtime/clock.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

/* JSON has no NaN: an absent figure is null. */
static void json_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

int report_write(const char *path, const job_config *cfg, const dataset *train,
                 const dataset *test, int grain, int workers, const epoch_result *epochs,
                 int nepochs, int first_epoch, const rt_stats *st, char *err, size_t errlen)
{
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        return -1;
    }
    fputs("{\n  \"job\": ", f);
    json_str(f, cfg->path);
    fprintf(f, ",\n  \"config\": {\"epochs\": %d, \"batch\": %d, \"seed\": %llu, \"lr\": ",
            cfg->epochs, cfg->batch, cfg->seed);
    json_num(f, cfg->lr);
    fputs(", \"momentum\": ", f);
    json_num(f, cfg->momentum);
    fputs(", \"weight_decay\": ", f);
    json_num(f, cfg->weight_decay);
    fprintf(f, ", \"workers\": %d, \"grain\": %d, \"layers\": [", workers, grain);
    for (int l = 0; l < cfg->nlayers; l++) {
        fprintf(f, "%s", l ? ", " : "");
        json_str(f, layer_name(cfg->layers[l].type));
    }
    fprintf(f, "]},\n  \"data\": {\"train_samples\": %ld, \"test_samples\": %ld, \"height\": %d, "
               "\"width\": %d, \"channels\": %d, \"classes\": %d},\n",
            train->n, test ? test->n : 0L, train->h, train->w, train->c, train->classes);
    fprintf(f, "  \"machine\": {\"cpus\": %ld, \"kernel_path\": \"%s\", \"timer\": \"%s\"},\n",
            sysconf(_SC_NPROCESSORS_ONLN), ops_isa_name(ops_isa_active()), clock_source());
    fputs("  \"epochs\": [", f);
    for (int e = 0; e < nepochs; e++) {
        const epoch_result *r = &epochs[e];
        fprintf(f, "%s\n    {\"epoch\": %d, \"train_loss\": ", e ? "," : "", first_epoch + e);
        json_num(f, r->train_loss);
        fputs(", \"train_acc\": ", f);
        json_num(f, r->train_acc);
        fputs(", \"test_loss\": ", f);
        json_num(f, r->test_loss);
        fputs(", \"test_acc\": ", f);
        json_num(f, r->test_acc);
        fputs(", \"seconds\": ", f);
        json_num(f, r->seconds);
        fputs(", \"images_per_s\": ", f);
        json_num(f, r->images_per_s);
        fputs(", \"task_share\": ", f);
        json_num(f, r->task_share);
        fputc('}', f);
    }
    fprintf(f, "\n  ],\n  \"runtime_last_epoch\": {\"tasks\": %llu, \"steals\": %llu, "
               "\"parks\": %llu, \"task_share\": ",
            (unsigned long long)st->tasks, (unsigned long long)st->steals,
            (unsigned long long)st->parks);
    json_num(f, st->task_share);
    fputs(", \"kinds\": [", f);
    for (int k = 0; k < st->nkinds; k++) {
        fprintf(f, "%s\n    {\"name\": ", k ? "," : "");
        json_str(f, st->kinds[k].name);
        fprintf(f, ", \"tasks\": %llu, \"busy_s\": ", (unsigned long long)st->kinds[k].count);
        json_num(f, st->kinds[k].busy_s);
        fputc('}', f);
    }
    fputs("\n  ]}\n}\n", f);
    int bad = ferror(f);
    if (fflush(f) || fsync(fileno(f)))
        bad = 1;
    if (fclose(f) || bad || rename(tmp, path)) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}
