/* A CSV file frugal wrote (metrics.csv, power.csv) read back as numbers: a header of column
 * names, then rows; a cell that is not a number reads as NaN. No quoting: frugal writes none. */
#ifndef FRUGAL_CSV_TABLE_H
#define FRUGAL_CSV_TABLE_H

#include <stddef.h>

typedef struct csv_table {
    int ncols, nrows;
    char **names;
    double *cells;           /* column by column: column c is cells + c * nrows */
} csv_table;

/* 0, or -1 with err naming the file (and line). A missing file is an error too. */
int csv_read(csv_table *t, const char *path, char *err, size_t errlen);
void csv_free(csv_table *t);
/* The column's index, or -1. */
int csv_column(const csv_table *t, const char *name);
/* A column's nrows values, or NULL when there is no such column. */
const double *csv_values(const csv_table *t, const char *name);

#endif
