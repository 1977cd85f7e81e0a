#include "engine/config.h"

#include "energy/account.h"
#include "energy/model.h"
#include "ops/conv.h"
#include "ops/layers.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum value_kind {
    V_INT, V_U64, V_FLOAT, V_PATH, V_FORMAT, V_HXW, V_GRAIN, V_OPTIMIZER, V_FUSE
} value_kind;

typedef struct key_spec {
    const char *name;
    value_kind kind;
    size_t offset;        /* into job_config, or into layer_config for layer sections */
    double lo, hi;        /* allowed range for numbers */
} key_spec;

typedef struct section_spec {
    const char *name;
    int is_layer;
    layer_type layer;
    const key_spec *keys;
} section_spec;

#define JOB(f) offsetof(job_config, f)
#define LAYER(f) offsetof(layer_config, f)

static const key_spec job_keys[] = {
    {"epochs", V_INT, JOB(epochs), 1, 1e6},
    {"batch", V_INT, JOB(batch), 1, 1 << 20},
    {"seed", V_U64, JOB(seed), 0, 0},
    {"output", V_PATH, JOB(output), 0, 0},
    {NULL, 0, 0, 0, 0}};
static const key_spec data_keys[] = {
    {"format", V_FORMAT, JOB(format), 0, 0},
    {"train_images", V_PATH, JOB(train_images), 0, 0},
    {"train_labels", V_PATH, JOB(train_labels), 0, 0},
    {"test_images", V_PATH, JOB(test_images), 0, 0},
    {"test_labels", V_PATH, JOB(test_labels), 0, 0},
    {"train_files", V_PATH, JOB(train_files), 0, 0},
    {"test_file", V_PATH, JOB(test_file), 0, 0},
    {"limit", V_INT, JOB(limit), 0, 1e9},
    {"test_limit", V_INT, JOB(test_limit), 0, 1e9},
    {"resize", V_HXW, JOB(resize_h), 0, 0},
    {"channels", V_INT, JOB(channels), 1, 64},
    {NULL, 0, 0, 0, 0}};
static const key_spec optimizer_keys[] = {
    {"type", V_OPTIMIZER, 0, 0, 0},
    {"lr", V_FLOAT, JOB(lr), 0, 1e3},
    {"momentum", V_FLOAT, JOB(momentum), 0, 1},
    {"weight_decay", V_FLOAT, JOB(weight_decay), 0, 1},
    {NULL, 0, 0, 0, 0}};
static const key_spec execution_keys[] = {
    {"workers", V_INT, JOB(workers), 0, 1024},
    {"grain", V_GRAIN, JOB(grain), 1, 1 << 20},
    {"filter_groups", V_GRAIN, JOB(filter_groups), 1, 4},
    {"fuse", V_FUSE, JOB(fuse), 0, 0},
    {NULL, 0, 0, 0, 0}};
static const key_spec energy_keys[] = {
    {"rate_hz", V_FLOAT, JOB(energy_rate_hz), 1, 1000},
    {"carbon_g_per_kwh", V_FLOAT, JOB(carbon_g_per_kwh), 0, 5000},
    {"baseline_seconds", V_FLOAT, JOB(baseline_seconds), 0, 3600},
    {"baseline_watts", V_FLOAT, JOB(baseline_watts), 0, 1e6},
    {"model_idle_watts", V_FLOAT, JOB(model_idle_watts), 0, 1e5},
    {"model_core_watts", V_FLOAT, JOB(model_core_watts), 0, 1e4},
    {NULL, 0, 0, 0, 0}};
static const key_spec conv_keys[] = {
    {"filters", V_INT, LAYER(filters), 1, 65536},
    {"size", V_INT, LAYER(size), 1, 64},
    {"stride", V_INT, LAYER(stride), 1, 64},
    {"padding", V_INT, LAYER(padding), 0, 64},
    {NULL, 0, 0, 0, 0}};
