/* A job's data sets as its [data] section describes them, loaded and shaped: the coordinator,
 * nodes (engine/cluster/node.c) and single-machine runs read them the same way. */
#ifndef FRUGAL_JOB_DATA_H
#define FRUGAL_JOB_DATA_H

#include "engine/job/config.h"
#include "engine/job/dataset.h"

/* [data] classes and shard are applied to the training set, after limit (the test set stays
 * whole: every peer is measured on the same one). 0, or -1 with err. A batch larger than the set becomes the whole set (cfg->batch_asked says
 * what the job asked): no buffers for samples that are not there. */
int job_load_train(job_config *cfg, dataset *d, char *err, size_t errlen);
/* Keeps training samples index, index + count, ... (shard = auto, once a peer knows its place).
 * 0, or -1 with err when none is left. */
int job_data_shard(job_config *cfg, dataset *d, int index, int count, char *err, size_t errlen);
/* The test set shaped like train; *have is 0 when the job names none. */
int job_load_test(const job_config *cfg, const dataset *train, dataset *d, int *have, char *err,
                  size_t errlen);

#endif
