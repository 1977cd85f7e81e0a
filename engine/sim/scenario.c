/* Reading a scenario (scenario.h): line by line, each key checked where it is read. */
#include "engine/sim/scenario.h"

#include "common/input_file.h"
#include "common/text.h"
#include "energy/carbon.h"
#include "energy/power_model.h"
#include "engine/job/dataset.h"
#include "engine/job/job_data.h"
#include "engine/job/participation_name.h"
#include "engine/job/policy_name.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define SCENARIO_MAX_BYTES (1 << 20)

enum { SEC_NONE, SEC_SKIP, SEC_SCENARIO, SEC_SITE, SEC_LINK, SEC_MACHINE };

typedef struct reader {
    sim_scenario *s;
    const char *path;
    int line, section;
    char *err;
    size_t errlen;
    char link_between[2][64];    /* the [link] being read (pass 1), until its end */
    sim_link link;
    int link_line;
    char dir[CONFIG_PATH];       /* the scenario's folder: relative paths are from it */
} reader;

static int fail(reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(reader *r, const char *fmt, ...)
{
    int n = snprintf(r->err, r->errlen, "%s:%d: ", r->path, r->line);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < r->errlen)
        vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static int number(reader *r, const char *key, const char *value, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(value, &end);
    if (end == value || *end || !isfinite(v) || v < lo || v > hi)
        return fail(r, "%s: '%s' is not a number from %g to %g", key, value, lo, hi);
    *out = v;
    return 0;
}

static int count(reader *r, const char *key, const char *value, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(value, &end, 10);
    if (end == value || *end || v < lo || v > hi)
        return fail(r, "%s: '%s' is not a whole number from %ld to %ld", key, value, lo, hi);
    *out = v;
    return 0;
}

/* A path relative to the scenario's folder (absolute ones as they are). */
static int resolve(reader *r, const char *value, char *out, size_t cap)
{
    int n = value[0] == '/' || !r->dir[0] ? snprintf(out, cap, "%s", value)
                                           : snprintf(out, cap, "%s/%s", r->dir, value);
    return n < 0 || (size_t)n >= cap ? fail(r, "the path '%s' is too long", value) : 0;
}

static int scenario_key(reader *r, const char *key, const char *value)
{
    sim_scenario *s = r->s;
    double v;
    long n;
    if (!strcmp(key, "job"))
        return resolve(r, value, s->job_path, sizeof s->job_path);
    if (!strcmp(key, "output"))
        return snprintf(s->output, sizeof s->output, "%s", value), 0;
    if (!strcmp(key, "mode"))
        return (s->mode = config_cluster_mode(value)) < 0 ? fail(r, "mode: '%s' is not sync, average or gossip", value) : 0;
    if (!strcmp(key, "topology"))
        return (s->topology = config_gossip_topology(value)) < 0
                   ? fail(r, "topology: '%s' is not ring, exponential, random or full", value) : 0;
    if (!strcmp(key, "policy")) {
        placement_policy p;
        if (policy_parse(value, &p))
            return fail(r, "policy: '%s' is not time, energy, edp or carbon", value);
        return s->policy = (int)p, 0;
    }
    if (!strcmp(key, "start"))
        return (s->start = grid_trace_time(value)) < 0 ? fail(r, "start: '%s' is not YYYY-MM-DD HH:MM (UTC)", value) : 0;
    if (!strcmp(key, "every"))
        return count(r, key, value, 1, 1000000, &n) ? -1 : (s->every = (int)n, 0);
    if (!strcmp(key, "neighbours"))
        return count(r, key, value, 1, 1000, &n) ? -1 : (s->neighbours = (int)n, 0);
    if (!strcmp(key, "epochs"))
        return count(r, key, value, 1, 100000, &n) ? -1 : (s->epochs = (int)n, 0);
    if (!strcmp(key, "samples"))
        return count(r, key, value, 1, 1000000000L, &s->samples);
    if (!strcmp(key, "input"))
        return sscanf(value, "%dx%dx%d", &s->channels, &s->height, &s->width) == 3 && s->channels > 0 &&
                       s->height > 0 && s->width > 0 && s->channels <= 4096 && s->height <= 65536 && s->width <= 65536
                   ? 0 : fail(r, "input: '%s' is not CxHxW (channels x height x width)", value);
    if (!strcmp(key, "classes"))
        return count(r, key, value, 2, 256, &n) ? -1 : (s->classes = (int)n, 0);
    if (!strcmp(key, "participation"))
        return number(r, key, value, 0.01, 1, &s->participation);
    if (!strcmp(key, "carbon"))
        return number(r, key, value, 0, CARBON_MAX, &s->carbon);
    if (!strcmp(key, "deadline_s"))
        return number(r, key, value, 0, 1e9, &s->deadline_s);
    if (!strcmp(key, "green_policy"))
        return (s->green_policy = participation_parse(value)) < 0
                   ? fail(r, "green_policy: '%s' is not %s", value, PARTICIPATION_NAMES) : 0;
    if (!strcmp(key, "green_g_per_kwh"))
        return number(r, key, value, 0, CARBON_MAX, &s->green_g_per_kwh);
    if (!strcmp(key, "budget_g"))
        return number(r, key, value, 0, 1e12, &s->budget_g);
    if (!strcmp(key, "random_share"))
        return number(r, key, value, 0.01, 1, &s->random_share);
    if (!strcmp(key, "green_deadline_s"))
        return number(r, key, value, 0, 1e9, &s->green_deadline_s);
    if (!strcmp(key, "latency_ms"))
        return number(r, key, value, 0, 1e6, &v) ? -1 : (s->default_link.latency_s = v / 1e3, 0);
    if (!strcmp(key, "bandwidth_mbit"))
        return number(r, key, value, 1e-3, 1e9, &v) ? -1 : (s->default_link.bits_per_s = v * 1e6, 0);
    if (!strcmp(key, "loss"))
        return number(r, key, value, 0, 0.5, &s->default_link.loss);
    return fail(r, "[scenario] has no key '%s' (keys: job, mode, every, topology, neighbours, "
                "participation, epochs, samples, input, classes, start, latency_ms, bandwidth_mbit, "
                "loss, carbon, policy, deadline_s, green_policy, green_g_per_kwh, budget_g, "
                "random_share, green_deadline_s, output)", key);
}

static int site_key(reader *r, const char *key, const char *value)
{
    sim_site *site = &r->s->sites[r->s->nsites - 1];
    if (!strcmp(key, "name"))
        return snprintf(site->name, sizeof site->name, "%s", value), 0;
    if (!strcmp(key, "carbon"))
        return number(r, key, value, 0, CARBON_MAX, &site->carbon);
    if (!strcmp(key, "carbon_trace")) {
        char path[CONFIG_PATH + 64], why[700];
        if (resolve(r, value, path, sizeof path))
            return -1;
        grid_trace_free(&site->trace);
        return grid_trace_load(&site->trace, path, GRID_CARBON, why, sizeof why) ? fail(r, "carbon_trace: %s", why) : 0;
    }
    if (!strcmp(key, "renewable_trace")) {
        char path[CONFIG_PATH + 64], why[700];
        if (resolve(r, value, path, sizeof path))
            return -1;
        grid_trace_free(&site->renewable);
        return grid_trace_load(&site->renewable, path, GRID_RENEWABLE_WATTS, why, sizeof why)
                   ? fail(r, "renewable_trace: %s", why) : 0;
    }
    return fail(r, "[site] has no key '%s' (keys: name, carbon, carbon_trace, renewable_trace)", key);
}

static int link_key(reader *r, const char *key, const char *value)
{
    double v;
    if (!strcmp(key, "between")) {
        int n = sscanf(value, "%63s %63s", r->link_between[0], r->link_between[1]);
        if (n < 1)
            return fail(r, "between: name one or two machines' groups");
        if (n == 1)
            snprintf(r->link_between[1], 64, "%s", r->link_between[0]);
        return 0;
    }
    if (!strcmp(key, "latency_ms"))
        return number(r, key, value, 0, 1e6, &v) ? -1 : (r->link.latency_s = v / 1e3, 0);
    if (!strcmp(key, "bandwidth_mbit"))
        return number(r, key, value, 1e-3, 1e9, &v) ? -1 : (r->link.bits_per_s = v * 1e6, 0);
    if (!strcmp(key, "loss"))
        return number(r, key, value, 0, 0.5, &r->link.loss);
    return fail(r, "[link] has no key '%s' (keys: between, latency_ms, bandwidth_mbit, loss)", key);
}

static int machine_source(reader *r, sim_group *g, const char *key, const char *value)
{
    char path[CONFIG_PATH + 64], why[1200];
    if (resolve(r, value, path, sizeof path))
        return -1;
    const char *dirs[1] = {path};
    if (!strcmp(key, "profile") ? profile_load(&g->profile, path, why, sizeof why)
                                : profile_calibrate(&g->profile, dirs, 1, why, sizeof why))
        return fail(r, "%s: %s", key, why);
    return 0;
}

static int machine_key(reader *r, const char *key, const char *value)
{
    sim_group *g = &r->s->groups[r->s->ngroups - 1];
    long n;
    double v;
    if (!strcmp(key, "name"))
        return snprintf(g->name, sizeof g->name, "%s", value), 0;
    if (!strcmp(key, "host"))
        return snprintf(g->host, sizeof g->host, "%s", value), 0;
    if (!strcmp(key, "profile") || !strcmp(key, "run"))
        return machine_source(r, g, key, value);
    if (!strcmp(key, "count"))
        return count(r, key, value, 1, SCENARIO_MAX_MACHINES, &n) ? -1 : (g->count = (int)n, 0);
    if (!strcmp(key, "workers"))
        return count(r, key, value, 1, 4096, &n) ? -1 : (g->workers = (int)n, 0);
    if (!strcmp(key, "cpus"))
        return count(r, key, value, 1, 4096, &n) ? -1 : (g->profile.cpus = (int)n, 0);
    if (!strcmp(key, "img_per_s")) {   /* a profile written inline: one speed at `workers` */
        if (number(r, key, value, 1e-6, 1e12, &v))
            return -1;
        g->profile.nspeeds = 1, g->profile.workers[0] = 0, g->profile.img_per_s[0] = v;
        return 0;
    }
    if (!strcmp(key, "power"))
        return power_model_profile_parse(value, 100000, g->profile.power)
                   ? fail(r, "power: '%s' is not IDLE, ONE, ALL watts, each at least the one before", value) : 0;
    if (!strcmp(key, "slowdown"))
        return number(r, key, value, 1, 1000, &g->slowdown);
    if (!strcmp(key, "join_at"))
        return number(r, key, value, 0, 1e9, &g->join_at);
    if (!strcmp(key, "leave_at"))
        return number(r, key, value, 0, 1e9, &g->leave_at);
    if (!strcmp(key, "fail_at"))
        return number(r, key, value, 0, 1e9, &g->fail_at);
    if (!strcmp(key, "site")) {
        for (int i = 0; i < r->s->nsites; i++)
            if (!strcmp(r->s->sites[i].name, value))
                return g->site = i, 0;
        return fail(r, "site: no [site] named '%s' before this line", value);
    }
    return fail(r, "[machine] has no key '%s' (keys: name, count, profile, run, img_per_s, power, "
                "cpus, workers, slowdown, site, host, join_at, leave_at, fail_at)", key);
}

static int group_of(const sim_scenario *s, const char *name)
{
    for (int i = 0; i < s->ngroups; i++)
        if (!strcmp(s->groups[i].name, name))
            return i;
    return -1;
}

/* The [link] just read, stored once the machines it names are known (at the end). */
static int end_link(reader *r)
{
    if (r->section != SEC_LINK)
        return 0;
    r->section = SEC_NONE;
    int a = group_of(r->s, r->link_between[0]), b = group_of(r->s, r->link_between[1]);
    int line = r->line;
    r->line = r->link_line;
    if (!r->link_between[0][0])
        return fail(r, "[link] needs between = NAME [NAME]");
    if (a < 0 || b < 0)
        return fail(r, "[link] between: no [machine] named '%s'", a < 0 ? r->link_between[0] : r->link_between[1]);
    r->line = line;
    r->s->links[a][b] = r->s->links[b][a] = r->link;
    r->s->linked[a][b] = r->s->linked[b][a] = 1;
    return 0;
}

static int start_section(reader *r, const char *name)
{
    sim_scenario *s = r->s;
    if (!strcmp(name, "scenario"))
        return r->section = SEC_SCENARIO, 0;
    if (!strcmp(name, "site")) {
        if (s->nsites == SCENARIO_MAX_SITES)
            return fail(r, "more than %d [site] sections", SCENARIO_MAX_SITES);
        s->sites[s->nsites++] = (sim_site){.carbon = -1};
        return r->section = SEC_SITE, 0;
    }
    if (!strcmp(name, "machine")) {
        if (s->ngroups == SCENARIO_MAX_GROUPS)
            return fail(r, "more than %d [machine] sections", SCENARIO_MAX_GROUPS);
        sim_group *g = &s->groups[s->ngroups++];
        *g = (sim_group){.count = 1, .line = r->line, .slowdown = 1, .site = -1, .leave_at = INFINITY,
                         .fail_at = INFINITY};
        g->profile.power[0] = -1;
        snprintf(g->name, sizeof g->name, "m%d", s->ngroups);
        return r->section = SEC_MACHINE, 0;
    }
    if (!strcmp(name, "link")) {
        memset(r->link_between, 0, sizeof r->link_between);
        r->link = s->default_link, r->link_line = r->line;
        return r->section = SEC_LINK, 0;
    }
    return fail(r, "unknown section [%s] (sections: scenario, site, link, machine)", name);
}

/* One line of the pass: pass 0 reads every section but [link], pass 1 only the [link]s (their
 * machines are known by then). */
static int read_line(reader *r, char *line, int pass)
{
    line[strcspn(line, "#;")] = 0;   /* comments (no value here holds '#' or ';') */
    line = text_trim(line);
    if (!*line)
        return 0;
    if (*line == '[') {
        char *end = strchr(line, ']');
        if (!end || *text_trim(end + 1))
            return fail(r, "a section header is [NAME]");
        *end = 0;
        if (end_link(r))
            return -1;
        int is_link = !strcmp(text_trim(line + 1), "link");
        if (pass != is_link)
            return r->section = SEC_SKIP, 0;
        return start_section(r, text_trim(line + 1));
    }
    if (r->section == SEC_SKIP)
        return 0;
    char *eq = strchr(line, '=');
    if (!eq)
        return fail(r, "not KEY = VALUE");
    *eq = 0;
    char *key = text_trim(line), *value = text_trim(eq + 1);
    switch (r->section) {
    case SEC_SCENARIO: return scenario_key(r, key, value);
    case SEC_SITE: return site_key(r, key, value);
    case SEC_LINK: return link_key(r, key, value);
    case SEC_MACHINE: return machine_key(r, key, value);
    default: return fail(r, "'%s' before any section", key);
    }
}

static int read_pass(reader *r, const char *text, int pass)
{
    char *copy = strdup(text);
    if (!copy)
        return fail(r, "out of memory");
    int rc = 0;
    r->line = 0, r->section = SEC_NONE;
    for (char *line = copy, *next; line && !rc; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        r->line++;
        rc = read_line(r, line, pass);
    }
    free(copy);
    return rc ? rc : end_link(r);
}

/* --set scenario.KEY=VALUE, after the file. */
static int apply_override(reader *r, const char *o)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", o);
    char *dot = strchr(buf, '.'), *eq = strchr(buf, '=');
    r->path = "--set", r->line = 0;
    if (!dot || !eq || dot > eq || strncmp(buf, "scenario.", 9))
        return fail(r, "'%s' is not scenario.KEY=VALUE", o);
    *eq = 0;
    return scenario_key(r, text_trim(dot + 1), text_trim(eq + 1));
}

