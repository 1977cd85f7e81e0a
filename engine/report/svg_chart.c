#include "engine/report/svg_chart.h"

#include <math.h>
#include <string.h>

#define W 600.0
#define H 300.0
#define LEFT 70.0
#define RIGHT 16.0
#define TOP 34.0
#define BOTTOM 44.0

static const char *const COLOURS[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
#define NCOLOURS (int)(sizeof COLOURS / sizeof COLOURS[0])

void svg_text(FILE *f, const char *s)
{
    for (; s && *s; s++)
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
}

void svg_chart_init(chart *c, const char *title, const char *xlabel, const char *ylabel)
{
    memset(c, 0, sizeof *c);
    c->title = title, c->xlabel = xlabel, c->ylabel = ylabel;
}

chart_series *svg_chart_add(chart *c, const char *name, const char *key, int run, int n,
                        const double *x, const double *y)
{
    if (c->nseries == CHART_MAX_SERIES || n <= 0)
        return NULL;
    chart_series *s = &c->series[c->nseries++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    snprintf(s->key, sizeof s->key, "%s", key);
    s->run = run, s->n = n, s->x = x, s->y = y;
    return s;
}

/* A round step (1, 2 or 5 times a power of ten) giving about 5 ticks over span. */
static double tick_step(double span)
{
    double raw = span / 5, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

typedef struct frame {
    double x0, x1, y0, y1;   /* the data range shown */
} frame;

static double px(const frame *fr, double x) { return LEFT + (x - fr->x0) / (fr->x1 - fr->x0) * (W - LEFT - RIGHT); }
static double py(const frame *fr, double y) { return H - BOTTOM - (y - fr->y0) / (fr->y1 - fr->y0) * (H - TOP - BOTTOM); }

static int data_range(const chart *c, frame *fr)
{
    fr->x0 = fr->y0 = INFINITY;
    fr->x1 = fr->y1 = -INFINITY;
    for (int s = 0; s < c->nseries; s++)
        for (int i = 0; i < c->series[s].n; i++) {
            double x = c->series[s].x[i], y = c->series[s].y[i];
            if (!isfinite(x) || !isfinite(y))
                continue;
            fr->x0 = fmin(fr->x0, x), fr->x1 = fmax(fr->x1, x);
            fr->y0 = fmin(fr->y0, y), fr->y1 = fmax(fr->y1, y);
        }
    if (!isfinite(fr->x0))
        return -1;
    if (fr->y0 > 0 && (c->from_zero || fr->y0 < 0.5 * fr->y1))
        fr->y0 = 0;   /* a positive figure reads best from zero */
    if (fr->x1 - fr->x0 < 1e-12)
        fr->x0 -= 0.5, fr->x1 += 0.5;
    if (fr->y1 - fr->y0 < 1e-12 * fmax(1, fabs(fr->y1)))
        fr->y0 -= fmax(0.5, fabs(fr->y0) * 0.1), fr->y1 += fmax(0.5, fabs(fr->y1) * 0.1);
    double step = tick_step(fr->y1 - fr->y0);
    fr->y0 = floor(fr->y0 / step) * step, fr->y1 = ceil(fr->y1 / step) * step;
    return 0;
}

/* Enough decimals to tell ticks step apart, and no more. */
static int decimals(double step)
{
    int d = (int)ceil(-log10(step) - 1e-9);
    return d < 0 ? 0 : d > 9 ? 9 : d;
}

static void axes(FILE *f, const chart *c, const frame *fr)
{
    double ys = tick_step(fr->y1 - fr->y0), xs = tick_step(fr->x1 - fr->x0);
    for (double y = fr->y0; y <= fr->y1 + ys * 1e-6; y += ys)
        fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='#ddd'/>"
                "<text x='%.1f' y='%.1f' text-anchor='end' font-size='11'>%.*f</text>\n",
                LEFT, W - RIGHT, py(fr, y), py(fr, y), LEFT - 4, py(fr, y) + 4, decimals(ys),
                fabs(y) < ys * 1e-6 ? 0 : y);
    if (c->whole_x && xs < 1)
        xs = 1;
    for (double x = ceil(fr->x0 / xs - 1e-9) * xs; x <= fr->x1 + xs * 1e-6; x += xs)
        fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='middle' font-size='11'>%.4g</text>\n",
                px(fr, x), H - BOTTOM + 14, fabs(x) < xs * 1e-6 ? 0 : x);   /* not "-0" */
    fprintf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='none' stroke='#888'/>\n",
            LEFT, TOP, W - LEFT - RIGHT, H - TOP - BOTTOM);
    fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='middle' font-size='12'>", (LEFT + W - RIGHT) / 2, H - 10);
    svg_text(f, c->xlabel);
    fprintf(f, "</text>\n<text x='14' y='%.1f' text-anchor='middle' font-size='12' "
            "transform='rotate(-90 14 %.1f)'>", (TOP + H - BOTTOM) / 2, (TOP + H - BOTTOM) / 2);
    svg_text(f, c->ylabel);
    fputs("</text>\n", f);
}

