#include "engine/placement/operating_point.h"

#include "common/json.h"
#include "engine/job/cache_dir.h"

#include <math.h>
#include <string.h>

static int state_file(char *out, size_t n, char *why, size_t whylen)
{
    char dir[300], host[128];
    if (cache_dir(dir, sizeof dir, why, whylen))
        return -1;
    cache_host_name(host, sizeof host);
    snprintf(out, n, "%.300s/operating-points-%.127s.state", dir, host);
    return 0;
}

int operating_point_recover(FILE *log)
{
    char file[SYSFS_PATH], why[600];
    int owner;
    if (state_file(file, sizeof file, why, sizeof why))
        return 0;   /* no cache folder: nothing can have been left there */
    if (limit_state_recover(file, &owner, log, why, sizeof why) >= 0)
        return 0;
    fprintf(log, "operating point: %s\n", why);
    return -1;
}

/* ---- the parts ---- */

/* A part's name as the setting names it: a limit's first word (nvidia0, package-0), cpufreq. */
static void part_name(const power_limit *l, char *out, size_t n)
{
    if (l->kind == POWER_LIMIT_CPUFREQ)
        snprintf(out, n, "cpufreq");
    else
        snprintf(out, n, "%.*s", (int)strcspn(l->name, " "), l->name);
}

static op_group *group_of(operating_point *op, const power_limit *l)
{
    char name[64];
    part_name(l, name, sizeof name);
    for (int g = 0; g < op->ngroups; g++)
        if (!strcmp(op->groups[g].name, name))
            return &op->groups[g];
    if (op->ngroups == OP_GROUPS)
        return NULL;
    op_group *g = &op->groups[op->ngroups++];
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    g->gpu = l->gpu, g->clock = l->kind == POWER_LIMIT_CPUFREQ;
    return g;
}

/* Says why a limit the setting names cannot be set here. */
static void say_unsettable(const operating_point *op, const op_setting *s, const power_limit *l)
{
    char part[64];
    double ignored;
    part_name(l, part, sizeof part);
    if (op_setting_for(s, part, l->gpu, l->kind == POWER_LIMIT_CPUFREQ, &ignored) != OP_OFF)
        fprintf(op->log, "operating point: %s cannot be set here, left as it is: %s\n", l->name,
                l->why);
}

/* The groups of settable limits, each with the mode the setting gives it. The clocks are
 * searched for `cpu = auto` only where no package limit can be set. */
static void make_groups(operating_point *op, const op_setting *s)
{
    int packages = 0;
    for (int i = 0; i < op->nlimits; i++) {
        const power_limit *l = &op->limits[i];
        if (!l->settable)
            say_unsettable(op, s, l);
        op_group *g = l->settable ? group_of(op, l) : NULL;
        if (!g || g->nknobs == POWER_LIMIT_MAX)
            continue;
        g->knob[g->nknobs++] = i;
        g->top = fmax(g->top, l->now);
        g->floor = fmax(g->floor, l->min);
        g->now = g->top;
        packages += l->kind == POWER_LIMIT_RAPL;
    }
    int clocks_named = 0;   /* asked for by name, not through cpu or every part */
    for (int k = 0; k < s->n; k++)
        clocks_named |= !strcmp(s->item[k].part, "cpufreq");
    for (int i = 0; i < op->ngroups; i++) {
        op_group *g = &op->groups[i];
        g->mode = op_setting_for(s, g->name, g->gpu, g->clock, &g->fixed);
        if (g->clock && g->mode == OP_AUTO && packages && !clocks_named)
            g->mode = OP_OFF;   /* the packages' limits are searched instead */
    }
}

static void record_change(operating_point *op, double t, int group, double value, const char *why)
{
    fprintf(op->log, "operating point: %s %g %s: %s\n", op->groups[group].name, value,
            power_limit_unit(op->limits[op->groups[group].knob[0]].kind), why);
    if (op->nchanges < OP_CHANGES) {
        op_change *c = &op->changes[op->nchanges++];
        *c = (op_change){t, group, value, ""};
        snprintf(c->why, sizeof c->why, "%s", why);
    }
    op->changes_total++;
}

