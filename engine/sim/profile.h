/* A machine's profile for `frugal simulate`: how fast it trains and what it draws, measured.
 * `frugal simulate --calibrate RUN_DIR... -o FILE` writes one from the summary.json of runs on
 * that machine (one per worker count measured); a scenario names it. The file:
 *
 *   # comments
 *   name = HOST
 *   cpus = 8
 *   flops_per_sample = 186576     (of the job it was measured on: other jobs scale by FLOPs)
 *   speed = WORKERS IMG_PER_S     (one line per worker count measured)
 *   power = IDLE, ONE, ALL        (watts: idle, one core busy, all cores busy; SimGrid's three
 *                                  points, energy/power_model.h)
 *   energy = where the watts come from (a sensor, or the fallback model: said in the results)
 *   seal_mb_per_s = 560          (optional: MB a second one core seals for the wire, which a
 *                                  node's worker does for every gradient it sends; --calibrate
 *                                  measures it on the machine it runs on)
 *   slowdown = 50                 (the runs' [execution] slowdown: sealing is stretched alike)
 */
#ifndef FRUGAL_SIM_PROFILE_H
#define FRUGAL_SIM_PROFILE_H

#include <stdio.h>
#include <stddef.h>

#define PROFILE_MAX_SPEEDS 16

typedef struct sim_profile {
    char name[64];
    char energy[200];
    int cpus;
    double flops_per_sample;
    int nspeeds;
    int workers[PROFILE_MAX_SPEEDS];       /* increasing */
    double img_per_s[PROFILE_MAX_SPEEDS];
    double power[3];
    double seal_bytes_per_s;               /* 0: sealing not modelled */
    double slowdown;                       /* of the runs measured; 1: none */
} sim_profile;

/* 0, or -1 with err naming the file and line. */
int profile_load(sim_profile *p, const char *path, char *err, size_t errlen);
/* From runs on one machine (their summary.json), with the sealing speed measured here: the median images/s of each run's epochs
 * (the first left out when there are more), by worker count (runs with as many workers: their
 * mean, e.g. runs made at once to load the machine as a cluster will); the watts the same way. 0, or -1
 * with err naming the folder and what it lacks. */
int profile_calibrate(sim_profile *p, const char *const *dirs, int ndirs, char *err, size_t errlen);
void profile_write(FILE *f, const sim_profile *p, const char *from);
/* Images per second on `workers` workers for a job of flops_per_sample: linear between the
 * worker counts measured, per worker beyond them (at most cpus); a profile of no FLOPs (written
 * in a scenario) was measured on the job itself. */
double profile_img_per_s(const sim_profile *p, int workers, double flops_per_sample);
/* The largest worker count measured. */
int profile_workers(const sim_profile *p);

#endif
