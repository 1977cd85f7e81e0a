/* [flatten]: C x H x W as a vector. NCHW is already laid out that way, so it has no task: its
 * output is a view of its input (the same memory and handles). */
#include "engine/model/layer.h"

#include <stdio.h>

static const key_spec keys[] = {{NULL, 0, 0, 0, 0}};

static void defaults(layer_config *lc) { (void)lc; }
static const char *complete(layer_config *lc) { (void)lc; return NULL; }

static int plan(layer *l, const layer_place *at, char *why, size_t n)
{
    (void)at;
    long len;
    if (!layer_size_mul((long)l->in_c * l->in_h, l->in_w, LAYER_MAX_VALUES, &len)) {
        snprintf(why, n, "%dx%dx%d values are too many", l->in_c, l->in_h, l->in_w);
        return -1;
    }
    l->out_c = (int)len, l->out_h = l->out_w = 1;
    l->flat = 1;
    return 0;
}

const layer_class layer_flatten = {
    .name = "flatten", .type = LAYER_FLATTEN, .keys = keys, .defaults = defaults,
    .complete = complete, .plan = plan, .view = 1,
};