/* Sets every limit of g to value (a searched value brought within each one's range; the job's
 * own refused outside it), its first value saved before. Returns 0, or -1 after saying why: g
 * is then left alone (OP_OFF). */
static int apply(operating_point *op, int group, double t, double value, const char *why)
{
    op_group *g = &op->groups[group];
    char err[600];
    for (int k = 0; k < g->nknobs; k++) {
        const power_limit *l = &op->limits[g->knob[k]];
        double v = g->mode == OP_VALUE ? value : fmin(fmax(value, l->min), l->max);
        if (limit_state_save(&op->state, l->kind, l->path, l->now, err, sizeof err) ||
            power_limit_set(l, v, err, sizeof err)) {
            fprintf(op->log, "operating point: %s left as it is: %s\n", g->name, err);
            g->mode = OP_OFF;
            return -1;
        }
    }
    g->now = value;
    record_change(op, t, group, value, why);
    return 0;
}

/* The next group to search after `after`, or -1. */
static int next_auto(const operating_point *op, int after)
{
    for (int g = after + 1; g < op->ngroups; g++)
        if (op->groups[g].mode == OP_AUTO)
            return g;
    return -1;
}

void operating_point_begin(operating_point *op, const job_config *cfg, const policy_limits *l,
                           FILE *log)
{
    memset(op, 0, sizeof *op);
    op->log = log, op->searching = op->last = -1;
    snprintf(op->note, sizeof op->note, "off: every limit as it is");
    if (!op_setting_any(&cfg->operating_point))
        return;
    op->nlimits = power_limit_probe(op->limits, POWER_LIMIT_MAX);
    make_groups(op, &cfg->operating_point);
    int wanted = 0;
    for (int g = 0; g < op->ngroups; g++)
        wanted += op->groups[g].mode != OP_OFF;
    char file[SYSFS_PATH], why[600];
    if (!wanted) {
        snprintf(op->note, sizeof op->note, "operating_point = %s, but no limit it names can be "
                 "set here (`frugal energy` lists them, and why not): every limit as it is",
                 cfg->operating_point_text);
    } else if (state_file(file, sizeof file, why, sizeof why) ||
               limit_state_claim(&op->state, file, log, why, sizeof why)) {
        snprintf(op->note, sizeof op->note, "every limit as it is: %.350s", why);
    } else {
        op->on = 1;
        snprintf(op->note, sizeof op->note, "operating_point = %s; what it changes is put back "
                 "from %.300s", cfg->operating_point_text, file);
    }
    fprintf(log, "operating point: %s\n", op->note);
    if (!op->on)
        return;
    for (int g = 0; g < op->ngroups; g++) {
        op_group *z = &op->groups[g];
        if (z->mode == OP_VALUE)
            apply(op, g, 0, z->fixed, "as the job sets it");
        else if (z->mode == OP_AUTO)
            op_search_start(&z->search, l, z->top, z->floor);
    }
    op->searching = next_auto(op, -1);
}

int operating_point_wants_windows(const operating_point *op)
{
    return op->on && (op->searching >= 0 || op->last >= 0);
}

/* After a drift: every searched group back to its own value, searched again from the first. */
static void search_again(operating_point *op, double t)
{
    for (int g = next_auto(op, -1); g >= 0; g = next_auto(op, g)) {
        op_group *z = &op->groups[g];
        if (z->now != z->top)
            apply(op, g, t, z->top, "the work changed: searching again from its own value");
        if (z->mode == OP_AUTO)
            op_search_start(&z->search, &z->search.limits, z->top, z->floor);
    }
    op->searching = next_auto(op, -1);
    op->last = -1;
}