static const key_spec pool_keys[] = {
    {"size", V_INT, LAYER(size), 1, 64},
    {"stride", V_INT, LAYER(stride), 1, 64},
    {NULL, 0, 0, 0, 0}};
static const key_spec dense_keys[] = {
    {"outputs", V_INT, LAYER(outputs), 1, 1 << 24},
    {NULL, 0, 0, 0, 0}};
static const key_spec no_keys[] = {{NULL, 0, 0, 0, 0}};

static const section_spec sections[] = {
    {"job", 0, 0, job_keys},
    {"data", 0, 0, data_keys},
    {"optimizer", 0, 0, optimizer_keys},
    {"execution", 0, 0, execution_keys},
    {"energy", 0, 0, energy_keys},
    {"conv", 1, LAYER_CONV, conv_keys},
    {"relu", 1, LAYER_RELU, no_keys},
    {"maxpool", 1, LAYER_MAXPOOL, pool_keys},
    {"flatten", 1, LAYER_FLATTEN, no_keys},
    {"dense", 1, LAYER_DENSE, dense_keys},
    {"softmax_xent", 1, LAYER_SOFTMAX_XENT, no_keys},
};
enum { NSECTIONS = sizeof sections / sizeof sections[0] };

const char *layer_name(layer_type t)
{
    for (int i = 0; i < NSECTIONS; i++)
        if (sections[i].is_layer && sections[i].layer == t)
            return sections[i].name;
    return "?";
}

typedef struct parser {
    job_config *cfg;
    char *err;
    size_t errlen;
    char where[CONFIG_PATH + 64];   /* "file:line" or "--set ..." */
} parser;

