/* A job's data sets as its [data] section describes them, loaded and shaped: the coordinator,
 * nodes (engine/cluster/node.c) and single-machine runs read them the same way. */
#ifndef FRUGAL_JOB_DATA_H
#define FRUGAL_JOB_DATA_H

#include "engine/job/config.h"
#include "engine/job/dataset.h"

/* 0, or -1 with err. A batch larger than the set becomes the whole set (cfg->batch_asked says
 * what the job asked): no buffers for samples that are not there. */
int job_load_train(job_config *cfg, dataset *d, char *err, size_t errlen);
/* The test set shaped like train; *have is 0 when the job names none. */
int job_load_test(const job_config *cfg, const dataset *train, dataset *d, int *have, char *err,
                  size_t errlen);

#endif
