/* A training run's energy: the meter and its sampler, the idle baseline, and per epoch the
 * joules, power, joules per image, EDP, the share above idle, carbon, each sensor's joules and
 * each task kind's share (the epoch's energy split by the kinds' busy time). */
#ifndef FRUGAL_ENERGY_RUN_H
#define FRUGAL_ENERGY_RUN_H

#include "energy/account.h"
#include "energy/carbon.h"
#include "energy/meter.h"
#include "engine/job/config.h"
#include "runtime/runtime.h"

#include <stdio.h>

/* An epoch's energy: the training pass's figures (joules per image: per training image), the
 * test pass's, and the whole epoch's split among task kinds. */
typedef struct epoch_energy {
    energy_figures f;                /* the training pass */
    energy_figures test;             /* the test pass (no images: none) */
    int nkinds;
    double kind_j[RT_MAX_KINDS];     /* in the epoch's rt_stats kind order */
    uint64_t kind_tasks[RT_MAX_KINDS];
} epoch_energy;

typedef struct energy_run {
    energy_meter *meter;
    double baseline_w;
    char baseline_how[96];           /* "measured idle over 1.0 s", "configured", "none" */
    int idle_measured;               /* the baseline was measured: then per sensor too */
    double sensor_idle_w[SENSOR_MAX];
    carbon_source carbon;            /* the grid's intensity, re-read from [energy] carbon_file */
    FILE *log;
    energy_reading run_start, epoch_start, pass_start;
    double run_start_grams, pass_start_grams;   /* carbon_grams() then */
} energy_run;

/* A carbon source follows the traces at these paths (either "" or NULL: none), on the job's
 * clock ([energy] trace_start, else now; trace_speed). 0, or -1 with err. */
int energy_run_carbon_traces(carbon_source *cs, const job_config *cfg, const char *carbon,
                             const char *renewable, char *err, size_t errlen);
/* Opens the meter, starts the sampler, measures (or takes) the idle baseline, and says on log
 * where the figures come from and which sensors could not be read, and why. */
int energy_run_begin(energy_run *er, const job_config *cfg, FILE *log, char *err, size_t errlen);
void energy_run_epoch_begin(energy_run *er);
/* The pass that just ended (training, then test): its figures for `images` images. */
void energy_run_pass_end(energy_run *er, long images, energy_figures *out);
/* Re-reads the carbon file when it is time (at most every CARBON_REREAD_S), so that a long
 * pass's grams follow the grid's changes; each joule counts at the intensity when it was spent. */
void energy_run_follow_carbon(energy_run *er);
/* The epoch's energy split among the task kinds of st (the epoch's runtime statistics). */
void energy_run_split_kinds(energy_run *er, const rt_stats *st, epoch_energy *e);
/* Joules since the epoch began and the power over the last sampling interval. */
void energy_run_so_far(energy_run *er, double *joules, double *watts);
/* The whole run so far (its grams: each stretch at the intensity then in force). */
void energy_run_total(energy_run *er, long images, energy_figures *out);
/* Per sensor and per task kind, after the last epoch. */
void energy_run_print(energy_run *er, const epoch_energy *last, const rt_stats *st, long images,
                      int verbose,
                      FILE *f);
void energy_run_end(energy_run *er);

#endif
