#include "engine/job/job_data.h"

#include <stdio.h>
#include <string.h>

/* Keeps the samples `keep` says yes to, in order, in place. */
static void keep_samples(dataset *d, int (*keep)(const dataset *d, long i, const void *ctx),
                         const void *ctx)
{
    size_t per = (size_t)d->c * (size_t)d->h * (size_t)d->w;
    long kept = 0;
    for (long i = 0; i < d->n; i++) {
        if (!keep(d, i, ctx))
            continue;
        if (kept != i) {
            memmove(d->pixels + (size_t)kept * per, d->pixels + (size_t)i * per, per);
            d->labels[kept] = d->labels[i];
        }
        kept++;
    }
    d->n = kept;
}

static int in_classes(const dataset *d, long i, const void *ctx)
{
    return ((const uint8_t *)ctx)[d->labels[i]];
}

typedef struct shard { int index, count; } shard;

static int in_shard(const dataset *d, long i, const void *ctx)
{
    (void)d;
    const shard *s = ctx;
    return i % s->count == s->index;
}

int job_data_shard(job_config *cfg, dataset *d, int index, int count, char *err, size_t errlen)
{
    shard s = {index, count};
    keep_samples(d, in_shard, &s);
    if (!d->n)
        return snprintf(err, errlen, "%s: [data] shard %d/%d holds no training sample", cfg->path,
                        index, count), -1;
    if (cfg->batch > d->n)
        cfg->batch_asked = cfg->batch, cfg->batch = (int)d->n;
    return 0;
}

int job_load_train(job_config *cfg, dataset *d, char *err, size_t errlen)
{
    int rc = cfg->format == DATA_IDX
                 ? dataset_load_idx(d, cfg->train_images, cfg->train_labels, cfg->limit, err, errlen)
                 : dataset_load_cifar10(d, cfg->train_files, cfg->limit, err, errlen);
    if (rc || dataset_reshape(d, cfg->resize_h, cfg->resize_w, cfg->channels, err, errlen))
        return -1;
    uint8_t classes[256];
    if (cfg->data_classes[0] && config_classes(cfg->data_classes, classes) > 0) {
        keep_samples(d, in_classes, classes);
        if (!d->n)
            return snprintf(err, errlen, "%s: [data] classes = %s: no training sample has those "
                            "labels", cfg->path, cfg->data_classes), -1;
    }
    if (cfg->shard_count && cfg->shard_index >= 0)
        return job_data_shard(cfg, d, cfg->shard_index, cfg->shard_count, err, errlen);
    if (cfg->batch > d->n)
        cfg->batch_asked = cfg->batch, cfg->batch = (int)d->n;
    return 0;
}

int job_load_test(const job_config *cfg, const dataset *train, dataset *d, int *have, char *err,
                  size_t errlen)
{
    *have = 0;
    if (cfg->format == DATA_IDX ? !cfg->test_images[0] : !cfg->test_file[0])
        return 0;
    int rc = cfg->format == DATA_IDX
                 ? dataset_load_idx(d, cfg->test_images, cfg->test_labels, cfg->test_limit, err, errlen)
                 : dataset_load_cifar10(d, cfg->test_file, cfg->test_limit, err, errlen);
    if (rc || dataset_reshape(d, train->h, train->w, train->c, err, errlen))
        return -1;
    *have = 1;
    return 0;
}
