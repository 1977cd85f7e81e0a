#include "engine/report/csv_table.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int split_header(csv_table *t, char *line)
{
    line[strcspn(line, "\r\n")] = 0;
    for (char *save = NULL, *tok = strtok_r(line, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char **names = realloc(t->names, (size_t)(t->ncols + 1) * sizeof *names);
        if (!names)
            return -1;
        t->names = names;
        if (!(t->names[t->ncols] = strdup(tok)))
            return -1;
        t->ncols++;
    }
    return 0;
}

static double cell(const char *s, size_t n)
{
    char buf[64], *end;
    if (n == 0 || n >= sizeof buf)
        return NAN;
    memcpy(buf, s, n);
    buf[n] = 0;
    double v = strtod(buf, &end);
    return end == buf + n ? v : NAN;
}

/* A row of exactly ncols cells; -1 when it has another count. */
static int add_row(csv_table *t, const char *line, size_t *cap)
{
    if ((size_t)(t->nrows + 1) * (size_t)t->ncols > *cap) {
        size_t c = *cap ? 2 * *cap : (size_t)t->ncols * 64;
        double *cells = realloc(t->cells, c * sizeof *cells);
        if (!cells)
            return -2;
        t->cells = cells, *cap = c;
    }
    double *row = t->cells + (size_t)t->nrows * (size_t)t->ncols;
    int k = 0;
    for (const char *s = line;; k++) {
        size_t n = strcspn(s, ",\r\n");
        if (k < t->ncols)
            row[k] = cell(s, n);
        if (s[n] != ',')
            break;
        s += n + 1;
    }
    if (k + 1 != t->ncols)
        return -1;
    t->nrows++;
    return 0;
}

/* Rows were read one after another; the readers want columns. */
static int to_columns(csv_table *t)
{
    size_t n = (size_t)t->nrows * (size_t)t->ncols;
    double *cols = malloc((n ? n : 1) * sizeof *cols);
    if (!cols)
        return -1;
    for (size_t r = 0; r < (size_t)t->nrows; r++)
        for (size_t c = 0; c < (size_t)t->ncols; c++)
            cols[c * (size_t)t->nrows + r] = t->cells[r * (size_t)t->ncols + c];
    free(t->cells);
    t->cells = cols;
    return 0;
}

int csv_read(csv_table *t, const char *path, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t linecap = 0, cap = 0;
    int rc = 0, lineno = 1;
    if (getline(&line, &linecap, f) <= 0 || split_header(t, line) || t->ncols == 0) {
        snprintf(err, errlen, "%s: no header line", path);
        rc = -1;
    }
    for (ssize_t got; !rc && (got = getline(&line, &linecap, f)) > 0;) {
        lineno++;
        if (line[got - 1] != '\n')
            break;   /* a last line cut short (a killed writer): left out */
        int e = add_row(t, line, &cap);
        if (e == -2)
            snprintf(err, errlen, "%s: out of memory", path);
        else if (e)
            snprintf(err, errlen, "%s:%d: not %d cells", path, lineno, t->ncols);
        rc = e ? -1 : 0;
    }
    free(line);
    fclose(f);
    if (!rc && to_columns(t)) {
        snprintf(err, errlen, "%s: out of memory", path);
        rc = -1;
    }
    if (rc)
        csv_free(t);
    return rc;
}

void csv_free(csv_table *t)
{
    for (int i = 0; i < t->ncols; i++)
        free(t->names[i]);
    free(t->names);
    free(t->cells);
    memset(t, 0, sizeof *t);
}

int csv_column(const csv_table *t, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (!strcmp(t->names[i], name))
            return i;
    return -1;
}

const double *csv_values(const csv_table *t, const char *name)
{
    int c = csv_column(t, name);
    return c < 0 ? NULL : t->cells + (size_t)c * (size_t)t->nrows;
}
