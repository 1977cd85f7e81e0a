/* Training end to end on a generated dataset: the loss falls, the weights do not depend on the
 * number of workers or on how tasks are cut, a loss that is not finite ends the run with a
 * clear error, and one step matches PyTorch. */
#include "common/env_switches.h"
#include "engine/model/checkpoint.h"
#include "engine/cluster/chunk_engine.h"
#include "engine/job/config.h"
#include "engine/job/dataset.h"
#include "engine/model/model.h"
#include "engine/train/plan.h"
#include "engine/train/trainer.h"
#include "ops/conv.h"
#include "ops/cpu.h"
#include "ops/layers.h"
#include "synthetic.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int poison_weights;

typedef struct run {
    double loss[8], acc[8];
    float params[16384];
    long nparams;
    int rc;
    char err[512];
    int fused[CONFIG_MAX_LAYERS];   /* the plan's (plan.h) */
    int dx_through_relu[CONFIG_MAX_LAYERS];
    int out_lanes[CONFIG_MAX_LAYERS];
} run;

/* One epoch as the run loop does it: the training pass, then the test pass. */
static int epoch(trainer *t, int e, double *loss, double *test_acc, char *err, size_t errlen)
{
    pass_result tr, te;
    if (trainer_train(t, e, 0, &tr, err, errlen) || trainer_evaluate(t, NULL, NULL, &te, err, errlen))
        return -1;
    *loss = tr.loss / (double)tr.samples;
    *test_acc = (double)te.correct / (double)te.samples;
    return 0;
}

static void train(const char *cfg_path, int workers, int epochs, run *out)
{
    static job_config cfg;
    dataset train, test;
    model m;
    memset(out, 0, sizeof *out);
    if (config_load(&cfg, cfg_path, NULL, out->err, sizeof out->err)) {
        out->rc = -1;
        return;
    }
    CHECK(dataset_load_idx(&train, cfg.train_images, cfg.train_labels, 0, out->err, sizeof out->err) == 0);
    CHECK(dataset_load_idx(&test, cfg.test_images, cfg.test_labels, 100, out->err, sizeof out->err) == 0);
    CHECKF(model_build(&m, cfg.path, cfg.layers, cfg.nlayers, 1, SYN_SIDE, SYN_SIDE, 10, 1, out->err, sizeof out->err) == 0,
           "%s", out->err);
    model_init(&m, cfg.seed);
    exec_plan plan;
    plan_make(&plan, &cfg, &m, 0);
    memcpy(out->fused, plan.fused, sizeof out->fused);
    memcpy(out->dx_through_relu, plan.dx_through_relu, sizeof out->dx_through_relu);
    memcpy(out->out_lanes, plan.out_lanes, sizeof out->out_lanes);
    if (poison_weights)
        m.layers[0].params[0] = NAN;
    rt_runtime *rt = rt_create(&(rt_config){.workers = workers});
    trainer *t = trainer_create(&cfg, &m, rt, &train, &test, out->err, sizeof out->err);
    CHECKF(t != NULL, "%s", out->err);
    for (int e = 1; e <= epochs && t; e++) {
        out->rc = epoch(t, e, &out->loss[e - 1], &out->acc[e - 1], out->err, sizeof out->err);
        if (out->rc)
            break;
    }
    trainer_destroy(t);   /* the parameters back in host memory */
    for (int l = 0; l < m.nlayers; l++)
        for (long i = 0; i < m.layers[l].nparams && out->nparams < 16384; i++)
            out->params[out->nparams++] = m.layers[l].params[i];
    char final[600];
    snprintf(final, sizeof final, "%s/final.bin", test_tmpdir());
    CHECK(checkpoint_save(&m, &(checkpoint_state){.epoch = epochs}, final, out->err,
                          sizeof out->err) == 0);
    rt_destroy(rt);
    model_free(&m);
    dataset_free(&train);
    dataset_free(&test);
}