static int fail(parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(parser *p, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(p->err, p->errlen, "%s: %s", p->where, msg);
    return -1;
}

static void list_keys(const key_spec *keys, char *out, size_t n)
{
    out[0] = 0;
    for (const key_spec *k = keys; k->name; k++)
        snprintf(out + strlen(out), n - strlen(out), "%s%s", k == keys ? "" : ", ", k->name);
    if (!keys->name)
        snprintf(out, n, "none");
}

/* Parses value into the field described by k (base: job_config or layer_config). */
static int set_value(parser *p, const char *section, const key_spec *k, void *base,
                     const char *value)
{
    char *end;
    errno = 0;
    switch (k->kind) {
    case V_INT:
    case V_GRAIN: {
        if (k->kind == V_GRAIN && !strcmp(value, "auto")) {
            *(int *)((char *)base + k->offset) = 0;
            return 0;
        }
        long v = strtol(value, &end, 10);
        if (end == value || *end || errno || v < k->lo || v > k->hi)
            return fail(p, "[%s] %s = '%s': expected %s%s from %.0f to %.0f", section, k->name,
                        value, k->kind == V_GRAIN ? "'auto' or " : "", "a whole number", k->lo,
                        k->hi);
        if (k->offset == JOB(limit) || k->offset == JOB(test_limit))
            *(long *)((char *)base + k->offset) = v;
        else
            *(int *)((char *)base + k->offset) = (int)v;
        return 0;
    }
    case V_U64: {
        unsigned long long v = strtoull(value, &end, 10);
        if (end == value || *end || errno || value[0] == '-')
            return fail(p, "[%s] %s = '%s': expected a non-negative whole number", section,
                        k->name, value);
        *(unsigned long long *)((char *)base + k->offset) = v;
        return 0;
    }
    case V_FLOAT: {
        double v = strtod(value, &end);
        if (end == value || *end || errno || !isfinite(v) || v < k->lo || v > k->hi)
            return fail(p, "[%s] %s = '%s': expected a number from %g to %g", section, k->name,
                        value, k->lo, k->hi);
        *(float *)((char *)base + k->offset) = (float)v;
        return 0;
    }
    case V_PATH: {
        size_t cap = k->offset == JOB(train_files) ? CONFIG_PATH * 2 : CONFIG_PATH;
        if (!*value || strlen(value) >= cap)
            return fail(p, "[%s] %s: expected a path of 1 to %zu characters", section, k->name,
                        cap - 1);
        snprintf((char *)base + k->offset, cap, "%s", value);
        return 0;
    }
    case V_FORMAT:
        if (!strcmp(value, "idx"))
            p->cfg->format = DATA_IDX;
        else if (!strcmp(value, "cifar10"))
            p->cfg->format = DATA_CIFAR10;
        else
            return fail(p, "[%s] format = '%s': expected idx or cifar10", section, value);
        return 0;
    case V_HXW: {
        int h, w, used = 0;
        if (sscanf(value, "%dx%d%n", &h, &w, &used) != 2 || value[used] || h < 1 || w < 1 ||
            h > 16384 || w > 16384)
            return fail(p, "[%s] resize = '%s': expected HEIGHTxWIDTH, e.g. 62x84", section, value);
        p->cfg->resize_h = h;
        p->cfg->resize_w = w;
        return 0;
    }
    case V_FUSE:
        if (strcmp(value, "auto") && strcmp(value, "on") && strcmp(value, "off"))
            return fail(p, "[%s] %s = '%s': expected auto, on or off", section, k->name, value);
        p->cfg->fuse = !strcmp(value, "on") ? 1 : !strcmp(value, "off") ? -1 : 0;
        return 0;
    case V_OPTIMIZER:
        if (strcmp(value, "sgd"))
            return fail(p, "[%s] type = '%s': only sgd is supported", section, value);
        return 0;
    }
    return fail(p, "internal: unknown value kind");
}

static const key_spec *find_key(const key_spec *keys, const char *name)
{
    for (const key_spec *k = keys; k->name; k++)
        if (!strcmp(k->name, name))
            return k;
    return NULL;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = 0;
    return s;
}

static void set_defaults(job_config *cfg, const char *path)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->path, sizeof cfg->path, "%s", path);
    cfg->epochs = 5;
    cfg->batch = 32;
    cfg->seed = 1;
    cfg->lr = 0.01f;
    cfg->energy_rate_hz = 20;
    cfg->carbon_g_per_kwh = (float)CARBON_G_PER_KWH;
    cfg->baseline_seconds = 1;
    cfg->baseline_watts = -1;
    cfg->model_idle_watts = (float)MODEL_IDLE_W;
    cfg->model_core_watts = (float)MODEL_CORE_W;
    /* output: runs/<file name without .cfg> */
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int len = (int)strcspn(base, ".");
    snprintf(cfg->output, sizeof cfg->output, "runs/%.*s", len > 0 ? len : 3, len > 0 ? base : "job");
}

static void layer_defaults(layer_config *l, layer_type t, int line)
{
    memset(l, 0, sizeof *l);
    l->type = t;
    l->line = line;
    l->size = t == LAYER_CONV ? 3 : 2;
    l->stride = t == LAYER_CONV ? 1 : 0;   /* pool: 0 means "same as size" */
}

