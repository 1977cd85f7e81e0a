/* Placement policies: what a configuration (a worker count, later a device or a node) costs, and
 * which of the measured ones to keep.
 *
 *   time    seconds per sample (today's behaviour: the fastest)
 *   energy  joules per sample
 *   edp     joules x seconds per sample (the energy-delay product)
 *   carbon  grams of CO2e per sample (joules x the grid's intensity)
 *
 * Two limits narrow the choice: a power budget (configurations whose power is above it are out,
 * unless all are: then the one with the least power), and for the energy policies a cap on the
 * slowdown against the fastest configuration measured. */
#ifndef FRUGAL_POLICY_H
#define FRUGAL_POLICY_H

#include "engine/job/policy_name.h"

typedef struct policy_limits {
    placement_policy policy;
    double budget_w;                 /* 0: none */
    double max_slowdown;             /* < 0: none; 0.1: at most 10% slower than the fastest */
    double carbon_g_per_kwh;
} policy_limits;

/* What a configuration was measured at; samples 0: not measured yet. */
typedef struct option_figures {
    double s_per_sample, watts;
    long samples;
    double carbon_g_per_kwh;         /* 0: the limits' (a mix of machines has its own) */
} option_figures;

/* A window measured at an option: its first figures, or a step of `weight` towards the new ones
 * (the samples add up). */
void policy_record(option_figures *o, double s_per_sample, double watts, long samples, double weight);
/* The policy's cost of one sample (lower is better). */
double policy_cost(const policy_limits *l, const option_figures *o);
/* The index of the measured option to keep, or -1 when none is measured. Ties go to the lower
 * index. */
int policy_choose(const policy_limits *l, const option_figures *opts, int n);

#endif
