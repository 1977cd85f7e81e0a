/* The JSON summary of a run (OUTPUT/summary.json): the job, the data, the machine, each epoch's
 * figures and energy, the sensors, and the runtime's statistics. Rewritten atomically after every epoch. */
#ifndef FRUGAL_REPORT_H
#define FRUGAL_REPORT_H

#include "engine/config.h"
#include "engine/dataset.h"
#include "engine/energy_run.h"
#include "engine/train.h"
#include "runtime/runtime.h"

int report_write(const char *path, const job_config *cfg, const dataset *train,
                 const dataset *test, int grain, int workers, const epoch_result *epochs,
                 int nepochs, int first_epoch, const rt_stats *st, energy_run *er,
                 const epoch_energy *energies, char *err, size_t errlen);

#endif
