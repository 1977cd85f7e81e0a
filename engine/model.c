#include "engine/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int model_build(model *m, const job_config *cfg, int c, int h, int w, int classes, char *err,
                size_t errlen)
{
    memset(m, 0, sizeof *m);
    m->nlayers = cfg->nlayers;
    m->classes = classes;
    for (int i = 0; i < cfg->nlayers; i++) {
        /* A relu right before a maxpool runs after it instead: max and relu commute exactly,
         * forward and backward (the gradient reaches the window's maximum iff it is positive),
         * and relu then touches a quarter of the data. */
        int src = i;
        if (i + 1 < cfg->nlayers && cfg->layers[i].type == LAYER_RELU &&
            cfg->layers[i + 1].type == LAYER_MAXPOOL)
            src = i + 1;
        else if (i > 0 && cfg->layers[i - 1].type == LAYER_RELU &&
                 cfg->layers[i].type == LAYER_MAXPOOL)
            src = i - 1;
        const layer_config *lc = &cfg->layers[src];
        layer *l = &m->layers[i];
        l->type = lc->type;
        l->in_c = c, l->in_h = h, l->in_w = w;
        switch (lc->type) {
        case LAYER_CONV:
            conv_geom_init(&l->conv, c, h, w, lc->filters, lc->size, lc->size, lc->stride,
                           lc->padding);
            c = lc->filters, h = l->conv.oh, w = l->conv.ow;
            l->nweights = (long)lc->filters * l->in_c * lc->size * lc->size;
            l->nparams = l->nweights + lc->filters;
            m->flops_per_sample += 6L * l->nweights * h * w;   /* forward, dx, dw */
            break;
        case LAYER_MAXPOOL:
            pool_geom_init(&l->pool, c, h, w, lc->size, lc->stride);
            h = l->pool.oh, w = l->pool.ow;
            break;
        case LAYER_FLATTEN:
            c = c * h * w, h = w = 1;
            break;
        case LAYER_DENSE:
            l->nweights = (long)lc->outputs * c;
            l->nparams = l->nweights + lc->outputs;
            m->flops_per_sample += 6L * l->nweights;
            c = lc->outputs;
            break;
        case LAYER_RELU:
        case LAYER_SOFTMAX_XENT:
            break;
        }
        l->out_c = c, l->out_h = h, l->out_w = w;
        l->in_size = (long)l->in_c * l->in_h * l->in_w;
        l->out_size = (long)c * h * w;
        m->nparams += l->nparams;
        if (l->nparams) {
            l->params = calloc((size_t)l->nparams, sizeof(float));
            l->grad = calloc((size_t)l->nparams, sizeof(float));
            l->velocity = calloc((size_t)l->nparams, sizeof(float));
            if (!l->params || !l->grad || !l->velocity) {
                model_free(m);
                snprintf(err, errlen, "out of memory for the parameters of layer %d", i + 1);
                return -1;
            }
        }
    }
    return 0;
}

void model_init(model *m, uint64_t seed)
{
    ops_rng r;
    ops_rng_seed(&r, seed);
    for (int i = 0; i < m->nlayers; i++) {
        layer *l = &m->layers[i];
        if (!l->nparams)
            continue;
        int fan_in = (int)(l->nweights / (l->nparams - l->nweights));
        init_kaiming_uniform(&r, l->params, l->nparams, fan_in);   /* weights and bias alike */
        memset(l->velocity, 0, sizeof(float) * (size_t)l->nparams);
    }
}

void model_free(model *m)
{
    for (int i = 0; i < m->nlayers; i++) {
        free(m->layers[i].params);
        free(m->layers[i].grad);
        free(m->layers[i].velocity);
        m->layers[i].params = m->layers[i].grad = m->layers[i].velocity = NULL;
    }
}
