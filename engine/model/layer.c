/* The layer types, and what their files share. */
#include "engine/model/layer.h"

#include <string.h>

static const layer_class *const classes[LAYER_TYPES] = {
    [LAYER_CONV] = &layer_conv,       [LAYER_RELU] = &layer_relu,
    [LAYER_MAXPOOL] = &layer_maxpool, [LAYER_FLATTEN] = &layer_flatten,
    [LAYER_DENSE] = &layer_dense,     [LAYER_SOFTMAX_XENT] = &layer_softmax_xent,
};

const layer_class *layer_class_of(layer_type t)
{
    return (unsigned)t < LAYER_TYPES ? classes[t] : NULL;
}

const layer_class *layer_class_named(const char *name)
{
    for (int t = 0; t < LAYER_TYPES; t++)
        if (!strcmp(classes[t]->name, name))
            return classes[t];
    return NULL;
}

const char *layer_name(layer_type t)
{
    const layer_class *c = layer_class_of(t);
    return c ? c->name : "?";
}

int layer_kernel_status(const rt_ctx *ctx, int rc)
{
    if (!rc)
        return 0;
    rt_fail(ctx, "out of memory for the kernel's scratch buffers");
    return -1;
}

int layer_size_mul(long a, long b, long max, long *out)
{
    long r;
    if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) || r > max)
        return 0;
    *out = r;
    return 1;
}