static void series_svg(FILE *f, const chart_series *s, const char *colour, const frame *fr)
{
    fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='1.6'%s data-run='%d' data-line='",
            colour, s->dashed ? " stroke-dasharray='5 3'" : "", s->run);
    svg_text(f, s->key);
    fputs("' points='", f);
    for (int i = 0; i < s->n; i++)
        if (isfinite(s->x[i]) && isfinite(s->y[i]))
            fprintf(f, "%.1f,%.1f ", px(fr, s->x[i]), py(fr, s->y[i]));
    fputs("'/>\n", f);
    for (int i = 0; s->points && i < s->n; i++) {
        if (!isfinite(s->x[i]) || !isfinite(s->y[i]))
            continue;
        fprintf(f, "<circle class='pt' cx='%.1f' cy='%.1f' r='3' fill='%s' data-run='%d' "
                "data-series='", px(fr, s->x[i]), py(fr, s->y[i]), colour, s->run);
        svg_text(f, s->key);
        fprintf(f, "' data-x='%.9g' data-y='%.9g'><title>", s->x[i], s->y[i]);
        svg_text(f, s->name);
        fprintf(f, ": %.6g at %.6g</title></circle>\n", s->y[i], s->x[i]);
    }
}

void svg_chart_draw(FILE *f, const chart *c)
{
    frame fr;
    int legend_rows = (c->nseries + 1) / 2;
    double height = H + 16.0 * legend_rows + 4;
    fprintf(f, "<figure><svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' "
            "viewBox='0 0 %.0f %.0f' role='img'>\n<text x='%.1f' y='20' font-size='14' "
            "font-weight='bold'>", W, height, W, height, LEFT);
    svg_text(f, c->title);
    fputs("</text>\n", f);
    if (data_range(c, &fr)) {
        fprintf(f, "<text x='%.1f' y='%.1f' font-size='12'>no data recorded</text></svg></figure>\n",
                LEFT, H / 2);
        return;
    }
    axes(f, c, &fr);
    for (int s = 0; s < c->nseries; s++)
        series_svg(f, &c->series[s], COLOURS[s % NCOLOURS], &fr);
    double ly = H + 6;
    for (int s = 0; s < c->nseries; s++) {
        double lx = LEFT + (s % 2) * (W - LEFT) / 2, y = ly + 16.0 * (s / 2);
        fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='%s' stroke-width='3'%s/>"
                "<text x='%.1f' y='%.1f' font-size='11'>", lx, lx + 18, y, y, COLOURS[s % NCOLOURS],
                c->series[s].dashed ? " stroke-dasharray='5 3'" : "", lx + 24, y + 4);
        svg_text(f, c->series[s].name);
        fputs("</text>\n", f);
    }
    fputs("</svg></figure>\n", f);
}

void svg_bars(FILE *f, const char *title, const char *unit, int n, const char *const *labels,
              const double *values, const int *group)
{
    double top = 0, row = 18, left = 230, height = 34 + row * n + 8;
    for (int i = 0; i < n; i++)
        top = fmax(top, values[i]);
    fprintf(f, "<figure><svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' "
            "viewBox='0 0 %.0f %.0f' role='img'>\n<text x='10' y='20' font-size='14' "
            "font-weight='bold'>", W, height, W, height);
    svg_text(f, title);
    fputs("</text>\n", f);
    for (int i = 0; i < n; i++) {
        double y = 30 + row * i, w = top > 0 ? values[i] / top * (W - left - 90) : 0;
        fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='end' font-size='11'>", left - 6, y + 12);
        svg_text(f, labels[i]);
        fprintf(f, "</text><rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='%s'><title>",
                left, y + 2, fmax(w, 0), row - 4, COLOURS[(group ? group[i] : 0) % NCOLOURS]);
        svg_text(f, labels[i]);
        fprintf(f, ": %.6g %s</title></rect><text x='%.1f' y='%.1f' font-size='11'>%.4g %s</text>\n",
                values[i], unit, left + fmax(w, 0) + 4, y + 12, values[i], unit);
    }
    fputs("</svg></figure>\n", f);
}
