/* The hardware's operating points during a run ([placement] operating_point): each part's limit
 * (a GPU's power limit, a CPU package's, the CPU clocks) is left alone, set to a value, or
 * searched while training (op_search.h) under the job's policy (energy when it names none).
 *
 * Parts are searched one after another on the windows worker_control measures, after its worker
 * count has settled; once all are kept, a drift of the figures means the work changed: every
 * part is searched again (and the worker count with it). Whatever was changed is put back at the
 * end, on a signal, or at the next start after a crash (energy/limit_state.h). */
#ifndef FRUGAL_OPERATING_POINT_H
#define FRUGAL_OPERATING_POINT_H

#include "energy/limit_state.h"
#include "energy/power_limit.h"
#include "engine/job/config.h"
#include "engine/placement/op_search.h"

#include <stdio.h>

#define OP_GROUPS 16
#define OP_CHANGES 128             /* kept for summary.json; later ones are counted only */

typedef struct op_group {
    char name[64];                 /* nvidia0, package-0, cpufreq */
    int gpu, clock;
    int knob[POWER_LIMIT_MAX], nknobs;   /* its limits (cpufreq: every policy) */
    op_mode mode;
    double fixed;                  /* OP_VALUE's */
    double top, floor, now;        /* its own value, the lowest all its limits accept, now */
    op_search search;
} op_group;

typedef struct op_change {
    double t;                      /* seconds since training began */
    int group;
    double value;
    char why[200];
} op_change;

typedef struct operating_point {
    int on;                        /* some limit is set or searched */
    char note[800];
    FILE *log;
    int nlimits;
    power_limit limits[POWER_LIMIT_MAX];
    int ngroups;
    op_group groups[OP_GROUPS];
    int searching;                 /* the group searched now, or -1 */
    int last;                      /* the group searched last: its figures watch for drift */
    limit_state state;
    int nchanges, changes_total;
    op_change changes[OP_CHANGES];
} operating_point;

/* Puts back what a frugal process that died left changed on this machine (any command calls it
 * at its start); says so on log. Returns 0, or -1 when something could not be put back. */
int operating_point_recover(FILE *log);
/* Sets the fixed values and prepares the searches under l; says what on log. A part that cannot
 * be set (no permission, out of range, held by another frugal) is left as it is, and said so. */
void operating_point_begin(operating_point *op, const job_config *cfg, const policy_limits *l,
                           FILE *log);
/* 1 while some part is searched or watched (windows go to operating_point_observe). */
int operating_point_wants_windows(const operating_point *op);
/* A window of training at the current limits, t seconds since training began. Returns 0, 1 when
 * a limit changed (the next window is skipped), 2 when the work changed: every part is searched
 * again from its own value (and the caller forgets its worker counts' figures). */
int operating_point_observe(operating_point *op, double t, double seconds, double joules,
                            long samples);
/* Puts every limit back. */
void operating_point_end(operating_point *op);
/* "operating_point": {...} for summary.json. */
void operating_point_json(const operating_point *op, FILE *f);

#endif
