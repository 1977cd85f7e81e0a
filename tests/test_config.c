/* Job files: a good one loads; every class of mistake is an error naming file, line and key. */
#include "engine/job/config.h"
#include "engine/placement/policy.h"
#include "engine/model/model.h"
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *DAHL =
    "# DAHL's CNN\n"
    "[job]\nepochs = 3\nbatch = 32   ; comment\nseed = 7\n\n"
    "[data]\nformat = idx\ntrain_images = a.gz\ntrain_labels = b.gz\nlimit = 8192\n"
    "[conv]\nfilters = 4\nsize = 3\n"
    "[relu]\n[maxpool]\nsize = 2\n[flatten]\n[dense]\noutputs = 10\n[softmax_xent]\n"
    "[optimizer]\ntype = sgd\nlr = 0.001\n"
    "[execution]\nworkers = 2\ngrain = auto\n";

/* The shapes of the layers, checked as training checks them (no parameters allocated). */
static int config_check_shapes(const job_config *cfg, int c, int h, int w, int classes,
                               char *err, size_t errlen)
{
    static model m;
    return model_build(&m, cfg->path, cfg->layers, cfg->nlayers, c, h, w, classes, 0, err, errlen);
}

static const char *write_cfg(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", test_tmpdir(), name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

TEST(config_loads_dahl_cnn)
{
    job_config cfg;
    char err[512] = "";
    const char *path = write_cfg("dahl.cfg", DAHL);
    CHECKF(config_load(&cfg, path, NULL, err, sizeof err) == 0, "%s", err);
    CHECK(cfg.epochs == 3 && cfg.batch == 32 && cfg.seed == 7 && cfg.limit == 8192);
    CHECK(cfg.nlayers == 6 && cfg.layers[0].type == LAYER_CONV && cfg.layers[0].filters == 4);
    CHECK(cfg.layers[2].type == LAYER_MAXPOOL && cfg.layers[2].stride == 2);   /* defaults to size */
    CHECK(cfg.layers[4].outputs == 10 && cfg.layers[5].type == LAYER_SOFTMAX_XENT);
    CHECK(cfg.lr > 0.00099f && cfg.lr < 0.00101f && cfg.workers == 2 && cfg.grain == 0);
    CHECK(strstr(cfg.output, "runs/dahl") != NULL);
    CHECKF(config_check_shapes(&cfg, 1, 28, 28, 10, err, sizeof err) == 0, "%s", err);
    /* overrides */
    const char *set[] = {"optimizer.lr=0.05", "execution.workers=1", "layer1.filters=8",
                         "data.resize=62x84", NULL};
    CHECKF(config_load(&cfg, path, set, err, sizeof err) == 0, "%s", err);
    CHECK(cfg.lr > 0.0499f && cfg.workers == 1 && cfg.layers[0].filters == 8);
    CHECK(cfg.resize_h == 62 && cfg.resize_w == 84);
    CHECK(cfg.policy == -1 && cfg.max_slowdown < 0 && cfg.power_profile[2] == 0);
    const char *placement[] = {"placement.policy=edp", "placement.max_slowdown=0.1",
                               "placement.power_budget_watts=45", "energy.power_profile=8,20.5,70",
                               NULL};
    CHECKF(config_load(&cfg, path, placement, err, sizeof err) == 0, "%s", err);
    CHECK(cfg.policy == POLICY_EDP && fabsf(cfg.max_slowdown - 0.1f) < 1e-6f &&
          cfg.power_budget_watts == 45 && cfg.power_profile[0] == 8 &&
          cfg.power_profile[1] == 20.5f && cfg.power_profile[2] == 70);
}

/* Replaces the first occurrence of `from` in DAHL with `to`; the load must fail with all of the
 * fragments in the message. */
static void expect_error(const char *from, const char *to, const char *frag1, const char *frag2)
{
    char text[4096], err[512] = "";
    const char *at = strstr(DAHL, from);
    CHECKF(at != NULL, "fixture lacks '%s'", from);
    if (!at)
        return;
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - DAHL), DAHL, to, at + strlen(from));
    job_config cfg;
    const char *path = write_cfg("bad.cfg", text);
    int rc = config_load(&cfg, path, NULL, err, sizeof err);
    if (rc == 0)
        rc = config_check_shapes(&cfg, 1, 28, 28, 10, err, sizeof err);
    CHECKF(rc == -1, "'%s' -> '%s' was accepted", from, to);
    CHECKF(strstr(err, "bad.cfg:") && strstr(err, frag1) && (!frag2 || strstr(err, frag2)),
           "'%s' -> '%s' gave: %s", from, to, err);
}

