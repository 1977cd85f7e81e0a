#include "synthetic.h"

#include "ops/layers.h"
#include "test.h"

#include <stdio.h>
#include <zlib.h>

void write_idx(const char *path, int dims, const uint32_t *shape, const uint8_t *data, size_t n)
{
    uint8_t head[16] = {0, 0, 8, (uint8_t)dims};
    for (int i = 0; i < dims; i++)
        for (int b = 0; b < 4; b++)
            head[4 + 4 * i + b] = (uint8_t)(shape[i] >> (24 - 8 * b));
    gzFile f = gzopen(path, "wb");
    gzwrite(f, head, 4 + 4 * (unsigned)dims);
    gzwrite(f, data, (unsigned)n);
    gzclose(f);
}

const char *make_job(const char *extra)
{
    return make_job_model("[conv]\nfilters = 4\nsize = 3\npadding = 1\n[relu]\n[maxpool]\nsize = 2\n"
                          "[conv]\nfilters = 3\nsize = 3\n[relu]\n[flatten]\n[dense]\noutputs = 10\n",
                          extra);
}

const char *make_job_model(const char *layers, const char *extra)
{
    static char cfg_path[512];
    char img[512], lbl[512];
    snprintf(img, sizeof img, "%s/img.gz", test_tmpdir());
    snprintf(lbl, sizeof lbl, "%s/lbl.gz", test_tmpdir());
    static uint8_t pixels[SYN_IMAGES * SYN_SIDE * SYN_SIDE], labels[SYN_IMAGES];
    ops_rng r;
    ops_rng_seed(&r, 99);
    for (int i = 0; i < SYN_IMAGES; i++) {
        labels[i] = (uint8_t)(i % 4);
        uint8_t *p = pixels + i * SYN_SIDE * SYN_SIDE;
        for (int j = 0; j < SYN_SIDE * SYN_SIDE; j++)
            p[j] = (uint8_t)(ops_rng_next(&r) % 60);
        int y0 = labels[i] / 2 ? 6 : 1, x0 = labels[i] % 2 ? 6 : 1;
        for (int y = 0; y < 3; y++)
            for (int x = 0; x < 3; x++)
                p[(y0 + y) * SYN_SIDE + x0 + x] = 250;
    }
    write_idx(img, 3, (uint32_t[]){SYN_IMAGES, SYN_SIDE, SYN_SIDE}, pixels, sizeof pixels);
    write_idx(lbl, 1, (uint32_t[]){SYN_IMAGES}, labels, sizeof labels);
    snprintf(cfg_path, sizeof cfg_path, "%s/job.cfg", test_tmpdir());
    FILE *f = fopen(cfg_path, "w");
    fprintf(f, "[job]\nepochs = 3\nbatch = 20\nseed = 5\noutput = %s/run\n"
               "[data]\ntrain_images = %s\ntrain_labels = %s\ntest_images = %s\ntest_labels = %s\n"
               "%s[softmax_xent]\n[optimizer]\nlr = 0.1\nmomentum = 0.5\n[execution]\ngrain = 3\n%s",
            test_tmpdir(), img, lbl, img, lbl, layers, extra);
    fclose(f);
    return cfg_path;
}
