/* The placement policy's hand on a training run's CPU workers and on the machine's operating
 * points. A thread of its own measures windows of training (time and joules from the energy
 * meter, samples from the trainer; a window runs on across epochs and test passes, so that many
 * short epochs are measured as few long ones), hands them to the worker tuner, applies its
 * choice by parking workers in the runtime, prints every change, counts the time spent over the
 * power budget (parking the devices too when the fewest workers are still over it), and the
 * learned figures are kept per machine between runs. Once the worker count has settled, the
 * windows go to the operating points' search (operating_point.h). The worker count is learned
 * when the job names a policy or a power budget; the workers pinned by hand ([execution]
 * workers) are left alone. */
#ifndef FRUGAL_WORKER_CONTROL_H
#define FRUGAL_WORKER_CONTROL_H

#include "energy/meter.h"
#include "engine/job/config.h"
#include "engine/train/trainer.h"
#include "engine/placement/operating_point.h"
#include "engine/placement/worker_tuner.h"
#include "runtime/runtime.h"

#include <pthread.h>
#include <stdio.h>

#define CONTROL_MAX_DECISIONS 64   /* kept for summary.json; later ones are counted only */
#define CONTROL_MAX_SEEN 16        /* worker counts whose figures a decision records */

typedef struct worker_decision {
    double t;                      /* seconds since training began */
    int workers;
    char why[200];
    int nseen;                     /* the figures the tuner held when it decided */
    int seen_workers[CONTROL_MAX_SEEN];
    option_figures seen[CONTROL_MAX_SEEN];
} worker_decision;

typedef struct worker_control {
    int on;                        /* its thread measures windows */
    int tune_workers;              /* the worker count is learned */
    char note[400];                /* why it is off, or where its figures are kept */
    worker_tuner tuner;
    operating_point op;
    rt_runtime *rt;
    const trainer *trainer;
    energy_meter *meter;
    FILE *log;
    double window_s, budget_w, start_t;
    pthread_t thread;
    pthread_mutex_t lock;          /* guards what follows, shared with the thread */
    pthread_cond_t wake;
    int running, stopping, ended;
    int training, skip;            /* measuring a training pass; windows still to skip */
    double win_t, win_j;           /* the window's current stretch of training began at */
    long win_samples;
    double part_s, part_j;         /* its stretches before, in earlier passes */
    long part_samples;
    double over_budget_s, measured_s;
    int devices_parked;            /* the budget's last resort (runtime: rt_park_devices) */
    int ndecisions, decisions_total;
    worker_decision decisions[CONTROL_MAX_DECISIONS];
    char models[700], key[128];
} worker_control;

/* Starts the thread when on. key: what makes two runs the same workload here
 * (worker_control_key). */
void worker_control_begin(worker_control *c, const job_config *cfg, rt_runtime *rt,
                          const trainer *t, energy_meter *meter, const char *key, FILE *log);
/* "SHAPE-LAYERSHASH-bBATCH-KERNELS-sSLOWDOWN" for the job and its data's shape, then
 * "+devices-HASH" where OpenCL devices (their names in `devices`; NULL or "": none) work beside
 * the workers: their figures are not the workers' alone. */
void worker_control_key(char *out, size_t n, const job_config *cfg, int c, int h, int w,
                        const char *isa, const char *devices);
/* Training passes are measured; test passes (another cost per sample) are not. */
void worker_control_pass(worker_control *c, int training);
/* Stops the thread, saves what was learned, and puts the operating points back. */
void worker_control_end(worker_control *c);
/* "placement": {...}, "operating_point": {...} for summary.json (without the key). */
void worker_control_json(worker_control *c, FILE *f);

#endif