int operating_point_observe(operating_point *op, double t, double seconds, double joules,
                            long samples)
{
    int g = op->searching >= 0 ? op->searching : op->last;
    if (!op->on || g < 0)
        return 0;
    op_group *z = &op->groups[g];
    char why[200];
    int was_searching = z->search.searching;
    int changed = op_search_observe(&z->search, seconds, joules, samples, why, sizeof why);
    if (!was_searching && z->search.searching) {   /* the kept figures drifted */
        fprintf(op->log, "operating point: %s: %s\n", z->name, why);
        search_again(op, t);
        return 2;
    }
    if (changed)   /* if it cannot be set, it is left alone and the next part searched */
        apply(op, g, t, op_search_value(&z->search), why);
    else if (why[0])
        fprintf(op->log, "operating point: %s: %s\n", z->name, why);
    if (z->mode != OP_AUTO || !z->search.searching) {
        op->last = g;
        op->searching = next_auto(op, g);
    }
    return changed;
}

void operating_point_end(operating_point *op)
{
    if (op->on)
        limit_state_restore(&op->state, op->log);
    op->on = 0;
}

/* ---- summary.json ---- */

static void rung_json(const op_search *s, int i, FILE *f)
{
    const option_figures *o = &s->fig[i];
    fprintf(f, "{\"value\": %.6g, \"samples\": %ld", s->value[i], o->samples);
    json_number_field(f, "img_per_s", 1 / o->s_per_sample, 0);
    json_number_field(f, "watts", o->watts, 0);
    json_number_field(f, "j_per_sample", o->watts * o->s_per_sample, 0);
    json_number_field(f, "cost", policy_cost(&s->limits, o), 0);
    fputc('}', f);
}

static void group_json(const operating_point *op, const op_group *g, FILE *f)
{
    static const char *const modes[] = {"off", "auto", "fixed"};
    const power_limit *first = &op->limits[g->knob[0]];
    fputs("{\"part\": ", f);
    json_string(f, g->name);
    fprintf(f, ", \"source\": \"%s\", \"unit\": \"%s\", \"mode\": \"%s\", \"limits\": %d",
            power_limit_source(first->kind), power_limit_unit(first->kind), modes[g->mode], g->nknobs);
    json_number_field(f, "own_value", g->top, 0);
    json_number_field(f, "lowest", g->floor, 0);
    json_number_field(f, "value", g->now, 0);
    if (g->mode == OP_AUTO || g->search.searches) {
        fprintf(f, ", \"searches\": %d, \"searching\": %s, \"measured\": [", g->search.searches,
                g->search.searching ? "true" : "false");
        for (int i = 0, first_rung = 1; i < g->search.n; i++)
            if (g->search.fig[i].samples) {
                fputs(first_rung ? "" : ", ", f);
                rung_json(&g->search, i, f);
                first_rung = 0;
            }
        fputc(']', f);
    }
    fputc('}', f);
}

void operating_point_json(const operating_point *op, FILE *f)
{
    fputs("\"operating_point\": {\"note\": ", f);
    json_string(f, op->note);
    fputs(", \"limits_found\": [", f);
    for (int i = 0; i < op->nlimits; i++) {
        const power_limit *l = &op->limits[i];
        fputs(i ? ", {\"name\": " : "{\"name\": ", f);
        json_string(f, l->name);
        fprintf(f, ", \"source\": \"%s\", \"settable\": %s", power_limit_source(l->kind),
                l->settable ? "true" : "false");
        json_number_field(f, "found", l->now, 0);
        fputs(", \"why\": ", f);
        json_string(f, l->why);
        fputc('}', f);
    }
    fputs("], \"parts\": [", f);
    for (int g = 0; g < op->ngroups; g++) {
        fputs(g ? ", " : "", f);
        group_json(op, &op->groups[g], f);
    }
    fprintf(f, "], \"changes_total\": %d, \"changes\": [", op->changes_total);
    for (int i = 0; i < op->nchanges; i++) {
        const op_change *c = &op->changes[i];
        fputs(i ? ", {\"part\": " : "{\"part\": ", f);
        json_string(f, op->groups[c->group].name);
        json_fixed_field(f, "t", c->t, 3);
        json_number_field(f, "value", c->value, 0);
        fputs(", \"why\": ", f);
        json_string(f, c->why);
        fputc('}', f);
    }
    fputs("]}", f);
}