/* Each group's profile complete, its workers set. */
static int check_machines(reader *r)
{
    sim_scenario *s = r->s;
    if (!s->ngroups)
        return r->line = 0, fail(r, "no [machine]");
    for (int i = 0; i < s->ngroups; i++) {
        sim_group *g = &s->groups[i];
        sim_profile *p = &g->profile;
        r->line = g->line;
        for (int j = 0; j < i; j++)
            if (!strcmp(s->groups[j].name, g->name))
                return fail(r, "two [machine]s named '%s'", g->name);
        if (!p->nspeeds || p->power[0] < 0)
            return fail(r, "[machine] '%s' needs profile, run, or img_per_s with power", g->name);
        if (p->workers[0] == 0) {   /* inline: measured at its workers, for this job */
            p->workers[0] = g->workers ? g->workers : 1;
            p->cpus = p->cpus ? p->cpus : p->workers[0];
            p->flops_per_sample = 0;    /* the job's (sim.c) */
            snprintf(p->energy, sizeof p->energy, "the scenario's figures (line %d)", g->line);
        }
        if (!g->workers)
            g->workers = profile_workers(p);
        if (g->fail_at < g->join_at || g->leave_at < g->join_at)
            return fail(r, "[machine] '%s' leaves or fails before it joins", g->name);
        s->machines += g->count;
    }
    if (s->machines > SCENARIO_MAX_MACHINES)
        return r->line = 0, fail(r, "more than %d machines", SCENARIO_MAX_MACHINES);
    return 0;
}

