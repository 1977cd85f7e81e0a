/* What a run reports: a metrics.csv row and a summary.json entry per epoch (kept in the run log,
 * engine/job/run_log.h), and the JSON summary of the run (OUTPUT/summary.json): the job, the data,
 * the machine, the execution choices and what forced them, every epoch, the runtime's
 * statistics, the energy and its sources, warnings, and whether the run was interrupted. */
#ifndef FRUGAL_REPORT_H
#define FRUGAL_REPORT_H

#include "engine/job/config.h"
#include "engine/job/dataset.h"
#include "engine/report/cluster_summary.h"
#include "engine/report/gossip_summary.h"
#include "engine/report/green_log.h"
#include "engine/job/devices.h"
#include "engine/job/energy_run.h"
#include "engine/model/model.h"
#include "engine/train/plan.h"
#include "engine/job/run_log.h"
#include "engine/report/tensorboard.h"
#include "engine/placement/worker_control.h"
#include "runtime/runtime.h"

extern const char report_csv_header[];

/* One finished epoch. */
typedef struct epoch_record {
    int epoch;
    double train_loss, train_acc;
    double test_loss, test_acc;      /* NaN without a test set */
    double seconds, images_per_s;    /* the training pass */
    double task_share;               /* share of CPU worker time inside task bodies */
    long samples;
    epoch_energy energy;
    int estimated;                   /* the energy comes (partly) from the model */
    char warning[400];               /* divergence, or empty */
} epoch_record;

/* The metrics.csv row and the summary.json entry of an epoch (malloc'd, one line each). st
 * names the task kinds of energy.kind_j; er (may be NULL) the sensors of energy.f.device_j. */
char *report_epoch_csv(const epoch_record *r);
char *report_epoch_json(const epoch_record *r, energy_run *er, const rt_stats *st);

/* The epoch's scalars as TensorBoard events at step (the global batch at its end: the epochs
 * share the axis of the points every few batches), and an "epoch" tag. 0, or -1 when a write
 * failed. */
int report_epoch_tensorboard(tb_writer *tb, const epoch_record *r, long step, energy_run *er,
                             double wall_time);

typedef struct report_input {
    const job_config *cfg;
    const dataset *train, *test;     /* test may be NULL */
    const model *m;
    const exec_plan *plan;
    int workers;
    const run_log *log;              /* every epoch so far, across resumes */
    const rt_stats *st;              /* the last epoch's */
    const rt_stats *total;           /* every epoch this process ran */
    energy_run *er;                  /* this process's meter; NULL: no energy section */
    int resumed_after;               /* epoch the run resumed from (0: a fresh run) */
    const char *interrupted;         /* NULL, or where and why the run stopped early */
    const run_devices *devices;      /* NULL: not looked for */
    const cluster_summary *cluster;  /* NULL: one machine, or gossip */
    const gossip_summary *gossip;    /* NULL: not a gossip peer */
    worker_control *placement;       /* NULL: not run */
    green_log *green;                /* NULL: no participation or postponement to report */
    const char *launch;              /* the launcher found, a JSON object; NULL: none */
} report_input;

/* The cluster section's members (no braces), report_cluster.c. */
void report_cluster_json(FILE *f, const cluster_summary *s);
/* `, "traffic": [...]`: the messages by type (also written by frugal simulate). */
void report_cluster_traffic_json(FILE *f, const cluster_traffic *t, int n);

/* The gossip section's members, report_gossip.c. */
void report_gossip_json(FILE *f, const gossip_summary *s);

/* Rewrites path atomically. */
int report_write(const char *path, const report_input *in, char *err, size_t errlen);
/* metrics.csv from the log, atomically. */
int report_write_metrics(const char *path, const run_log *log, char *err, size_t errlen);

#endif