static int parse_file(parser *p, FILE *f)
{
    job_config *cfg = p->cfg;
    char line[4096];
    int lineno = 0, current = -1;
    unsigned seen_sections = 0;
    unsigned long long seen_keys = 0;   /* keys set in the current section */
    while (fgets(line, sizeof line, f)) {
        lineno++;
        snprintf(p->where, sizeof p->where, "%s:%d", cfg->path, lineno);
        if (!strchr(line, '\n') && !feof(f))
            return fail(p, "line longer than %zu characters", sizeof line - 2);
        char *hash = strpbrk(line, "#;");
        if (hash)
            *hash = 0;
        char *s = trim(line);
        if (!*s)
            continue;
        if (*s == '[') {
            char *close = strchr(s, ']');
            if (!close || *trim(close + 1))
                return fail(p, "expected [section]");
            *close = 0;
            char *name = trim(s + 1);
            current = -1;
            for (int i = 0; i < NSECTIONS; i++)
                if (!strcmp(sections[i].name, name))
                    current = i;
            if (current < 0)
                return fail(p, "unknown section [%s] (sections: job, data, optimizer, execution, "
                               "energy, conv, relu, maxpool, flatten, dense, softmax_xent)", name);
            seen_keys = 0;
            if (sections[current].is_layer) {
                if (cfg->nlayers == CONFIG_MAX_LAYERS)
                    return fail(p, "more than %d layers", CONFIG_MAX_LAYERS);
                layer_defaults(&cfg->layers[cfg->nlayers++], sections[current].layer, lineno);
            } else {
                if (seen_sections & (1u << current))
                    return fail(p, "section [%s] appears twice", name);
                seen_sections |= 1u << current;
            }
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq)
            return fail(p, "expected 'key = value' or [section], got '%s'", s);
        *eq = 0;
        char *key = trim(s), *value = trim(eq + 1);
        if (current < 0)
            return fail(p, "'%s' comes before any [section]", key);
        const section_spec *sec = &sections[current];
        const key_spec *k = find_key(sec->keys, key);
        if (!k) {
            char known[256];
            list_keys(sec->keys, known, sizeof known);
            return fail(p, "[%s] has no key '%s' (keys: %s)", sec->name, key, known);
        }
        unsigned long long bit = 1ull << (k - sec->keys);
        if (seen_keys & bit)
            return fail(p, "[%s] %s is set twice", sec->name, key);
        seen_keys |= bit;
        void *base = sec->is_layer ? (void *)&cfg->layers[cfg->nlayers - 1] : (void *)cfg;
        if (set_value(p, sec->name, k, base, value))
            return -1;
    }
    if (ferror(f))
        return fail(p, "read error");
    return 0;
}

/* "section.key=value": a [job], [data], [optimizer], [execution] or [energy] key, or layerN.key for the
 * N-th layer (from 1). */
static int apply_override(parser *p, const char *o)
{
    snprintf(p->where, sizeof p->where, "--set %s", o);
    const char *dot = strchr(o, '.'), *eq = strchr(o, '=');
    if (!dot || !eq || dot > eq)
        return fail(p, "expected section.key=value");
    char section[64], key[64];
    snprintf(section, sizeof section, "%.*s", (int)(dot - o), o);
    snprintf(key, sizeof key, "%.*s", (int)(eq - dot - 1), dot + 1);
    char value[CONFIG_PATH * 2];
    snprintf(value, sizeof value, "%s", eq + 1);
    int n;
    if (sscanf(section, "layer%d", &n) == 1) {
        if (n < 1 || n > p->cfg->nlayers)
            return fail(p, "there is no layer %d (the job has %d)", n, p->cfg->nlayers);
        layer_config *l = &p->cfg->layers[n - 1];
        for (int i = 0; i < NSECTIONS; i++)
            if (sections[i].is_layer && sections[i].layer == l->type) {
                const key_spec *k = find_key(sections[i].keys, key);
                if (!k)
                    return fail(p, "layer %d is [%s], which has no key '%s'", n, sections[i].name, key);
                return set_value(p, sections[i].name, k, l, trim(value));
            }
    }
    for (int i = 0; i < NSECTIONS; i++)
        if (!sections[i].is_layer && !strcmp(sections[i].name, section)) {
            const key_spec *k = find_key(sections[i].keys, key);
            if (!k)
                return fail(p, "[%s] has no key '%s'", section, key);
            return set_value(p, section, k, p->cfg, trim(value));
        }
    return fail(p, "no section '%s' to set (job, data, optimizer, execution, energy, or layerN)", section);
}

