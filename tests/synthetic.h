/* A generated data set and job file for training tests: four classes (a bright 3x3 block in one
 * quadrant of a 10x10 image, over noise), written as gzip IDX files in the test's folder. */
#ifndef FRUGAL_TEST_SYNTHETIC_H
#define FRUGAL_TEST_SYNTHETIC_H

#include <stddef.h>
#include <stdint.h>

enum { SYN_IMAGES = 300, SYN_SIDE = 10 };

/* An IDX file of unsigned bytes (gzip), as frugal reads them. */
void write_idx(const char *path, int dims, const uint32_t *shape, const uint8_t *data, size_t n);
/* The job file (path returned): a small CNN over the data set, 3 epochs of batch 20, output in
 * the test folder's "run"; `extra` is appended (more keys for [execution], or sections). */
const char *make_job(const char *extra);
/* The same with other layers (job-file sections, between [data] and [softmax_xent]). */
const char *make_job_model(const char *layers, const char *extra);

#endif
