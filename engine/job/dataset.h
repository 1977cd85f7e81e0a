/* Labelled image sets in memory: IDX (MNIST, Fashion-MNIST; gzip or raw) and CIFAR-10 binary
 * batches. Pixels stay as bytes (a quarter of the memory of floats); the batch loader scales
 * them. Every problem with a file is an error naming it and saying what was expected. */
#ifndef FRUGAL_DATASET_H
#define FRUGAL_DATASET_H

#include <stddef.h>
#include <stdint.h>

typedef struct dataset {
    long n;                /* samples */
    int c, h, w;           /* channels, height, width (NCHW per sample) */
    int classes;
    uint8_t *pixels;       /* n * c * h * w */
    uint8_t *labels;       /* n, each < classes */
} dataset;

/* limit > 0 keeps only the first `limit` samples; labels may be NULL (images to classify: every
 * label 0). Return 0, or -1 with err set. */
int dataset_load_idx(dataset *d, const char *images, const char *labels, long limit, char *err,
                     size_t errlen);
/* files: comma-separated CIFAR-10 batch files, read in order. */
int dataset_load_cifar10(dataset *d, const char *files, long limit, char *err, size_t errlen);
/* Bilinear resize to h x w (0 keeps), then channel replication to `channels` (0 keeps; only from
 * 1 channel). */
int dataset_reshape(dataset *d, int h, int w, int channels, char *err, size_t errlen);
/* PGM and PPM images, ASCII (P2, P3) or binary (P5, P6), 8 or 16 bits, each resized to h x w
 * and converted to c channels (grey from colour by luminance, colour from grey by
 * replication); labels are 0. */
int dataset_load_pnm(dataset *d, const char *const *paths, int n, int c, int h, int w,
                     int classes, char *err, size_t errlen);
void dataset_free(dataset *d);
/* Whether path starts like an IDX file of bytes (raw or gzip): eval tells IDX images from a
 * CIFAR-10 batch with it. */
int dataset_looks_idx(const char *path);

#endif