TEST(train_loss_falls_and_learns)
{
    static run r;
    train(make_job(""), 2, 4, &r);
    CHECKF(r.rc == 0, "%s", r.err);
    CHECKF(r.loss[3] < 0.5 * r.loss[0], "loss %g -> %g", r.loss[0], r.loss[3]);
    CHECKF(r.acc[3] > 0.9, "test accuracy %g", r.acc[3]);
}

TEST(train_same_weights_with_1_2_4_16_workers)
{
    static run base, other;
    const char *job = make_job("");
    train(job, 1, 2, &base);
    CHECK(base.rc == 0 && base.nparams > 100);
    int workers[] = {2, 4, 16};
    for (int i = 0; i < 3; i++) {
        train(job, workers[i], 2, &other);
        CHECK(other.rc == 0 && other.nparams == base.nparams);
        CHECKF(!memcmp(base.params, other.params, sizeof(float) * (size_t)base.nparams),
               "weights differ between 1 and %d workers", workers[i]);
        CHECK(base.loss[1] == other.loss[1]);
    }
}

/* Convolutions split into filter groups (2 and 3 filters per task, uneven) compute every filter
 * as a whole convolution does: the weights are bit-identical, whatever the workers. */
TEST(train_filter_groups_give_the_same_weights)
{
    static run whole, split;
    train(make_job("filter_groups = 1\n"), 1, 2, &whole);
    CHECKF(whole.rc == 0, "%s", whole.err);
    int workers[] = {1, 3};
    for (int i = 0; i < 2; i++) {
        train(make_job("filter_groups = 2\n"), workers[i], 2, &split);
        CHECKF(split.rc == 0, "%s", split.err);
        CHECK(split.nparams == whole.nparams);
        CHECKF(!memcmp(whole.params, split.params, sizeof(float) * (size_t)whole.nparams),
               "weights differ with 2 filter groups on %d workers", workers[i]);
    }
}

/* Chunk 0 of the first batch computed as a node computes it; its partial gradient as it would
 * travel (layer after layer, each in wire order) into grads. Returns layer 0's filter groups. */
static int chunk_gradient(const char *job, float *grads, long *nparams)
{
    static job_config cfg;
    dataset train;
    chunk_engine e;
    char err[512];
    CHECKF(config_load(&cfg, job, NULL, err, sizeof err) == 0, "%s", err);
    CHECKF(dataset_load_idx(&train, cfg.train_images, cfg.train_labels, 0, err, sizeof err) == 0, "%s", err);
    CHECKF(chunk_engine_open(&e, &cfg, &train, NULL, err, sizeof err) == 0, "%s", err);
    msg_work w = {0, 1, 0, 0, (uint32_t)cfg.batch, 0};
    msg_result r;
    CHECKF(chunk_engine_run(&e, &w, NULL, 1, err, sizeof err) == 0, "%s", err);
    chunk_engine_result(&e, &w, &r);
    *nparams = (long)r.nparams;
    memcpy(grads, r.grads, sizeof(float) * r.nparams);
    int groups = trainer_plan(e.t)->groups[0];
    /* back into this machine's groups and out again: the same bytes */
    static float mine[4096], again[4096];
    trainer_grad_from_wire(e.t, 0, grads, mine);
    trainer_grad_to_wire(e.t, 0, mine, again);
    CHECK(!memcmp(grads, again, sizeof(float) * (size_t)e.layer_params[0]));
    chunk_engine_close(&e);
    dataset_free(&train);
    return groups;
}

/* A chunk's partial gradient leaves a machine in the layer's own order whatever filter groups
 * computed it (a device-pinned machine does not fuse, and may split where a CPU does not): two
 * groups send the bytes one group sends, as they compute every filter alike. */
