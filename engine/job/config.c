#include "engine/job/config.h"

#include "common/input_file.h"
#include "common/text.h"
#include "energy/account.h"
#include "energy/grid_trace.h"
#include "energy/power_model.h"
#include "engine/model/layer.h"
#include "engine/job/policy_name.h"
#include "engine/job/participation_name.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JOB(f) offsetof(job_config, f)

static const key_spec job_keys[] = {
    {"epochs", V_INT, JOB(epochs), 1, 1e6},
    {"batch", V_INT, JOB(batch), 1, 1 << 20},
    {"seed", V_U64, JOB(seed), 0, 0},
    {"output", V_PATH, JOB(output), 0, 0},
    {"log_every", V_INT, JOB(log_every), 0, 1 << 30},
    {"deadline", V_TEXT, JOB(deadline_text), 0, 0},
    {"postpone", V_TEXT, JOB(postpone_text), 0, 0},
    {NULL, 0, 0, 0, 0}};
static const key_spec data_keys[] = {
    {"format", V_FORMAT, JOB(format), 0, 0},
    {"train_images", V_PATH, JOB(train_images), 0, 0},
    {"train_labels", V_PATH, JOB(train_labels), 0, 0},
    {"test_images", V_PATH, JOB(test_images), 0, 0},
    {"test_labels", V_PATH, JOB(test_labels), 0, 0},
    {"train_files", V_PATH, JOB(train_files), 0, 0},
    {"test_file", V_PATH, JOB(test_file), 0, 0},
    {"limit", V_LONG, JOB(limit), 0, 1e9},
    {"test_limit", V_LONG, JOB(test_limit), 0, 1e9},
    {"resize", V_HXW, JOB(resize_h), 0, 0},
    {"channels", V_INT, JOB(channels), 1, 64},
    {"classes", V_TEXT, JOB(data_classes), 0, 0},
    {"shard", V_TEXT, JOB(data_shard), 0, 0},
    {NULL, 0, 0, 0, 0}};
static const key_spec optimizer_keys[] = {
    {"type", V_OPTIMIZER, 0, 0, 0},
    {"lr", V_FLOAT, JOB(lr), 0, 1e3},
    {"momentum", V_FLOAT, JOB(momentum), 0, 1},
    {"weight_decay", V_FLOAT, JOB(weight_decay), 0, 1},
    {NULL, 0, 0, 0, 0}};
static const key_spec execution_keys[] = {
    {"workers", V_INT, JOB(workers), 0, CONFIG_MAX_WORKERS},
    {"grain", V_GRAIN, JOB(grain), 1, 1 << 20},
    {"filter_groups", V_GRAIN, JOB(filter_groups), 1, 4},
    {"fuse", V_FUSE, JOB(fuse), 0, 0},
    {"devices", V_DEVICES, JOB(devices), 0, 0},
    {"device", V_TEXT, JOB(device_filter), 0, 0},
    {"deterministic", V_ONOFF, JOB(deterministic), 0, 0},
    {"slowdown", V_FLOAT, JOB(slowdown), 1, 100},
    {NULL, 0, 0, 0, 0}};
static const key_spec energy_keys[] = {
    {"rate_hz", V_FLOAT, JOB(energy_rate_hz), 1, 1000},
    {"carbon_g_per_kwh", V_FLOAT, JOB(carbon_g_per_kwh), 0, 5000},
    {"carbon_file", V_PATH, JOB(carbon_file), 0, 0},
    {"carbon_trace", V_PATH, JOB(carbon_trace), 0, 0},
    {"renewable_trace", V_PATH, JOB(renewable_trace), 0, 0},
    {"trace_start", V_TEXT, JOB(trace_start_text), 0, 0},
    {"trace_speed", V_FLOAT, JOB(trace_speed), 1e-3, 1e7},
    {"baseline_seconds", V_FLOAT, JOB(baseline_seconds), 0, 3600},
    {"baseline_watts", V_FLOAT, JOB(baseline_watts), 0, 1e6},
    {"model_idle_watts", V_FLOAT, JOB(model_idle_watts), 0, 1e5},
    {"model_core_watts", V_FLOAT, JOB(model_core_watts), 0, 1e4},
    {"power_profile", V_PROFILE, JOB(power_profile), 0, 1e5},
    {NULL, 0, 0, 0, 0}};

