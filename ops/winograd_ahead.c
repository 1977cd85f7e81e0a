/* The rows a Winograd block reads or writes, listed and prefetched: see winograd_ahead.h. */
#include "ops/winograd_ahead.h"

static void add_run(winograd_ahead *a, const void *p, size_t bytes)
{
    const char *at = p;
    if (a->n > 0 && a->at[a->n - 1] + a->bytes[a->n - 1] == at)
        a->bytes[a->n - 1] += bytes;   /* whole samples' rows are one run */
    else if (a->n < AHEAD_RUNS)
        a->at[a->n] = at, a->bytes[a->n++] = bytes;
    else
        return;
    a->total += bytes;
}

/* Rows [y0, y1) (clipped to h) of sample s's planes [c0, c1) of a tensor of nplanes planes of h
 * x w 4-byte values: NCHW, a run per plane; in channel lanes, a run per block of 16. */
static void add_rows(winograd_ahead *a, const void *base, int lanes, int nplanes, int h, int w,
                     int s, int c0, int c1, int y0, int y1)
{
    y0 = y0 < 0 ? 0 : y0;
    y1 = y1 > h ? h : y1;
    if (!base || y0 >= y1)
        return;
    int step = lanes ? WINOGRAD_LANES : 1;
    for (int c = c0; c < c1; c += step) {
        size_t plane = ((size_t)s * nplanes + (size_t)c) * h * w;
        add_run(a, (const float *)base + plane + (size_t)step * y0 * w,
                sizeof(float) * (size_t)step * (size_t)(y1 - y0) * w);
    }
}

/* Tile rows [*lo, *hi) of sample s that the block holds, counted within the sample. */
static void sample_rows(const tiling *t, int s, int *lo, int *hi)
{
    int first = s * t->th;
    *lo = (t->r0 > first ? t->r0 : first) - first;
    *hi = (t->r1 < first + t->th ? t->r1 : first + t->th) - first;
}

void winograd_ahead_input_rows(winograd_ahead *a, const tiling *t, conv_input x)
{
    const conv_geom *g = t->g;
    for (int s = t->r0 / t->th; s * t->th < t->r1; s++) {
        int lo, hi;
        sample_rows(t, s, &lo, &hi);
        add_rows(a, x.f, g->in_lanes, g->c, g->h, g->w, s, 0, g->c, t->m * lo - g->pad,
                 t->m * hi + 2 - g->pad);
    }
}

void winograd_ahead_output_rows(winograd_ahead *a, const tiling *t, const winograd_grad *arrays,
                                int f0, int f1)
{
    const conv_geom *g = t->g;
    const pool_geom *p = arrays->pool;
    int nplanes = p ? p->c : g->f, h = p ? p->oh : g->oh, w = p ? p->ow : g->ow;
    int per = p ? t->m / 2 : t->m;   /* rows a tile row covers */
    for (int s = t->r0 / t->th; s * t->th < t->r1; s++) {
        int lo, hi;
        sample_rows(t, s, &lo, &hi);
        const void *each[3] = {arrays->dy, arrays->argmax, arrays->relu_y};
        for (int i = 0; i < 3; i++)
            add_rows(a, each[i], g->out_lanes, nplanes, h, w, s, f0, f1, per * lo, per * hi);
    }
}

void winograd_ahead_fetch(const winograd_ahead *a, int part, int parts)
{
    size_t from = a->total * (size_t)part / (size_t)parts;
    size_t to = a->total * (size_t)(part + 1) / (size_t)parts, start = 0;
    for (int i = 0; i < a->n && start < to; start += a->bytes[i++]) {
        size_t end = start + a->bytes[i];
        if (end <= from)
            continue;
        size_t b = (from > start ? from - start : 0) / 64 * 64;
        size_t stop = (to < end ? to : end) - start;
        for (; b < stop; b += 64)
            __builtin_prefetch(a->at[i] + b, 0, 3);
    }
}
