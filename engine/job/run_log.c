#include "engine/job/run_log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char HEADER[] = "frugal run log 1";

int run_log_add(run_log *l, int epoch, const char *csv, const char *json)
{
    if (l->nepochs == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        run_epoch *e = realloc(l->epochs, sizeof *e * (size_t)cap);
        if (!e)
            return -1;
        l->epochs = e, l->cap = cap;
    }
    char *c = strdup(csv), *j = strdup(json);
    if (!c || !j || strchr(c, '\n') || strchr(j, '\n')) {
        free(c), free(j);
        return -1;
    }
    l->epochs[l->nepochs++] = (run_epoch){epoch, c, j};
    return 0;
}

char *run_log_encode(const run_log *l, size_t *len)
{
    size_t cap = 256;
    for (int i = 0; i < l->nepochs; i++)
        cap += strlen(l->epochs[i].csv) + strlen(l->epochs[i].json) + 64;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    size_t n = (size_t)snprintf(out, cap, "%s\n", HEADER);
    for (int i = 0; i < l->nepochs; i++)
        n += (size_t)snprintf(out + n, cap - n, "epoch %d\ncsv %s\njson %s\n", l->epochs[i].epoch,
                              l->epochs[i].csv, l->epochs[i].json);
    const partial_epoch *p = &l->partial;
    if (p->batches)
        n += (size_t)snprintf(out + n, cap - n, "partial %ld %.17g %ld %ld %.17g %.17g\n",
                              p->batches, p->loss, p->correct, p->samples, p->seconds, p->joules);
    *len = n;
    return out;
}

static int fail(run_log *l, char *err, size_t errlen, int line, const char *what)
{
    snprintf(err, errlen, "its run log is corrupt at line %d: %s", line, what);
    run_log_free(l);
    return -1;
}

int run_log_decode(run_log *l, const char *text, size_t len, char *err, size_t errlen)
{
    memset(l, 0, sizeof *l);
    if (!len)
        return 0;
    int lineno = 0, expect = 0;   /* 0: "epoch", 1: "csv", 2: "json" */
    int epoch = 0;
    char *csv = NULL;
    for (size_t at = 0; at < len;) {
        lineno++;
        const char *nl = memchr(text + at, '\n', len - at);
        if (!nl)
            return free(csv), fail(l, err, errlen, lineno, "no end of line");
        size_t n = (size_t)(nl - (text + at));
        if (n >= RUN_LOG_LINE || memchr(text + at, 0, n))
            return free(csv), fail(l, err, errlen, lineno, "a line too long or not text");
        char line[RUN_LOG_LINE];
        memcpy(line, text + at, n);
        line[n] = 0;
        at += n + 1;
        int e;
        char extra;
        partial_epoch p;
        if (lineno == 1) {
            if (strcmp(line, HEADER))
                return fail(l, err, errlen, lineno, "not a run log");
        } else if (expect == 0 && sscanf(line, "epoch %d%c", &e, &extra) == 1) {
            if (e != l->nepochs + 1 || l->partial.batches)
                return fail(l, err, errlen, lineno, "epochs out of order");
            epoch = e, expect = 1;
        } else if (expect == 1 && !strncmp(line, "csv ", 4)) {
            if (!(csv = strdup(line + 4)))
                return fail(l, err, errlen, lineno, "out of memory");
            expect = 2;
        } else if (expect == 2 && !strncmp(line, "json {", 6) && line[n - 1] == '}') {
            int rc = run_log_add(l, epoch, csv, line + 5);
            free(csv);
            csv = NULL;
            if (rc)
                return fail(l, err, errlen, lineno, "out of memory");
            expect = 0;
        } else if (expect == 0 && !l->partial.batches &&
                   sscanf(line, "partial %ld %lg %ld %ld %lg %lg%c", &p.batches, &p.loss,
                          &p.correct, &p.samples, &p.seconds, &p.joules, &extra) == 6 &&
                   p.batches > 0 && p.correct >= 0 && p.samples >= p.correct &&
                   isfinite(p.loss) && isfinite(p.seconds) && p.seconds >= 0 &&
                   isfinite(p.joules)) {
            l->partial = p;
        } else {
            return free(csv), fail(l, err, errlen, lineno, "an unexpected line");
        }
    }
    if (expect)
        return free(csv), fail(l, err, errlen, lineno, "an epoch cut short");
    return 0;
}

void run_log_free(run_log *l)
{
    for (int i = 0; i < l->nepochs; i++)
        free(l->epochs[i].csv), free(l->epochs[i].json);
    free(l->epochs);
    memset(l, 0, sizeof *l);
}

epoch_figures run_log_figures(const run_epoch *e)
{
    epoch_figures f = {NAN, NAN, NAN, NAN};
    /* columns 2 (train_loss), 6 (seconds), 9 (energy_j) and the last (test_energy_j) */
    sscanf(e->csv, "%*d,%lf,%*f,%*f,%*f,%lf,%*f,%*f,%lf", &f.train_loss, &f.seconds,
           &f.train_joules);
    const char *last = strrchr(e->csv, ',');
    if (last)
        sscanf(last + 1, "%lf", &f.test_joules);
    return f;
}
