#include "ops/layers.h"


#include <string.h>

int pool_geom_init(pool_geom *g, int c, int h, int w, int size, int stride)
{
    if (c < 1 || size < 1 || stride < 1 || h < size || w < size)
        return -1;
    /* Like PyTorch (ceil_mode off): windows that would hang over the edge are dropped. */
    *g = (pool_geom){c, h, w, size, stride, (h - size) / stride + 1, (w - size) / stride + 1};
    return 0;
}

void maxpool_forward(const pool_geom *g, const float *x, float *y, int32_t *argmax, int n0, int n1)
{
    int hw = g->h * g->w, ohw = g->oh * g->ow;
    for (int n = n0; n < n1; n++)
        for (int c = 0; c < g->c; c++) {
            const float *xc = x + ((size_t)n * g->c + c) * hw;
            float *yc = y + ((size_t)n * g->c + c) * ohw;
            int32_t *ac = argmax + ((size_t)n * g->c + c) * ohw;
            for (int oy = 0; oy < g->oh; oy++)
                for (int ox = 0; ox < g->ow; ox++) {
                    int y0 = oy * g->stride, x0 = ox * g->stride;
                    int best = y0 * g->w + x0;
                    for (int i = 0; i < g->size; i++)
                        for (int j = 0; j < g->size; j++) {
                            int at = (y0 + i) * g->w + x0 + j;
                            if (xc[at] > xc[best])   /* first maximum wins, as in PyTorch */
                                best = at;
                        }
                    yc[oy * g->ow + ox] = xc[best];
                    ac[oy * g->ow + ox] = c * hw + best;
                }
        }
}

void maxpool_backward(const pool_geom *g, const float *dy, const int32_t *argmax, float *dx,
                      int n0, int n1)
{
    size_t chw = (size_t)g->c * g->h * g->w, cohw = (size_t)g->c * g->oh * g->ow;
    for (int n = n0; n < n1; n++) {
        float *dxn = dx + n * chw;
        memset(dxn, 0, sizeof(float) * chw);
        for (size_t o = 0; o < cohw; o++)
            dxn[argmax[n * cohw + o]] += dy[n * cohw + o];
    }
}
