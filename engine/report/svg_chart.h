/* Charts as inline SVG, for the HTML report: line charts (series of points, a legend, axes with
 * round ticks) and horizontal bar charts. No script: a point's
 * value shows as its tooltip (<title>), and each point carries data-series/data-x/data-y so a
 * test can check what was drawn against the files it came from. */
#ifndef FRUGAL_SVG_CHART_H
#define FRUGAL_SVG_CHART_H

#include <stdio.h>

#define CHART_MAX_SERIES 48

typedef struct chart_series {
    char name[160];          /* the legend's text */
    char key[96];            /* data-series: which figure ("train_loss", "power/package-0") */
    int run;                 /* data-run: which run of the report */
    int n;
    const double *x, *y;     /* NaN y: a gap */
    int points;              /* mark (and tag) each point; else a plain line */
    int dashed;
} chart_series;

typedef struct chart {
    const char *title, *xlabel, *ylabel;
    int whole_x;             /* x counts something (epochs): ticks on whole numbers only */
    int from_zero;           /* a rate (images/s, watts): its axis starts at zero, so that a
                                change of a few percent does not fill the chart */
    int nseries;
    chart_series series[CHART_MAX_SERIES];
} chart;

void svg_chart_init(chart *c, const char *title, const char *xlabel, const char *ylabel);
/* Adds a series (silently nothing past CHART_MAX_SERIES: the report says the figures are in the
 * tables too); returns it to set points/dashed, or NULL. */
chart_series *svg_chart_add(chart *c, const char *name, const char *key, int run, int n,
                        const double *x, const double *y);
void svg_chart_draw(FILE *f, const chart *c);

/* Horizontal bars: label, value (the unit after it), bar colour by group. */
void svg_bars(FILE *f, const char *title, const char *unit, int n, const char *const *labels,
              const double *values, const int *group);

/* Text made safe for HTML. */
void svg_text(FILE *f, const char *s);

#endif
