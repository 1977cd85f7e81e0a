#include "engine/report.h"

#include "common/json.h"

#include "ops/cpu.h"
#include "runtime/clock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
    json_string(f, cfg->path);
    fprintf(f, ",\n  \"config\": {\"epochs\": %d, \"batch\": %d, \"seed\": %llu",
            cfg->epochs, cfg->batch, cfg->seed);
    json_number_field(f, "lr", cfg->lr, 0);
    json_number_field(f, "momentum", cfg->momentum, 0);
    json_number_field(f, "weight_decay", cfg->weight_decay, 0);
    fprintf(f, ", \"workers\": %d, \"grain\": %d, \"layers\": [", workers, grain);
    for (int l = 0; l < cfg->nlayers; l++) {
        fprintf(f, "%s", l ? ", " : "");
        json_string(f, layer_name(cfg->layers[l].type));
    }
    fprintf(f, "]},\n  \"data\": {\"train_samples\": %ld, \"test_samples\": %ld, \"height\": %d, "
               "\"width\": %d, \"channels\": %d, \"classes\": %d},\n",
            train->n, test ? test->n : 0L, train->h, train->w, train->c, train->classes);
    fprintf(f, "  \"machine\": {\"cpus\": %ld, \"kernel_path\": \"%s\", \"timer\": \"%s\"},\n",
            sysconf(_SC_NPROCESSORS_ONLN), ops_isa_name(ops_isa_active()), clock_source());
    fputs("  \"epochs\": [", f);
    for (int e = 0; e < nepochs; e++) {
        const epoch_result *r = &epochs[e];
        fprintf(f, "%s\n    {\"epoch\": %d", e ? "," : "", first_epoch + e);
        json_number_field(f, "train_loss", r->train_loss, 0);
        json_number_field(f, "train_acc", r->train_acc, 0);
        json_number_field(f, "test_loss", r->test_loss, 0);
        json_number_field(f, "test_acc", r->test_acc, 0);
        json_number_field(f, "seconds", r->seconds, 0);
        json_number_field(f, "images_per_s", r->images_per_s, 0);
        json_number_field(f, "task_share", r->task_share, 0);
        fputc('}', f);
    }
    fprintf(f, "\n  ],\n  \"runtime_last_epoch\": {\"tasks\": %llu, \"steals\": %llu, "
               "\"parks\": %llu",
            (unsigned long long)st->tasks, (unsigned long long)st->steals,
            (unsigned long long)st->parks);
    json_number_field(f, "task_share", st->task_share, 0);
    fputs(", \"kinds\": [", f);
    for (int k = 0; k < st->nkinds; k++) {
        fprintf(f, "%s\n    {\"name\": ", k ? "," : "");
        json_string(f, st->kinds[k].name);
        fprintf(f, ", \"tasks\": %llu", (unsigned long long)st->kinds[k].count);
        json_number_field(f, "busy_s", st->kinds[k].busy_s, 0);
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