static int check_complete(parser *p)
{
    job_config *cfg = p->cfg;
    snprintf(p->where, sizeof p->where, "%s", cfg->path);
    if (cfg->format == DATA_IDX && (!cfg->train_images[0] || !cfg->train_labels[0]))
        return fail(p, "[data] needs train_images and train_labels for format idx");
    if (cfg->format == DATA_CIFAR10 && !cfg->train_files[0])
        return fail(p, "[data] needs train_files for format cifar10");
    if (cfg->format == DATA_IDX && !cfg->test_images[0] != !cfg->test_labels[0])
        return fail(p, "[data] test_images and test_labels go together");
    if (!cfg->nlayers)
        return fail(p, "no layers: add [conv], [dense], ... and end with [softmax_xent]");
    for (int i = 0; i < cfg->nlayers; i++) {
        layer_config *l = &cfg->layers[i];
        snprintf(p->where, sizeof p->where, "%s:%d", cfg->path, l->line);
        if (l->type == LAYER_CONV && !l->filters)
            return fail(p, "[conv] needs filters");
        if (l->type == LAYER_DENSE && !l->outputs)
            return fail(p, "[dense] needs outputs");
        if (l->type == LAYER_MAXPOOL && !l->stride)
            l->stride = l->size;
    }
    return 0;
}

int config_load(job_config *cfg, const char *path, const char *const *overrides, char *err,
                size_t errlen)
{
    parser p = {.cfg = cfg, .err = err, .errlen = errlen};
    set_defaults(cfg, path);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    int rc = parse_file(&p, f);
    fclose(f);
    for (int i = 0; !rc && overrides && overrides[i]; i++)
        rc = apply_override(&p, overrides[i]);
    return rc ? rc : check_complete(&p);
}

int config_check_shapes(const job_config *cfg, int c, int h, int w, int classes, char *err,
                        size_t errlen)
{
    int flat = 0;   /* after flatten or dense: c holds the vector length */
    for (int i = 0; i < cfg->nlayers; i++) {
        const layer_config *l = &cfg->layers[i];
        const char *name = layer_name(l->type);
#define SHAPE_FAIL(...)                                                                       \
    do {                                                                                      \
        char m_[256];                                                                         \
        snprintf(m_, sizeof m_, __VA_ARGS__);                                                 \
        snprintf(err, errlen, "%s:%d: [%s] (layer %d): %s", cfg->path, l->line, name, i + 1, m_); \
        return -1;                                                                            \
    } while (0)
        switch (l->type) {
        case LAYER_CONV: {
            conv_geom g;
            if (flat)
                SHAPE_FAIL("a convolution cannot follow flatten or dense");
            if (conv_geom_init(&g, c, h, w, l->filters, l->size, l->size, l->stride, l->padding))
                SHAPE_FAIL("a %dx%d kernel with padding %d does not fit a %dx%d input", l->size,
                           l->size, l->padding, h, w);
            c = l->filters, h = g.oh, w = g.ow;
            break;
        }
        case LAYER_MAXPOOL: {
            pool_geom g;
            if (flat)
                SHAPE_FAIL("pooling cannot follow flatten or dense");
            if (pool_geom_init(&g, c, h, w, l->size, l->stride))
                SHAPE_FAIL("a %dx%d window does not fit a %dx%d input", l->size, l->size, h, w);
            h = g.oh, w = g.ow;
            break;
        }
        case LAYER_RELU:
            break;
        case LAYER_FLATTEN:
            if (!flat)
                c = c * h * w, h = w = 1, flat = 1;
            break;
        case LAYER_DENSE:
            if (!flat)
                SHAPE_FAIL("dense needs a flatten before it (input is %dx%dx%d)", c, h, w);
            c = l->outputs;
            break;
        case LAYER_SOFTMAX_XENT:
            if (i != cfg->nlayers - 1)
                SHAPE_FAIL("softmax_xent must be the last layer");
            if (i == 0 || cfg->layers[i - 1].type != LAYER_DENSE)
                SHAPE_FAIL("softmax_xent must follow a dense layer");
            if (c != classes)
                SHAPE_FAIL("the dense layer before it has %d outputs, the data has %d classes", c,
                           classes);
            break;
        }
#undef SHAPE_FAIL
    }
    if (cfg->layers[cfg->nlayers - 1].type != LAYER_SOFTMAX_XENT) {
        snprintf(err, errlen, "%s: the last layer must be [softmax_xent]", cfg->path);
        return -1;
    }
    return 0;
}
