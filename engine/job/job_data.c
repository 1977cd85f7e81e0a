#include "engine/job/job_data.h"

int job_load_train(job_config *cfg, dataset *d, char *err, size_t errlen)
{
    int rc = cfg->format == DATA_IDX
                 ? dataset_load_idx(d, cfg->train_images, cfg->train_labels, cfg->limit, err, errlen)
                 : dataset_load_cifar10(d, cfg->train_files, cfg->limit, err, errlen);
    if (rc || dataset_reshape(d, cfg->resize_h, cfg->resize_w, cfg->channels, err, errlen))
        return -1;
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
