/* A run's log: every finished epoch's metrics row and summary entry, and the running totals of
 * an epoch that was interrupted. It travels inside the checkpoint, so metrics.csv and
 * summary.json can always be rewritten from the checkpoint: they never run ahead of it, and
 * they cover every epoch across resumes. Decoded as strictly as the checkpoint around it. */
#ifndef FRUGAL_RUN_LOG_H
#define FRUGAL_RUN_LOG_H

#include <stddef.h>

#define RUN_LOG_LINE 65536   /* longest line */

typedef struct run_epoch {
    int epoch;
    char *csv;                /* the metrics.csv row, no newline */
    char *json;               /* the summary.json entry, one line */
} run_epoch;

/* The part of an epoch done before an interruption. */
typedef struct partial_epoch {
    long batches;             /* 0: none */
    double loss;              /* summed over samples */
    long correct, samples;
    double seconds, joules;
} partial_epoch;

typedef struct run_log {
    int nepochs, cap;
    run_epoch *epochs;
    partial_epoch partial;
} run_log;

int run_log_add(run_log *l, int epoch, const char *csv, const char *json);
/* The log as text (the caller frees it); NULL when out of memory. */
char *run_log_encode(const run_log *l, size_t *len);
/* From text; err names what is wrong. An empty text is an empty log. */
int run_log_decode(run_log *l, const char *text, size_t len, char *err, size_t errlen);
void run_log_free(run_log *l);
/* The figures a metrics row holds that the run reuses (NaN where the row lacks them). */
typedef struct epoch_figures {
    double train_loss, seconds, train_joules, test_joules;
} epoch_figures;
epoch_figures run_log_figures(const run_epoch *e);

#endif
