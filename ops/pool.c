#include "ops/layers.h"
#include "ops/pool_row.h"


#include <string.h>

int pool_geom_init(pool_geom *g, int c, int h, int w, int size, int stride)
{
    if (c < 1 || size < 1 || stride < 1 || h < size || w < size)
        return -1;
    /* Like PyTorch (ceil_mode off): windows that would hang over the edge are dropped. */
    *g = (pool_geom){c, h, w, size, stride, (h - size) / stride + 1, (w - size) / stride + 1};
    return 0;
}


void ops_maxpool_row(const pool_geom *g, const float *in, size_t stride, float *y, int32_t *argmax,
                     int32_t at, int relu)
{
    if (g->size == 2 && g->stride == 2) {
        maxpool2_row(in, in + stride, y, argmax, g->ow, g->w, at, relu);
        return;
    }
    for (int ox = 0; ox < g->ow; ox++) {
        int x0 = ox * g->stride, bi = 0, bj = x0;
        for (int i = 0; i < g->size; i++)
            for (int j = x0; j < x0 + g->size; j++)
                if (in[(size_t)i * stride + j] > in[(size_t)bi * stride + bj])
                    bi = i, bj = j;   /* first maximum wins, as in PyTorch */
        float v = in[(size_t)bi * stride + bj];
        y[ox] = relu && v < 0.0f ? 0.0f : v;
        argmax[ox] = at + bi * g->w + bj;
    }
}

/* A row of fewer than POOL2_BLOCK 2x2 windows, its rows read in place as far as a whole
 * block's (into the rows after them, before end), the windows past the row dropped: copying
 * the rows out first took most of the deeper CNN's max-pool (rows of 7 windows). */
static void maxpool2_short_row(const pool_geom *g, const float *r0, float *y, int32_t *argmax,
                               int32_t at)
{
    float ty[POOL2_BLOCK];
    int32_t ta[POOL2_BLOCK];
    maxpool2_block(r0, r0 + g->w, ty, ta, g->w, at, 0);
    memcpy(y, ty, sizeof(float) * (size_t)g->ow);
    memcpy(argmax, ta, sizeof(int32_t) * (size_t)g->ow);
}

void ops_maxpool_forward(const pool_geom *g, const float *x, float *y, int32_t *argmax, int n0, int n1)
{
    int hw = g->h * g->w, ohw = g->oh * g->ow;
    int short_rows = g->size == 2 && g->stride == 2 && g->ow < POOL2_BLOCK;
    const float *end = x + (size_t)n1 * g->c * hw;
    for (int n = n0; n < n1; n++)
        for (int c = 0; c < g->c; c++) {
            const float *xc = x + ((size_t)n * g->c + c) * hw;
            size_t out = ((size_t)n * g->c + c) * ohw;
            for (int oy = 0; oy < g->oh; oy++) {
                int y0 = oy * g->stride;
                const float *r0 = xc + (size_t)y0 * g->w;
                if (short_rows && r0 + g->w + 2 * POOL2_BLOCK <= end)
                    maxpool2_short_row(g, r0, y + out + oy * g->ow, argmax + out + oy * g->ow,
                                       c * hw + y0 * g->w);
                else
                    ops_maxpool_row(g, r0, (size_t)g->w, y + out + oy * g->ow,
                                    argmax + out + oy * g->ow, c * hw + y0 * g->w, 0);
            }
        }
}

/* 2x2 windows, stride 2: each pair of dx rows is cleared and then receives its gradients
 * while it is in L1, instead of clearing all of dx first and scattering into it afterwards. */
static void maxpool2_backward(const pool_geom *g, const float *dy, const int32_t *argmax,
                              float *dx)
{
    int hw = g->h * g->w, ohw = g->oh * g->ow;
    for (int c = 0; c < g->c; c++) {
        for (int oy = 0; oy < g->oh; oy++) {
            memset(dx + (size_t)c * hw + 2 * oy * g->w, 0, sizeof(float) * 2 * (size_t)g->w);
            const float *d = dy + (size_t)c * ohw + oy * g->ow;
            const int32_t *a = argmax + (size_t)c * ohw + oy * g->ow;
            for (int ox = 0; ox < g->ow; ox++)
                dx[a[ox]] = d[ox];   /* argmax counts from the sample's start */
        }
        if (g->h & 1)
            memset(dx + (size_t)c * hw + (size_t)(g->h - 1) * g->w, 0, sizeof(float) * (size_t)g->w);
    }
}

void ops_maxpool_backward(const pool_geom *g, const float *dy, const int32_t *argmax, float *dx,
                      int n0, int n1)
{
    size_t chw = (size_t)g->c * g->h * g->w, cohw = (size_t)g->c * g->oh * g->ow;
    for (int n = n0; n < n1; n++) {
        float *dxn = dx + n * chw;
        if (g->size == 2 && g->stride == 2) {
            maxpool2_backward(g, dy + n * cohw, argmax + n * cohw, dxn);
            continue;
        }
        memset(dxn, 0, sizeof(float) * chw);
        for (size_t o = 0; o < cohw; o++)
            dxn[argmax[n * cohw + o]] += dy[n * cohw + o];
    }
}