TEST(config_errors_name_file_line_and_key)
{
    expect_error("[relu]", "[relu6]", ":15: unknown section [relu6]", NULL);
    expect_error("epochs = 3", "epoch = 3", ":3: [job] has no key 'epoch'", "epochs");
    expect_error("batch = 32", "batch = 32x", ":4: [job] batch = '32x'", "whole number");
    expect_error("batch = 32", "batch = 0", "batch = '0'", NULL);
    expect_error("lr = 0.001", "lr = fast", "[optimizer] lr = 'fast'", NULL);
    expect_error("lr = 0.001", "lr = nan", "[optimizer] lr = 'nan'", NULL);
    expect_error("type = sgd", "type = adam", "only sgd", NULL);
    expect_error("[execution]", "[energy]\nrate_hz = 5000\n[execution]", ":26: [energy] rate_hz = '5000'",
                 "from 1 to 1000");
    expect_error("grain = auto", "grain = auto\nfuse = yes", "[execution] fuse = 'yes'",
                 "expected auto, on or off");
    expect_error("[execution]", "[energy]\nwatts = 3\n[execution]", "[energy] has no key 'watts'",
                 "carbon_g_per_kwh");
    expect_error("format = idx", "format = png", "expected idx or cifar10", NULL);
    expect_error("[execution]", "[placement]\npolicy = green\n[execution]",
                 "[placement] policy = 'green'", "expected time, energy, edp or carbon");
    expect_error("[execution]", "[energy]\npower_profile = 10, 65\n[execution]",
                 "[energy] power_profile = '10, 65'", "IDLE, ONE, ALL");
    expect_error("[execution]", "[energy]\npower_profile = 30, 20, 65\n[execution]",
                 "power_profile = '30, 20, 65'", "rising");
    expect_error("seed = 7", "seed = 7\nseed = 8", "[job] seed is set twice", NULL);
    expect_error("[optimizer]", "[job]\n[optimizer]", "section [job] appears twice", NULL);
    expect_error("# DAHL's CNN\n", "epochs = 1\n", ":1: 'epochs' comes before any [section]", NULL);
    expect_error("[flatten]", "flatten", "expected 'key = value'", NULL);
    expect_error("grain = auto", "grain = some", "'auto' or", NULL);
    expect_error("train_labels = b.gz\n", "", "needs train_images and train_labels", NULL);
    expect_error("filters = 4\n", "", "[conv] needs filters", NULL);
    expect_error("[softmax_xent]\n", "", "last layer must be [softmax_xent]", NULL);
    expect_error("[execution]", "[cluster]\ncompress = on\n[execution]",
                 "compress = on needs sync_every > 0", NULL);   /* the job's rule, not the cluster's */
    expect_error("[execution]", "[cluster]\noverlap = on\n[execution]",
                 "overlap = on needs sync_every > 0", NULL);
    /* impossible shapes, reported at the layer's line */
    expect_error("size = 3\n", "size = 29\n", ":12: [conv] (layer 1)", "does not fit");
    expect_error("outputs = 10", "outputs = 7", "has 7 outputs, the data has 10 classes", NULL);
    expect_error("[flatten]\n", "", "dense needs a flatten", NULL);
    expect_error("[flatten]\n", "[flatten]\n[conv]\nfilters = 2\n", "cannot follow flatten", NULL);
}

