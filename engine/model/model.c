#include "engine/model/model.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A monotone layer (relu) right before a max-pool runs after it instead: they commute exactly,
 * forward and backward (the gradient reaches the window's maximum iff it is positive), and the
 * relu then touches a quarter of the data. */
static int swaps(const layer_config *l)
{
    const layer_class *a = layer_class_of(l[0].type), *b = layer_class_of(l[1].type);
    return a && b && a->monotone && b->max_pool;
}

/* The config layer model layer i is made from. */
static const layer_config *source_of(const layer_config *l, int nlayers, int i)
{
    if (i + 1 < nlayers && swaps(&l[i]))
        return &l[i + 1];
    if (i > 0 && swaps(&l[i - 1]))
        return &l[i - 1];
    return &l[i];
}

static int fail(model *m, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(model *m, char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    model_free(m);
    return -1;
}

static int alloc_params(layer *l)
{
    if (!l->nparams)
        return 0;
    l->params = calloc((size_t)l->nparams, sizeof(float));
    l->grad = calloc((size_t)l->nparams, sizeof(float));
    l->velocity = calloc((size_t)l->nparams, sizeof(float));
    return l->params && l->grad && l->velocity ? 0 : -1;
}

int model_build(model *m, const char *path, const layer_config *layers, int nlayers, int c, int h,
                int w, int classes, int alloc, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    long in_size;
    if (c < 1 || h < 1 || w < 1 || !layer_size_mul((long)c * h, w, LAYER_MAX_VALUES, &in_size))
        return fail(m, err, errlen, "%s: inputs of %dx%dx%d are not possible", path, c, h, w);
    if (classes < 1 || classes > MODEL_MAX_CLASSES)
        return fail(m, err, errlen, "%s: %d classes (1 to %d)", path, classes,
                    MODEL_MAX_CLASSES);
    if (nlayers < 1 || nlayers > CONFIG_MAX_LAYERS)
        return fail(m, err, errlen, "%s: %d layers (1 to %d)", path, nlayers,
                    CONFIG_MAX_LAYERS);
    m->nlayers = nlayers;
    m->classes = classes;
    int flat = 0;
    for (int i = 0; i < m->nlayers; i++) {
        layer *l = &m->layers[i];
        l->cfg = *source_of(layers, nlayers, i);
        l->cls = layer_class_of(l->cfg.type);
        if (!l->cls)
            return fail(m, err, errlen, "%s:%d: layer %d has unknown type %d", path,
                        layers[i].line, i + 1, (int)l->cfg.type);
        l->in_c = c, l->in_h = h, l->in_w = w;
        char why[256];
        layer_place at = {i, m->nlayers, flat, i ? &m->layers[i - 1] : NULL, classes};
        if (l->cls->plan(l, &at, why, sizeof why))
            return fail(m, err, errlen, "%s:%d: [%s] (layer %d): %s", path, l->cfg.line,
                        l->cls->name, i + 1, why);
        if (!layer_size_mul((long)l->out_c * l->out_h, l->out_w, LAYER_MAX_VALUES, &l->out_size))
            return fail(m, err, errlen, "%s:%d: [%s] (layer %d): an output of %dx%dx%d values "
                        "per sample is too large", path, l->cfg.line, l->cls->name, i + 1,
                        l->out_c, l->out_h, l->out_w);
        l->in_size = (long)l->in_c * l->in_h * l->in_w;
        c = l->out_c, h = l->out_h, w = l->out_w, flat = l->flat;
        m->nparams += l->nparams;
        m->flops_per_sample += l->flops;
    }
    if (!m->layers[m->nlayers - 1].cls->loss)
        return fail(m, err, errlen, "%s: the last layer must be [softmax_xent]", path);
    return alloc ? model_alloc(m, err, errlen) : 0;
}

int model_alloc(model *m, char *err, size_t errlen)
{
    for (int i = 0; i < m->nlayers; i++)
        if (alloc_params(&m->layers[i]))
            return fail(m, err, errlen, "out of memory for the %ld parameters of layer %d",
                        m->layers[i].nparams, i + 1);
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
