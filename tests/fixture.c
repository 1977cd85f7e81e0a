#include "fixture.h"

#include "test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fx_case *fx_load(const char *path, const char *prefix, int *ncases)
{
    FILE *f = fopen(path, "r");
    *ncases = 0;
    if (!f) {
        test_fail(__FILE__, __LINE__, "cannot open fixture %s", path);
        return NULL;
    }
    fx_case *cases = NULL;
    fx_case *cur = NULL;
    size_t cap = 1 << 16;
    char *line = malloc(cap);
    int c;
    while (fscanf(f, "%31s", line) == 1) {
        if (line[0] == '#') {
            while ((c = fgetc(f)) != '\n' && c != EOF) {
            }
            continue;
        }
        if (!strcmp(line, "case")) {
            char name[64];
            if (fscanf(f, "%63s", name) != 1 || !fgets(line, (int)cap, f))
                break;
            if (strncmp(name, prefix, strlen(prefix))) {
                cur = NULL;
                continue;
            }
            cases = realloc(cases, sizeof *cases * (size_t)(*ncases + 1));
            cur = &cases[(*ncases)++];
            memset(cur, 0, sizeof *cur);
            snprintf(cur->name, sizeof cur->name, "%s", name);
            snprintf(cur->params, sizeof cur->params, " %s", line);
            continue;
        }
        /* an array: name, dims to end of line, then the values */
        fx_array a = {0};
        snprintf(a.name, sizeof a.name, "%s", line);
        if (!fgets(line, (int)cap, f))
            break;
        a.n = 1;
        for (char *p = line, *end; a.ndim < 6; p = end) {
            long d = strtol(p, &end, 10);
            if (end == p)
                break;
            a.dims[a.ndim++] = (int)d;
            a.n *= d;
        }
        a.v = malloc(sizeof(double) * (size_t)(a.n ? a.n : 1));
        for (long i = 0; i < a.n; i++)
            if (fscanf(f, "%lf", &a.v[i]) != 1) {
                test_fail(__FILE__, __LINE__, "%s: array %s truncated", path, a.name);
                break;
            }
        if (cur && cur->narrays < 12)
            cur->arrays[cur->narrays++] = a;
        else
            free(a.v);
    }
    free(line);
    fclose(f);
    if (!*ncases)
        test_fail(__FILE__, __LINE__, "%s has no case starting with %s", path, prefix);
    return cases;
}

void fx_free(fx_case *cases, int ncases)
{
    for (int i = 0; i < ncases; i++)
        for (int j = 0; j < cases[i].narrays; j++)
            free(cases[i].arrays[j].v);
    free(cases);
}

const fx_array *fx_get(const fx_case *c, const char *name)
{
    for (int i = 0; i < c->narrays; i++)
        if (!strcmp(c->arrays[i].name, name))
            return &c->arrays[i];
    test_fail(__FILE__, __LINE__, "case %s has no array %s", c->name, name);
    static fx_array empty;
    return &empty;
}

int fx_param(const fx_case *c, const char *key)
{
    char pat[40];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(c->params, pat);
    if (!p) {
        test_fail(__FILE__, __LINE__, "case %s has no parameter %s", c->name, key);
        return 0;
    }
    return atoi(p + strlen(pat));
}

float *fx_floats(const fx_array *a)
{
    float *f = malloc(sizeof(float) * (size_t)(a->n ? a->n : 1));
    for (long i = 0; i < a->n; i++)
        f[i] = (float)a->v[i];
    return f;
}

int fx_close(const char *what, const float *got, const fx_array *a, double atol, double rtol)
{
    long worst = -1;
    double worst_excess = 0;
    for (long i = 0; i < a->n; i++) {
        double err = fabs((double)got[i] - a->v[i]), tol = atol + rtol * fabs(a->v[i]);
        if (!(err <= tol) && (worst < 0 || err - tol > worst_excess)) {
            worst = i;
            worst_excess = err - tol;
        }
    }
    if (worst >= 0)
        test_fail(__FILE__, __LINE__, "%s: element %ld is %.9g, PyTorch says %.9g", what, worst,
                  (double)got[worst], a->v[worst]);
    return worst < 0;
}