TEST(train_chunk_gradient_travels_in_layer_order_whatever_the_groups)
{
    static float whole[4096], split[4096];
    long nwhole, nsplit;
    CHECK(chunk_gradient(make_job("filter_groups = 1\nfuse = off\n"), whole, &nwhole) == 1);
    CHECK(chunk_gradient(make_job("filter_groups = 2\nfuse = off\n"), split, &nsplit) == 2);
    CHECK(nwhole == nsplit && nwhole > 100 && nwhole <= 4096);
    CHECKF(!memcmp(whole, split, sizeof(float) * (size_t)nwhole),
           "a chunk's gradient differs as sent from 1 and 2 filter groups");
}

/* A first convolution reading the data set's bytes in place trains exactly as one reading the
 * loaded floats (large images take the bytes; FRUGAL_INPUT forces either). */
TEST(train_bytes_input_gives_the_same_weights)
{
    static run floats, bytes;
    const char *job = make_job("");
    setenv("FRUGAL_INPUT", "floats", 1);
    env_switches_read();
    train(job, 2, 2, &floats);
    setenv("FRUGAL_INPUT", "bytes", 1);
    env_switches_read();
    train(job, 3, 2, &bytes);
    unsetenv("FRUGAL_INPUT");
    env_switches_read();
    CHECKF(floats.rc == 0 && bytes.rc == 0, "%s %s", floats.err, bytes.err);
    CHECK(floats.nparams == bytes.nparams && floats.loss[1] == bytes.loss[1]);
    CHECK(!memcmp(floats.params, bytes.params, sizeof(float) * (size_t)floats.nparams));
}

/* The first convolution fused with its max-pool trains exactly as the two layers apart. */
TEST(train_fused_conv_maxpool_gives_the_same_weights)
{
    static run apart, fused;
    train(make_job("fuse = off\n"), 2, 2, &apart);
    train(make_job("fuse = on\n"), 3, 2, &fused);
    CHECKF(apart.rc == 0 && fused.rc == 0, "%s %s", apart.err, fused.err);
    CHECK(apart.nparams == fused.nparams && apart.loss[1] == fused.loss[1]);
    CHECK(!memcmp(apart.params, fused.params, sizeof(float) * (size_t)apart.nparams));
}

/* make_job's data set, a first convolution and its relu, then a second one followed by a relu
 * and, pooled, a max-pool (so the relu runs after the pool), fuse = on or off. Fused, the
 * first convolution runs with its relu (no input gradient), the second with its max-pool
 * (and the relu after it) or with its relu, its input gradient from theirs (the Winograd
 * paths). */
/* name.cfg on make_job's data set: the layers given, then a dense classifier; SGD at lr, 3
 * samples a task, and fuse = fuse. */