static const key_spec placement_keys[] = {
    {"policy", V_POLICY, JOB(policy), 0, 0},
    {"power_budget_watts", V_FLOAT, JOB(power_budget_watts), 0, 1e6},
    {"node_power_budget_watts", V_FLOAT, JOB(node_power_budget_watts), 0, 1e6},
    {"all_nodes", V_ONOFF, JOB(all_nodes), 0, 0},
    {"max_slowdown", V_FLOAT, JOB(max_slowdown), 0, 100},
    {"window_seconds", V_FLOAT, JOB(window_seconds), 0.05, 600},
    {"operating_point", V_TEXT, JOB(operating_point_text), 0, 0},
    {"participation", V_TEXT, JOB(participation_name), 0, 0},
    {"green_g_per_kwh", V_FLOAT, JOB(green_g_per_kwh), 0, 5000},
    {"budget_g", V_FLOAT, JOB(budget_g), 0, 1e12},
    {"random_share", V_FLOAT, JOB(random_share), 0.01, 1},
    {0},
};
static const key_spec cluster_keys[] = {
    {"mode", V_TEXT, JOB(cluster_mode_name), 0, 0},
    {"sync_every", V_INT, JOB(sync_every), 0, 1 << 20},
    {"compress", V_ONOFF, JOB(compress), 0, 0},
    {"overlap", V_ONOFF, JOB(overlap), 0, 0},
    {"centered_clip", V_ONOFF, JOB(centered_clip), 0, 0},
    {0},
};
static const key_spec gossip_keys[] = {
    {"topology", V_TEXT, JOB(gossip_topology_name), 0, 0},
    {"neighbours", V_INT, JOB(gossip_neighbours), 1, CONFIG_MAX_PEERS - 1},
    {"every", V_INT, JOB(gossip_every), 1, 1 << 20},
    {"participation", V_FLOAT, JOB(gossip_participation), 0.01, 1},
    {"peers", V_INT, JOB(gossip_peers), 0, CONFIG_MAX_PEERS},
    {0},
};

/* The sections that are not layers; a layer section's keys come from its layer type. */
typedef struct section_spec {
    const char *name;
    const key_spec *keys;
} section_spec;

static const section_spec sections[] = {
    {"job", job_keys}, {"data", data_keys}, {"optimizer", optimizer_keys},
    {"execution", execution_keys}, {"energy", energy_keys}, {"placement", placement_keys},
    {"cluster", cluster_keys}, {"gossip", gossip_keys},
};
enum { NSECTIONS = sizeof sections / sizeof sections[0] };

