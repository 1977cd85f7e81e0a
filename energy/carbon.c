#include "energy/carbon.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void carbon_init(carbon_source *cs, double fixed_g_per_kwh, const char *path)
{
    memset(cs, 0, sizeof *cs);
    cs->value = fixed_g_per_kwh;
    cs->read_at = -1;
    snprintf(cs->path, sizeof cs->path, "%s", path ? path : "");
}

/* The file's figure: 0, or -1 with why. */
static int read_figure(const char *path, double *out, char *why, size_t whylen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, whylen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char line[256];
    int lineno = 0, rc = -1;
    snprintf(why, whylen, "%s: no figure in it (expected grams of CO2e per kWh)", path);
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *p = line + strspn(line, " \t"), *end;
        if (*p == '#' || *p == '\n' || !*p)
            continue;
        double v = strtod(p, &end);
        end += strspn(end, " \t\r\n");
        int shown = (int)strcspn(p, "\r\n");
        if (end == p || *end || !(v >= 0 && v <= CARBON_MAX))
            snprintf(why, whylen, "%s:%d: '%.*s' is not a figure in 0..%g g CO2e per kWh", path,
                     lineno, shown < 40 ? shown : 40, p, CARBON_MAX);
        else
            *out = v, rc = 0;
        break;
    }
    fclose(f);
    return rc;
}

double carbon_grams(const carbon_source *cs, double total_j)
{
    return cs->grams + (total_j - cs->mark_j) / 3.6e6 * cs->value;
}

int carbon_update(carbon_source *cs, double now, double total_j, char *why, size_t whylen)
{
    cs->grams = carbon_grams(cs, total_j);   /* the stretch since the last call */
    cs->mark_j = total_j;
    if (!cs->path[0] || (cs->read_at >= 0 && now - cs->read_at < CARBON_REREAD_S))
        return 0;
    cs->read_at = now;
    double v;
    if (read_figure(cs->path, &v, why, whylen) == 0) {
        cs->value = v, cs->failing = 0;
        return 0;
    }
    int first = !cs->failing;
    cs->failing = 1;
    return first;
}