static void set_defaults(sim_scenario *s, const char *path)
{
    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s", path);
    snprintf(s->output, sizeof s->output, "simulated");
    s->mode = s->every = s->topology = s->neighbours = s->epochs = -1;
    s->participation = -1;
    s->carbon = -1;
    s->green_policy = -1;
    s->green_g_per_kwh = s->budget_g = s->random_share = s->green_deadline_s = -1;
    s->policy = -1;
    s->default_link = (sim_link){50e-6, 10e9, 0};   /* loopback-like: what runs here */
}

/* The job's model input and training set size (from the data, unless the scenario says). */
static int load_job(sim_scenario *s, char *err, size_t errlen)
{
    if (!s->job_path[0])
        return snprintf(err, errlen, "%s: [scenario] needs job = JOB.cfg", s->path), -1;
    if (config_load(&s->job, s->job_path, NULL, err, errlen))
        return -1;
    const job_config *j = &s->job;
    s->mode = s->mode >= 0 ? s->mode : j->cluster_mode;
    s->every = s->every > 0 ? s->every : s->mode == CLUSTER_GOSSIP ? j->gossip_every : j->sync_every > 0 ? j->sync_every : 1;
    s->topology = s->topology >= 0 ? s->topology : j->gossip_topology;
    s->neighbours = s->neighbours > 0 ? s->neighbours : j->gossip_neighbours;
    s->participation = s->participation > 0 ? s->participation : j->gossip_participation;
    s->epochs = s->epochs > 0 ? s->epochs : j->epochs;
    s->carbon = s->carbon >= 0 ? s->carbon : j->carbon_g_per_kwh;
    s->green_policy = s->green_policy >= 0 ? s->green_policy : j->participation;
    s->green_g_per_kwh = s->green_g_per_kwh >= 0 ? s->green_g_per_kwh : j->green_g_per_kwh;
    s->budget_g = s->budget_g >= 0 ? s->budget_g : j->budget_g;
    s->random_share = s->random_share > 0 ? s->random_share : j->random_share;
    s->green_deadline_s = s->green_deadline_s >= 0 ? s->green_deadline_s : j->deadline_s > 0 ? j->deadline_s : 0;
    if (s->samples > 0 && s->channels > 0 && s->classes > 0)
        return 0;
    dataset d;
    if (job_load_train(&s->job, &d, err, errlen))
        return -1;
    s->samples = s->samples > 0 ? s->samples : d.n;
    if (s->channels <= 0)
        s->channels = d.c, s->height = d.h, s->width = d.w;
    s->classes = s->classes > 0 ? s->classes : d.classes;
    dataset_free(&d);
    return 0;
}