static const char *conv_job(const char *name, int seed, const char *layers, const char *lr,
                            const char *fuse)
{
    static char path[600];
    const char *d = test_tmpdir();
    make_job("");
    snprintf(path, sizeof path, "%s/%s.cfg", d, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fprintf(f, "[job]\nepochs = 2\nbatch = 20\nseed = %d\noutput = %s/run\n[data]\n"
               "train_images = %s/img.gz\ntrain_labels = %s/lbl.gz\n"
               "test_images = %s/img.gz\ntest_labels = %s/lbl.gz\n%s"
               "[flatten]\n[dense]\noutputs = 10\n[softmax_xent]\n"
               "[optimizer]\nlr = %s\nmomentum = 0.5\n[execution]\ngrain = 3\nfuse = %s\n",
            seed, d, d, d, d, d, layers, lr, fuse);
    fclose(f);
    return path;
}

static const char *second_conv_job(const char *fuse, int pooled)
{
    return conv_job("second-conv", 5,
                    pooled ? "[conv]\nfilters = 4\nsize = 3\npadding = 1\n[relu]\n"
                             "[conv]\nfilters = 6\nsize = 3\npadding = 1\n[relu]\n"
                             "[maxpool]\nsize = 2\n"
                           : "[conv]\nfilters = 4\nsize = 3\npadding = 1\n[relu]\n"
                             "[conv]\nfilters = 6\nsize = 3\npadding = 1\n[relu]\n",
                    "0.1", fuse);
}

/* A later convolution on the Winograd paths (both tile sizes) fused with its max-pool or its
 * relu, the input gradient from theirs too and through the first one's relu (whose backward
 * is then left to it), trains exactly as the layers apart; so does the first one fused with
 * its relu, on those paths or the direct one (where the second is not fused: it would need
 * its input gradient). */
TEST(train_fused_convolutions_give_the_same_weights)
{
    static run apart, fused;
    const conv_strategy paths[] = {CONV_WINOGRAD, CONV_WINOGRAD4, CONV_DIRECT};
    for (int pooled = 0; pooled < 2; pooled++)
        for (int k = 0; k < 3; k++) {
            conv_set_strategy(paths[k]);
            train(second_conv_job("off", pooled), 2, 2, &apart);
            train(second_conv_job("on", pooled), 3, 2, &fused);
            conv_set_strategy(CONV_AUTO);
            int second = paths[k] == CONV_DIRECT ? 0 : pooled ? 2 : 1;   /* plan.h */
            CHECKF(apart.rc == 0 && fused.rc == 0, "%s %s", apart.err, fused.err);
            CHECKF(!apart.fused[0] && !apart.fused[2] && fused.fused[0] == 1 &&
                       fused.fused[2] == second && fused.dx_through_relu[2] == (second > 0) &&
                       !apart.dx_through_relu[2],
                   "%s, pooled %d: fused %d and %d", conv_path_name(paths[k]), pooled,
                   fused.fused[0], fused.fused[2]);
            CHECK(apart.nparams == fused.nparams && apart.loss[1] == fused.loss[1]);
            CHECKF(!memcmp(apart.params, fused.params, sizeof(float) * (size_t)apart.nparams),
                   "%s, pooled %d: the fused layers train otherwise", conv_path_name(paths[k]),
                   pooled);
        }
}

/* Three convolutions of 16 filters, the first on the lanes kernel, the others on Winograd
 * F(4x4) (12 x 12), the last fused with its max-pool: on AVX-512 the activations between them
 * go in channel lanes (on AVX2, those between the Winograd ones), and train to the same weights as in NCHW (FRUGAL_LAYOUT=nchw). */
TEST(train_channel_lanes_give_the_nchw_weights)
{
    static run nchw, lanes;
    const char *path = conv_job("lanes", 9,
                                "[conv]\nfilters = 16\nsize = 3\npadding = 2\n[relu]\n"
                                "[conv]\nfilters = 16\nsize = 3\npadding = 1\n[relu]\n"
                                "[conv]\nfilters = 16\nsize = 3\npadding = 1\n[relu]\n"
                                "[maxpool]\nsize = 2\n",
                                "0.05", "auto");
    setenv("FRUGAL_LAYOUT", "nchw", 1);
    env_switches_read();
    train(path, 2, 2, &nchw);
    unsetenv("FRUGAL_LAYOUT");
    env_switches_read();
    train(path, 3, 2, &lanes);
    CHECKF(nchw.rc == 0 && lanes.rc == 0, "%s %s", nchw.err, lanes.err);
    CHECK(!nchw.out_lanes[0] && !nchw.out_lanes[2]);
    int first = ops_isa_active() == OPS_ISA_AVX512;   /* the lanes kernel's */
    if (ops_isa_active() >= OPS_ISA_AVX2)   /* conv, relu | conv, relu | conv ... */
        CHECKF(lanes.out_lanes[0] == first && lanes.out_lanes[2] && !lanes.out_lanes[4],
               "lanes after layers 0, 2, 4: %d %d %d", lanes.out_lanes[0], lanes.out_lanes[2],
               lanes.out_lanes[4]);
    else
        printf("  (no AVX2 here: NCHW both times)\n");
    CHECK(nchw.nparams == lanes.nparams && nchw.nparams > 10000);
    CHECKF(!memcmp(nchw.params, lanes.params, sizeof(float) * (size_t)nchw.nparams),
           "channel lanes train otherwise");
    /* a first layer pooled 3x3 (its lanes kernel pools 2x2 only) before one that takes lanes:
     * NCHW between them, and it trains */
    train(conv_job("pooled3", 9,
                   "[conv]\nfilters = 16\nsize = 3\npadding = 2\n[relu]\n[maxpool]\nsize = 3\n"
                   "[conv]\nfilters = 16\nsize = 3\npadding = 1\n[relu]\n",
                   "0.05", "auto"),
          2, 1, &lanes);
    CHECKF(lanes.rc == 0 && !lanes.out_lanes[0], "%s", lanes.err);
}

/* A job file with a section twice is refused before anything runs. */
TEST(train_duplicate_section_is_refused_before_training)
{
    static run r;
    train(make_job("[execution]\n"), 2, 1, &r);   /* a second [execution]: refused, never run */
    CHECKF(strstr(r.err, "section [execution] appears twice") != NULL, "error was '%s'", r.err);
}

TEST(train_nan_loss_ends_the_run_with_a_message)
{
    static run r;
    poison_weights = 1;   /* a NaN weight, as a diverged run would produce */
    train(make_job(""), 2, 2, &r);
    poison_weights = 0;
    CHECK(r.rc == -1);
    CHECKF(strstr(r.err, "softmax_xent") && strstr(r.err, "diverged"), "error was '%s'", r.err);
}

/* Two epochs, a checkpoint, a fresh process state, one more epoch: the same weights as three
 * epochs in one go. And a damaged checkpoint is refused, leaving the model as it was. */
TEST(train_resume_gives_the_same_weights)
{
    static run straight;
    const char *job = make_job("");
    train(job, 2, 3, &straight);
    CHECK(straight.rc == 0);

    static job_config cfg;
    char err[512], path[600];
    snprintf(path, sizeof path, "%s/ck.bin", test_tmpdir());
    dataset tr, te;
    CHECK(config_load(&cfg, job, NULL, err, sizeof err) == 0);
    CHECK(dataset_load_idx(&tr, cfg.train_images, cfg.train_labels, 0, err, sizeof err) == 0);
    CHECK(dataset_load_idx(&te, cfg.test_images, cfg.test_labels, 100, err, sizeof err) == 0);
    for (int phase = 0; phase < 2; phase++) {
        model m;
        CHECK(model_build(&m, cfg.path, cfg.layers, cfg.nlayers, 1, SYN_SIDE, SYN_SIDE, 10, 1, err, sizeof err) == 0);
        model_init(&m, cfg.seed);
        int done = 0;
        checkpoint_state st;
        if (phase == 1) {
            CHECKF(checkpoint_load(&m, &st, path, err, sizeof err) == 0 && st.epoch == 2, "%s", err);
            done = st.epoch;
            free(st.log);
        }
        rt_runtime *rt = rt_create(&(rt_config){.workers = 3});
        trainer *t = trainer_create(&cfg, &m, rt, &tr, &te, err, sizeof err);
        double loss, acc;
        for (int e = done + 1; e <= (phase == 0 ? 2 : 3); e++)
            CHECK(epoch(t, e, &loss, &acc, err, sizeof err) == 0);
        trainer_destroy(t);
        rt_destroy(rt);
        if (phase == 0) {
            CHECKF(checkpoint_save(&m, &(checkpoint_state){.epoch = 2}, path, err, sizeof err) == 0,
                   "%s", err);
        } else {
            long k = 0;
            int same = 1;
            for (int l = 0; l < m.nlayers; l++)
                for (long i = 0; i < m.layers[l].nparams; i++)
                    same &= m.layers[l].params[i] == straight.params[k++];
            CHECKF(same, "resumed weights differ from an uninterrupted run");
        }
        model_free(&m);
    }
    /* damage: one flipped byte, then a truncation */
    FILE *f = fopen(path, "r+b");
    fseek(f, 100, SEEK_SET);
    int c = fgetc(f);
    fseek(f, 100, SEEK_SET);
    fputc(c ^ 0x40, f);
    fclose(f);
    model m;
    CHECK(model_build(&m, cfg.path, cfg.layers, cfg.nlayers, 1, SYN_SIDE, SYN_SIDE, 10, 1, err, sizeof err) == 0);
    model_init(&m, cfg.seed);
    float before = m.layers[0].params[0];
    checkpoint_state st = {0};
    CHECK(checkpoint_load(&m, &st, path, err, sizeof err) == -1);
    CHECKF(strstr(err, "corrupt") != NULL, "%s", err);
    CHECK(m.layers[0].params[0] == before && st.epoch == 0);
    CHECK(truncate(path, 60) == 0);
    CHECK(checkpoint_load(&m, &st, path, err, sizeof err) == -1);
    CHECKF(strstr(err, "truncated") != NULL, "%s", err);
    model_free(&m);
    dataset_free(&tr);
    dataset_free(&te);
}

#include "fixture.h"

/* One batch through the whole training graph matches PyTorch: load, forward, backward, the
 * per-chunk gradient reduction and SGD with momentum, for DAHL's CNN. */
TEST(train_one_step_of_dahl_cnn_matches_pytorch)
{
    int nc;
    fx_case *cs = fx_load("tests/fixtures/ops.txt", "dahl_step", &nc);
    CHECKF(nc > 0, "the fixture has no dahl_step case: regenerate with ./build.sh fixtures");
    if (!nc)
        return;
    fx_case *c = cs;
    uint8_t pixels[4 * 28 * 28], labels[4];
    for (int i = 0; i < 4 * 28 * 28; i++)
        pixels[i] = (uint8_t)fx_get(c, "pixels")->v[i];
    for (int i = 0; i < 4; i++)
        labels[i] = (uint8_t)fx_get(c, "labels")->v[i];
    char img[512], lbl[512], cfg_path[512], err[512];
    snprintf(img, sizeof img, "%s/px.gz", test_tmpdir());
    snprintf(lbl, sizeof lbl, "%s/lb.gz", test_tmpdir());
    snprintf(cfg_path, sizeof cfg_path, "%s/dahl.cfg", test_tmpdir());
    write_idx(img, 3, (uint32_t[]){4, 28, 28}, pixels, sizeof pixels);
    write_idx(lbl, 1, (uint32_t[]){4}, labels, sizeof labels);
    FILE *f = fopen(cfg_path, "w");
    fprintf(f, "[job]\nepochs = 1\nbatch = 4\n[data]\ntrain_images = %s\ntrain_labels = %s\n"
               "[conv]\nfilters = 4\n[relu]\n[maxpool]\n[flatten]\n[dense]\noutputs = 10\n"
               "[softmax_xent]\n[optimizer]\nlr = 0.1\nmomentum = 0.9\n[execution]\ngrain = 1\n",
            img, lbl);
    fclose(f);
    static job_config cfg;
    dataset d;
    model m;
    CHECKF(config_load(&cfg, cfg_path, NULL, err, sizeof err) == 0, "%s", err);
    CHECK(dataset_load_idx(&d, img, lbl, 0, err, sizeof err) == 0);
    CHECK(model_build(&m, cfg.path, cfg.layers, cfg.nlayers, 1, 28, 28, 10, 1, err, sizeof err) == 0);
    const char *start[4] = {"conv_w", "conv_b", "dense_w", "dense_b"};
    const char *after[4] = {"conv_w1", "conv_b1", "dense_w1", "dense_b1"};
    layer *owner[4] = {&m.layers[0], &m.layers[0], &m.layers[4], &m.layers[4]};
    for (int i = 0; i < 4; i++) {   /* weights then bias, as model.c lays them out */
        const fx_array *a = fx_get(c, start[i]);
        float *dst = owner[i]->params + (i % 2 ? owner[i]->nweights : 0);
        for (long j = 0; j < a->n; j++)
            dst[j] = (float)a->v[j];
    }
    rt_runtime *rt = rt_create(&(rt_config){.workers = 2});
    trainer *t = trainer_create(&cfg, &m, rt, &d, NULL, err, sizeof err);
    pass_result r;
    CHECKF(trainer_train(t, 1, 0, &r, err, sizeof err) == 0, "%s", err);
    CHECK_NEAR(r.loss / (double)r.samples, fx_get(c, "loss")->v[0], 1e-5, 1e-5);
    trainer_destroy(t);
    for (int i = 0; i < 4; i++) {
        float *got = owner[i]->params + (i % 2 ? owner[i]->nweights : 0);
        fx_close(after[i], got, fx_get(c, after[i]), 1e-5, 1e-4);
    }
    rt_destroy(rt);
    model_free(&m);
    dataset_free(&d);
    fx_free(cs, nc);
}

/* A checkpoint alone rebuilds its model: evaluating it gives the accuracy training reported. */
TEST(train_eval_from_checkpoint_matches_training)
{
    static run r;
    train(make_job(""), 2, 2, &r);
    CHECK(r.rc == 0);
    char path[600], err[512];
    snprintf(path, sizeof path, "%s/final.bin", test_tmpdir());
    model m;
    checkpoint_state st;
    CHECKF(checkpoint_open_model(&m, &st, path, err, sizeof err) == 0, "%s", err);
    free(st.log);
    CHECK(st.epoch == 2 && m.nlayers == 8 && m.classes == 10);
    static job_config cfg;
    char img[512], lbl[512];
    snprintf(img, sizeof img, "%s/img.gz", test_tmpdir());
    snprintf(lbl, sizeof lbl, "%s/lbl.gz", test_tmpdir());
    dataset d;
    CHECK(dataset_load_idx(&d, img, lbl, 100, err, sizeof err) == 0);
    cfg.batch = 64, cfg.epochs = 1;
    rt_runtime *rt = rt_create(&(rt_config){.workers = 2});
    trainer *t = trainer_create(&cfg, &m, rt, &d, NULL, err, sizeof err);
    static int32_t pred[100];
    pass_result p;
    CHECKF(trainer_evaluate(t, &d, pred, &p, err, sizeof err) == 0, "%s", err);
    double acc = (double)p.correct / (double)p.samples;
    CHECKF(acc == r.acc[1], "evaluated %g, training reported %g", acc, r.acc[1]);
    long right = 0;
    for (int i = 0; i < 100; i++)
        right += pred[i] == d.labels[i];
    CHECK(right == (long)(acc * 100 + 0.5));
    trainer_destroy(t);
    rt_destroy(rt);
    model_free(&m);
    dataset_free(&d);
    CHECK(truncate(path, 200) == 0);   /* a damaged checkpoint is refused */
    CHECK(checkpoint_open_model(&m, &st, path, err, sizeof err) == -1);
    CHECKF(strstr(err, "truncated") != NULL, "%s", err);
}

/* A kernel that cannot get its scratch memory fails its task with a message; nothing is
 * skipped silently. */
#include "ops/scratch.h"
TEST(train_kernel_out_of_memory_fails_the_task)
{
    static run r;
    ops_scratch_limit(1024);   /* far below what a convolution's buffers need */
    setenv("FRUGAL_CONV", "im2col", 1);
    env_switches_read();
    train(make_job(""), 2, 1, &r);
    ops_scratch_limit(0);
    CHECK(r.rc == -1);
    CHECKF(strstr(r.err, "out of memory for the kernel's scratch buffers") != NULL,
           "error was '%s'", r.err);
}