TEST(config_override_errors)
{
    job_config cfg;
    char err[512];
    const char *path = write_cfg("dahl.cfg", DAHL);
    const char *bad[][2] = {{"optimizer.lr", "expected section.key=value"},
                            {"optimizer.speed=1", "[optimizer] has no key 'speed' (keys: type, lr, "
                                                  "momentum, weight_decay)"},
                            {"model.lr=1", "no section 'model' to set (job, data, optimizer, "
                                           "execution, energy, placement, cluster, gossip, layerN)"},
                            {"cluster.mode=star", "expected sync, average or gossip"},
                            {"cluster.mode=average", "mode = average needs"},
                            {"gossip.topology=tree", "expected ring, exponential, random or full"},
                            {"data.shard=4/4", "expected I/N"},
                            {"data.shard=auto", "shard = auto needs"},
                            {"data.classes=1,x", "expected labels from 0 to 255"},
                            {"layer9.filters=2", "no layer 9"},
                            {"layer2.filters=2", "layer 2 is [relu], which has no key 'filters'"},
                            {"job.epochs=-1", "--set job.epochs=-1"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *set[] = {bad[i][0], NULL};
        CHECK(config_load(&cfg, path, set, err, sizeof err) == -1);
        CHECKF(strstr(err, bad[i][1]) != NULL, "--set %s gave: %s", bad[i][0], err);
    }
    CHECK(config_load(&cfg, "/nonexistent/job.cfg", NULL, err, sizeof err) == -1);
    CHECK(strstr(err, "/nonexistent/job.cfg: cannot open") != NULL);
}

/* '#' and ';' start a comment only at a line's start or after white space, so paths keep them;
 * a quoted value is taken as it is. A folder or a binary file is not a job file. */
TEST(config_comments_quotes_and_what_is_not_a_job_file)
{
    job_config cfg;
    char err[512];
    char text[2048];
    const char *at = strstr(DAHL, "train_images = a.gz");   /* a path with '#' instead */
    snprintf(text, sizeof text, "%.*strain_images = a#b.gz%s", (int)(at - DAHL), DAHL,
             at + strlen("train_images = a.gz"));
    const char *path = write_cfg("hash.cfg", text);
    CHECKF(config_load(&cfg, path, NULL, err, sizeof err) == 0, "%s", err);
    CHECKF(!strcmp(cfg.train_images, "a#b.gz"), "'%s'", cfg.train_images);
    CHECK(cfg.batch == 32);   /* "batch = 32   ; comment" still loses its comment */
    const char *quoted = write_cfg("quoted.cfg",
        "[job]\noutput = \"runs/with ; and # inside\"   # a comment after the quotes\n"
        "[data]\ntrain_images = x\ntrain_labels = y\n[dense]\noutputs = 10\n[softmax_xent]\n");
    CHECKF(config_load(&cfg, quoted, NULL, err, sizeof err) == 0, "%s", err);
    CHECKF(!strcmp(cfg.output, "runs/with ; and # inside"), "'%s'", cfg.output);
    const char *unclosed = write_cfg("unclosed.cfg", "[job]\noutput = \"runs/a\n");
    CHECK(config_load(&cfg, unclosed, NULL, err, sizeof err) == -1);
    CHECKF(strstr(err, "unclosed.cfg:2") && strstr(err, "'\"'"), "%s", err);
    CHECK(config_load(&cfg, test_tmpdir(), NULL, err, sizeof err) == -1);
    CHECKF(strstr(err, test_tmpdir()) && strstr(err, "is a directory, not a job file"), "%s", err);
    CHECK(config_parse(&cfg, "binary.cfg", "[job]\nepochs = 1\0\1\2\n", 20, NULL, err,
                       sizeof err) == -1);
    CHECKF(strstr(err, "binary.cfg:2") && strstr(err, "not a text file"), "%s", err);
}

/* ---- the job-file reference (docs/job-file.md) against the parser ---- */

typedef struct doc_keys {
    char text[1 << 16];
    char missing[2048], unknown[2048];
} doc_keys;

/* Whether the reference has `key` in its table under "## [section]". */
static int documented(const char *doc, const char *section, const char *key)
{
    char heading[80], row[96];
    snprintf(heading, sizeof heading, "\n## [%s]", section);
    snprintf(row, sizeof row, "\n| `%s` |", key);
    const char *at = strstr(doc, heading);
    const char *next = at ? strstr(at + 1, "\n## ") : NULL;
    const char *found = at ? strstr(at, row) : NULL;
    return found && (!next || found < next);
}

static void check_documented(void *ctx, const char *section, const char *key)
{
    doc_keys *d = ctx;
    size_t len = strlen(d->missing);
    if (!documented(d->text, section, key))
        snprintf(d->missing + len, sizeof d->missing - len, " [%s] %s", section, key);
}

/* Each row of the reference, parsed back as a key of its section (a value the parser will
 * refuse is fine: an unknown key is the error looked for). */
static void check_accepted(doc_keys *d)
{
    char section[64] = "";
    for (const char *line = d->text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        char key[64];
        if (sscanf(line, "## [%63[a-z_]]", section) == 1 || sscanf(line, "| `%63[a-z_0-9]` |", key) != 1 ||
            !section[0])
            continue;
        job_config cfg;
        char set[160], err[600] = "";
        snprintf(set, sizeof set, "%s.%s=0", section, key);
        const char *sets[] = {set, NULL};
        int is_layer = 0;
        for (int t = 0; t < LAYER_TYPES; t++)
            is_layer |= !strcmp(layer_name((layer_type)t), section);
        if (is_layer)   /* a layer's key: through a job that has that layer first */
            snprintf(set, sizeof set, "layer1.%s=0", key);
        char job[600];
        snprintf(job, sizeof job, "[data]\nformat = idx\ntrain_images = a\ntrain_labels = b\n[%s]\n"
                 "[softmax_xent]\n", is_layer ? section : "flatten");
        config_parse(&cfg, "reference.cfg", job, strlen(job), sets, err, sizeof err);
        size_t len = strlen(d->unknown);
        if (strstr(err, "unknown key") || strstr(err, "no key") || strstr(err, "unknown section"))
            snprintf(d->unknown + len, sizeof d->unknown - len, " [%s] %s (%s)", section, key, err);
    }
}

/* The job-file reference lists every key the parser accepts, each in its section's table, and
 * no key the parser would refuse as unknown. */
TEST(config_reference_documents_every_key_and_only_those)
{
    static doc_keys d;
    test_read_text("docs/job-file.md", d.text, sizeof d.text);
    CHECKF(d.text[0], "docs/job-file.md cannot be read (tests run from the repository's root)");
    config_each_key(check_documented, &d);
    check_accepted(&d);
    CHECKF(!d.missing[0], "docs/job-file.md lacks:%s", d.missing);
    CHECKF(!d.unknown[0], "docs/job-file.md has keys the parser does not know:%s", d.unknown);
}