int scenario_load(sim_scenario *s, const char *path, const char *const *overrides, char *err,
                  size_t errlen)
{
    set_defaults(s, path);
    reader r = {s, path, 0, SEC_NONE, err, errlen, {{0}}, {0, 0, 0}, 0, ""};
    const char *slash = strrchr(path, '/');
    if (slash)
        snprintf(r.dir, sizeof r.dir, "%.*s", (int)(slash - path), path);
    size_t len;
    char *text = input_read_all(path, SCENARIO_MAX_BYTES, "scenario", &len, err, errlen);
    if (!text)
        return -1;
    int rc = read_pass(&r, text, 0) || read_pass(&r, text, 1);
    free(text);
    for (int i = 0; !rc && overrides && overrides[i]; i++)
        rc = apply_override(&r, overrides[i]);
    r.path = path;
    rc = rc || check_machines(&r) || load_job(s, err, errlen);
    if (rc)
        scenario_free(s);
    return rc ? -1 : 0;
}

void scenario_free(sim_scenario *s)
{
    for (int i = 0; i < s->nsites; i++) {
        grid_trace_free(&s->sites[i].trace);
        grid_trace_free(&s->sites[i].renewable);
    }
    s->nsites = 0;
}

const sim_link *scenario_link(const sim_scenario *s, int a, int b)
{
    return s->linked[a][b] ? &s->links[a][b] : &s->default_link;
}
