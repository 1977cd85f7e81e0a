/* What `frugal simulate` shows: its lines on the terminal, and an output folder like a run's
 * (summary.json, metrics.csv, report.html through report/'s code), every figure labelled as
 * simulated. */
#ifndef FRUGAL_SIM_REPORT_H
#define FRUGAL_SIM_REPORT_H

#include "engine/sim/sim.h"

#include <stdio.h>

void sim_report_print(FILE *f, const sim_scenario *s, const sim_result *r);
/* The output folder (created): 0, or -1 with err. */
int sim_report_write(const char *dir, const sim_scenario *s, const sim_result *r, char *err, size_t errlen);

#endif