typedef struct parser {
    job_config *cfg;
    char *err;
    size_t errlen;
    char where[CONFIG_PATH + 64];   /* "file:line" or "--set ..." */
    int line;
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

static void list_sections(char *out, size_t n)
{
    out[0] = 0;
    for (int i = 0; i < NSECTIONS; i++)
        snprintf(out + strlen(out), n - strlen(out), "%s, ", sections[i].name);
    for (int t = 0; t < LAYER_TYPES; t++)
        snprintf(out + strlen(out), n - strlen(out), "%s%s", layer_name((layer_type)t),
                 t + 1 < LAYER_TYPES ? ", " : "");
}

static int parse_whole(parser *p, const char *section, const key_spec *k, const char *value,
                       long *out)
{
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (end == value || *end || errno || v < k->lo || v > k->hi)
        return fail(p, "[%s] %s = '%s': expected %sa whole number from %.0f to %.0f", section,
                    k->name, value, k->kind == V_GRAIN ? "'auto' or " : "", k->lo, k->hi);
    *out = v;
    return 0;
}

/* Parses value into the field described by k (base: job_config or layer_config). */
static int set_value(parser *p, const char *section, const key_spec *k, void *base,
                     const char *value)
{
    void *field = (char *)base + k->offset;
    char *end;
    long v;
    errno = 0;
    switch (k->kind) {
    case V_GRAIN:
        if (!strcmp(value, "auto")) {
            *(int *)field = 0;
            return 0;
        }
        /* fall through */
    case V_INT:
        if (parse_whole(p, section, k, value, &v))
            return -1;
        *(int *)field = (int)v;
        return 0;
    case V_LONG:
        if (parse_whole(p, section, k, value, &v))
            return -1;
        *(long *)field = v;
        return 0;
    case V_U64: {
        unsigned long long u = strtoull(value, &end, 10);
        if (end == value || *end || errno || value[0] == '-')
            return fail(p, "[%s] %s = '%s': expected a non-negative whole number", section,
                        k->name, value);
        *(unsigned long long *)field = u;
        return 0;
    }
    case V_FLOAT: {
        double d = strtod(value, &end);
        if (end == value || *end || errno || !isfinite(d) || d < k->lo || d > k->hi)
            return fail(p, "[%s] %s = '%s': expected a number from %g to %g", section, k->name,
                        value, k->lo, k->hi);
        *(float *)field = (float)d;
        return 0;
    }
    case V_PATH: {
        size_t cap = k->offset == JOB(train_files) ? CONFIG_PATH * 2 : CONFIG_PATH;
        if (!*value || strlen(value) >= cap)
            return fail(p, "[%s] %s: expected a path of 1 to %zu characters", section, k->name,
                        cap - 1);
        snprintf(field, cap, "%s", value);
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
            return fail(p, "[%s] resize = '%s': expected HEIGHTxWIDTH from 1x1 to 16384x16384, "
                        "e.g. 62x84", section, value);
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
    case V_DEVICES: {
        int devices = config_devices(value);
        if (devices < 0)
            return fail(p, "[%s] %s = '%s': expected %s", section, k->name, value, CONFIG_DEVICES);
        *(int *)field = devices;
        return 0;
    }
    case V_TEXT:
        if (strlen(value) >= sizeof p->cfg->device_filter)
            return fail(p, "[%s] %s: at most %zu characters", section, k->name,
                        sizeof p->cfg->device_filter - 1);
        snprintf(field, sizeof p->cfg->device_filter, "%s", value);
        return 0;
    case V_POLICY: {
        placement_policy pp;
        if (policy_parse(value, &pp))
            return fail(p, "[%s] %s = '%s': expected time, energy, edp or carbon", section,
                        k->name, value);
        *(int *)field = (int)pp;
        return 0;
    }
    case V_PROFILE: {
        float *w = field;
        double d[3];
        if (power_model_profile_parse(value, k->hi, d))
            return fail(p, "[%s] %s = '%s': expected IDLE, ONE, ALL in watts (idle, one core "
                        "busy, all cores busy), rising, e.g. 10, 25, 65", section, k->name, value);
        w[0] = (float)d[0], w[1] = (float)d[1], w[2] = (float)d[2];
        return 0;
    }
    case V_ONOFF:
        if (strcmp(value, "on") && strcmp(value, "off"))
            return fail(p, "[%s] %s = '%s': expected on or off", section, k->name, value);
        *(int *)field = !strcmp(value, "on");
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

/* Cuts a comment off the line: '#' or ';' at its start or after white space, outside quotes. */
static void strip_comment(char *s)
{
    int quoted = 0;
    for (char *c = s; *c; c++) {
        if (*c == '"')
            quoted = !quoted;
        else if (!quoted && (*c == '#' || *c == ';') &&
                 (c == s || isspace((unsigned char)c[-1]))) {
            *c = 0;
            return;
        }
    }
}

/* A value in double quotes is taken as it is, without them. */
static int unquote(parser *p, char **value)
{
    char *v = *value;
    if (*v != '"')
        return strchr(v, '"') ? fail(p, "a '\"' inside a value: quote the whole value") : 0;
    size_t n = strlen(v);
    if (n < 2 || v[n - 1] != '"' || memchr(v + 1, '"', n - 2))
        return fail(p, "unterminated or misplaced '\"' in the value");
    v[n - 1] = 0;
    *value = v + 1;
    return 0;
}

static void set_defaults(job_config *cfg, const char *path)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->path, sizeof cfg->path, "%s", path);
    cfg->epochs = 5;
    cfg->batch = 32;
    cfg->seed = 1;
    cfg->lr = 0.01f;
    cfg->slowdown = 1;
    cfg->energy_rate_hz = 20;
    cfg->carbon_g_per_kwh = (float)CARBON_G_PER_KWH;
    cfg->baseline_seconds = 1;
    cfg->baseline_watts = -1;
    cfg->model_idle_watts = (float)MODEL_IDLE_W;
    cfg->model_core_watts = (float)MODEL_CORE_W;
    cfg->policy = -1;
    cfg->max_slowdown = -1;
    cfg->window_seconds = 0.5f;
    cfg->gossip_every = 10;
    cfg->gossip_participation = 1;
    cfg->trace_speed = 1;
    cfg->green_g_per_kwh = 100;
    cfg->random_share = 0.5f;
    /* output: runs/<file name without .cfg> */
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int len = (int)strcspn(base, ".");
    snprintf(cfg->output, sizeof cfg->output, "runs/%.*s", len > 0 ? len : 3, len > 0 ? base : "job");
}

/* The section being read: a non-layer one (index into sections) or the last layer. */
typedef struct current { int section; const layer_class *layer; } current;

static int start_section(parser *p, char *s, current *cur, unsigned *seen)
{
    job_config *cfg = p->cfg;
    char *close = strchr(s, ']');
    if (!close || *text_trim(close + 1))
        return fail(p, "expected [section]");
    *close = 0;
    char *name = text_trim(s + 1);
    *cur = (current){-1, layer_class_named(name)};
    for (int i = 0; i < NSECTIONS; i++)
        if (!strcmp(sections[i].name, name))
            cur->section = i;
    if (cur->section < 0 && !cur->layer) {
        char known[256];
        list_sections(known, sizeof known);
        return fail(p, "unknown section [%s] (sections: %s)", name, known);
    }
    if (cur->layer) {
        if (cfg->nlayers == CONFIG_MAX_LAYERS)
            return fail(p, "more than %d layers", CONFIG_MAX_LAYERS);
        layer_config *l = &cfg->layers[cfg->nlayers++];
        *l = (layer_config){.type = cur->layer->type, .line = p->line};
        cur->layer->defaults(l);
        return 0;
    }
    if (*seen & (1u << cur->section))
        return fail(p, "section [%s] appears twice", name);
    *seen |= 1u << cur->section;
    return 0;
}

static int parse_line(parser *p, char *line, current *cur, unsigned *seen,
                      unsigned long long *seen_keys)
{
    strip_comment(line);
    char *s = text_trim(line);
    if (!*s)
        return 0;
    if (*s == '[') {
        *seen_keys = 0;
        return start_section(p, s, cur, seen);
    }
    char *eq = strchr(s, '=');
    if (!eq)
        return fail(p, "expected 'key = value' or [section], got '%s'", s);
    *eq = 0;
    char *key = text_trim(s), *value = text_trim(eq + 1);
    if (cur->section < 0 && !cur->layer)
        return fail(p, "'%s' comes before any [section]", key);
    const char *sname = cur->layer ? cur->layer->name : sections[cur->section].name;
    const key_spec *keys = cur->layer ? cur->layer->keys : sections[cur->section].keys;
    const key_spec *k = find_key(keys, key);
    if (!k) {
        char known[256];
        list_keys(keys, known, sizeof known);
        return fail(p, "[%s] has no key '%s' (keys: %s)", sname, key, known);
    }
    unsigned long long bit = 1ull << (k - keys);
    if (*seen_keys & bit)
        return fail(p, "[%s] %s is set twice", sname, key);
    *seen_keys |= bit;
    if (unquote(p, &value))
        return -1;
    void *base = cur->layer ? (void *)&p->cfg->layers[p->cfg->nlayers - 1] : (void *)p->cfg;
    return set_value(p, sname, k, base, value);
}

static int parse_text(parser *p, const char *text, size_t len)
{
    job_config *cfg = p->cfg;
    current cur = {-1, NULL};
    unsigned seen = 0;
    unsigned long long seen_keys = 0;   /* keys set in the current section */
    char line[4096];
    size_t at = 0;
    for (int lineno = 1; at < len; lineno++) {
        snprintf(p->where, sizeof p->where, "%s:%d", cfg->path, lineno);
        p->line = lineno;
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = (nl ? (size_t)(nl - text) : len) - at;
        if (n >= sizeof line)
            return fail(p, "line longer than %zu characters", sizeof line - 1);
        if (memchr(text + at, 0, n))
            return fail(p, "a NUL byte: this is not a text file");
        memcpy(line, text + at, n);
        line[n] = 0;
        at += n + 1;
        if (parse_line(p, line, &cur, &seen, &seen_keys))
            return -1;
    }
    return 0;
}

/* "section.key=value": a [job], [data], [optimizer], [execution] or [energy] key, or layerN.key for the
 * N-th layer (from 1). */
static int apply_override(parser *p, const char *o)
{
    snprintf(p->where, sizeof p->where, "--set %.*s", CONFIG_PATH, o);
    const char *dot = strchr(o, '.'), *eq = strchr(o, '=');
    if (!dot || !eq || dot > eq)
        return fail(p, "expected section.key=value");
    char section[64], key[64];
    snprintf(section, sizeof section, "%.*s", (int)(dot - o), o);
    snprintf(key, sizeof key, "%.*s", (int)(eq - dot - 1), dot + 1);
    char value[CONFIG_PATH * 2];
    if (strlen(eq + 1) >= sizeof value)
        return fail(p, "the value is longer than %zu characters", sizeof value - 1);
    snprintf(value, sizeof value, "%s", eq + 1);
    char *v = text_trim(value);
    int n;
    char extra;
    if (sscanf(section, "layer%d%c", &n, &extra) == 1) {
        if (n < 1 || n > p->cfg->nlayers)
            return fail(p, "there is no layer %d (the job has %d)", n, p->cfg->nlayers);
        layer_config *l = &p->cfg->layers[n - 1];
        const layer_class *c = layer_class_of(l->type);
        const key_spec *k = find_key(c->keys, key);
        if (!k)
            return fail(p, "layer %d is [%s], which has no key '%s'", n, c->name, key);
        return set_value(p, c->name, k, l, v);
    }
    for (int i = 0; i < NSECTIONS; i++)
        if (!strcmp(sections[i].name, section)) {
            const key_spec *k = find_key(sections[i].keys, key);
            if (!k) {
                char known[512];
                list_keys(sections[i].keys, known, sizeof known);
                return fail(p, "[%s] has no key '%s' (keys: %s)", section, key, known);
            }
            return set_value(p, section, k, p->cfg, v);
        }
    char known[256] = "";
    for (int i = 0; i < NSECTIONS; i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s, ", sections[i].name);
    return fail(p, "no section '%s' to set (%slayerN)", section, known);
}

/* [cluster] mode by name (sync, average, gossip), consistent with sync_every, and [gossip]. */
static int check_cluster_mode(parser *p)
{
    job_config *cfg = p->cfg;
    const char *name = cfg->cluster_mode_name;
    if (!name[0])
        cfg->cluster_mode = cfg->sync_every ? CLUSTER_AVERAGE : CLUSTER_SYNC;
    else if ((cfg->cluster_mode = config_cluster_mode(name)) < 0)
        return fail(p, "[cluster] mode = '%s': expected sync, average or gossip", name);
    if (cfg->cluster_mode == CLUSTER_SYNC && cfg->sync_every)
        return fail(p, "[cluster] mode = sync with sync_every = %d: sync_every is periodic "
                    "averaging's (mode = average)", cfg->sync_every);
    if (cfg->cluster_mode == CLUSTER_AVERAGE && !cfg->sync_every)
        return fail(p, "[cluster] mode = average needs sync_every = K (local steps between averages)");
    if (cfg->cluster_mode == CLUSTER_GOSSIP && (cfg->sync_every || cfg->compress || cfg->overlap ||
                                                cfg->centered_clip))
        return fail(p, "[cluster] mode = gossip takes its settings from [gossip] (every, topology, "
                    "neighbours, participation, peers): sync_every, compress, overlap and "
                    "centered_clip are the star's");
    const char *topo = cfg->gossip_topology_name[0] ? cfg->gossip_topology_name : "exponential";
    if ((cfg->gossip_topology = config_gossip_topology(topo)) < 0)
        return fail(p, "[gossip] topology = '%s': expected ring, exponential, random or full", topo);
    if (!cfg->gossip_neighbours)
        cfg->gossip_neighbours = cfg->gossip_topology == GOSSIP_RING ? 2 : 1;
    return 0;
}

/* "36h", "90m", "2d", "5400s" or "5400": seconds; -1 when it is none of them. */
static double duration_s(const char *text)
{
    char *end;
    double v = strtod(text, &end);
    double unit = !*end || !strcmp(end, "s") ? 1 : !strcmp(end, "m") ? 60 : !strcmp(end, "h") ? 3600
                : !strcmp(end, "d") ? 86400 : -1;
    return end != text && unit > 0 && v > 0 && v < 1e9 ? v * unit : -1;
}

/* Where and when to train: the traces' clock, [job] deadline and postpone, [placement]
 * participation and what it needs. */
static int check_green(parser *p)
{
    job_config *cfg = p->cfg;
    cfg->trace_start = -1;
    if (cfg->trace_start_text[0] && (cfg->trace_start = grid_trace_time(cfg->trace_start_text)) < 0)
        return fail(p, "[energy] trace_start = '%s': expected YYYY-MM-DD HH:MM[:SS] (UTC)",
                    cfg->trace_start_text);
    if ((cfg->carbon_trace[0] || cfg->renewable_trace[0]) && cfg->carbon_file[0])
        return fail(p, "[energy] carbon_file and carbon_trace/renewable_trace: one source of the "
                    "grid's intensity, not both");
    cfg->deadline_s = cfg->deadline_at = -1;
    const char *d = cfg->deadline_text;
    if (d[0] && (cfg->deadline_at = grid_trace_time(d)) < 0 && (cfg->deadline_s = duration_s(d)) < 0)
        return fail(p, "[job] deadline = '%s': expected a date (YYYY-MM-DD HH:MM, UTC, trace time) "
                    "or a duration from the start (36h, 90m, 2d, 5400s)", d);
    const char *pp = cfg->postpone_text;
    if (!pp[0] || !strcmp(pp, "off"))
        cfg->postpone = POSTPONE_OFF;
    else if (!strcmp(pp, "on"))
        cfg->postpone = POSTPONE_WAIT;
    else
        return fail(p, "[job] postpone = '%s': expected off or on (wait, idle, for greener "
                    "energy while the deadline allows)", pp);
    if (cfg->postpone && !d[0])
        return fail(p, "[job] postpone = %s needs a deadline: how long the job may wait", pp);
    const char *name = cfg->participation_name[0] ? cfg->participation_name : "always";
    if ((cfg->participation = participation_parse(name)) < 0)
        return fail(p, "[placement] participation = '%s': expected %s", name, PARTICIPATION_NAMES);
    if (cfg->participation == PARTICIPATION_BACKUP && (cfg->cluster_mode != CLUSTER_AVERAGE || cfg->overlap))
        return fail(p, "[placement] participation = backup needs [cluster] mode = average without "
                    "overlap: synchronous training would give up one machine's weights by not "
                    "waiting for a node's gradients (not done), and gossip waits for no one past "
                    "its deadline already");
    char why[200];
    if (op_setting_parse(cfg->operating_point_text, &cfg->operating_point, why, sizeof why))
        return fail(p, "[placement] operating_point = '%s': %s", cfg->operating_point_text, why);
    if (cfg->participation == PARTICIPATION_BUDGET && !(cfg->budget_g > 0))
        return fail(p, "[placement] participation = budget needs budget_g (grams of CO2e for the "
                    "whole job)");
    return 0;
}

/* [data] classes (a list of labels) and shard (I/N, or auto under gossip). */
static int check_data_subset(parser *p)
{
    job_config *cfg = p->cfg;
    if (cfg->data_classes[0] && config_classes(cfg->data_classes, NULL) < 0)
        return fail(p, "[data] classes = '%s': expected labels from 0 to 255, comma-separated, "
                    "e.g. 0,3,7", cfg->data_classes);
    cfg->shard_count = 0;
    if (!cfg->data_shard[0])
        return 0;
    if (!strcmp(cfg->data_shard, "auto")) {
        if (cfg->cluster_mode != CLUSTER_GOSSIP || !cfg->gossip_peers)
            return fail(p, "[data] shard = auto needs [cluster] mode = gossip and [gossip] peers = "
                        "N (the peers that share the data, counted at the start)");
        cfg->shard_index = -1, cfg->shard_count = cfg->gossip_peers;
        return 0;
    }
    int i, n, used = 0;
    if (sscanf(cfg->data_shard, "%d/%d%n", &i, &n, &used) != 2 || cfg->data_shard[used] || n < 1 ||
        n > 4096 || i < 0 || i >= n)
        return fail(p, "[data] shard = '%s': expected I/N (shard I of N, 0 <= I < N <= 4096) or "
                    "auto", cfg->data_shard);
    cfg->shard_index = i, cfg->shard_count = n;
    return 0;
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
    if (check_cluster_mode(p) || check_data_subset(p) || check_green(p))
        return -1;
    if ((cfg->compress || cfg->overlap || cfg->centered_clip) && !cfg->sync_every)
        return fail(p, "[cluster] %s = on needs sync_every > 0: synchronous training sends whole "
                    "gradients, so that its weights stay those of one machine",
                    cfg->compress ? "compress" : cfg->overlap ? "overlap" : "centered_clip");
    if (!cfg->nlayers)
        return fail(p, "no layers: add [conv], [dense], ... and end with [softmax_xent]");
    for (int i = 0; i < cfg->nlayers; i++) {
        layer_config *l = &cfg->layers[i];
        snprintf(p->where, sizeof p->where, "%s:%d", cfg->path, l->line);
        const char *missing = layer_class_of(l->type)->complete(l);
        if (missing)
            return fail(p, "%s", missing);
    }
    return 0;
}

int config_parse(job_config *cfg, const char *path, const char *text, size_t len,
                 const char *const *overrides, char *err, size_t errlen)
{
    parser p = {.cfg = cfg, .err = err, .errlen = errlen};
    set_defaults(cfg, path);
    int rc = parse_text(&p, text, len);
    for (int i = 0; !rc && overrides && overrides[i]; i++)
        rc = apply_override(&p, overrides[i]);
    return rc ? rc : check_complete(&p);
}

int config_cluster_mode(const char *name)
{
    static const char *const names[] = {"sync", "average", "gossip"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(name, names[i]))
            return i;
    return -1;
}

int config_gossip_topology(const char *name)
{
    for (int i = 0; i < GOSSIP_TOPOLOGIES; i++)
        if (!strcmp(name, config_gossip_topology_name(i)))
            return i;
    return -1;
}

const char *config_gossip_topology_name(int topology)
{
    static const char *const names[] = {"ring", "exponential", "random", "full"};
    return topology >= 0 && topology < GOSSIP_TOPOLOGIES ? names[topology] : "?";
}

int config_classes(const char *list, uint8_t keep[256])
{
    if (keep)
        memset(keep, 0, 256);
    int count = 0;
    for (const char *c = list; *c;) {
        char *end;
        errno = 0;
        long v = strtol(c, &end, 10);
        if (end == c || errno || v < 0 || v > 255 || (*end && *end != ','))
            return -1;
        if (keep)
            keep[v] = 1;
        count++;
        c = *end ? end + 1 : end;
        while (*c == ' ')
            c++;
    }
    return count ? count : -1;
}

int config_devices(const char *name)
{
    static const char *const names[] = {"auto", "cpu", "opencl", "cpu+opencl"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, names[i]))
            return i;
    return -1;
}

int config_load(job_config *cfg, const char *path, const char *const *overrides, char *err,
                size_t errlen)
{
    size_t len;
    char *text = input_read_all(path, CONFIG_MAX_BYTES, "job file", &len, err, errlen);
    if (!text)
        return -1;
    int rc = config_parse(cfg, path, text, len, overrides, err, errlen);
    free(text);
    return rc;
}

void config_each_key(void (*fn)(void *ctx, const char *section, const char *key), void *ctx)
{
    for (int i = 0; i < NSECTIONS; i++)
        for (const key_spec *k = sections[i].keys; k->name; k++)
            fn(ctx, sections[i].name, k->name);
    for (int t = 0; t < LAYER_TYPES; t++) {
        const layer_class *lc = layer_class_of((layer_type)t);
        for (const key_spec *k = lc->keys; k && k->name; k++)
            fn(ctx, lc->name, k->name);
    }
}
