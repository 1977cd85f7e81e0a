/* A layer as a job describes it, and how the job file's keys are read: the record a checkpoint
 * stores per layer, and the key tables of the layer types (engine/model/layer_*.c) and of the
 * job file's other sections (engine/job/config.c). */
#ifndef FRUGAL_LAYER_CONFIG_H
#define FRUGAL_LAYER_CONFIG_H

#include <stddef.h>

#define CONFIG_MAX_LAYERS 32

typedef enum layer_type {
    LAYER_CONV, LAYER_RELU, LAYER_MAXPOOL, LAYER_FLATTEN, LAYER_DENSE, LAYER_SOFTMAX_XENT,
    LAYER_TYPES
} layer_type;

/* A layer as the job describes it. Every field is a number, so a checkpoint stores the same
 * record for every type, and a layer type's keys say which fields it uses. */
typedef struct layer_config {
    layer_type type;
    int line;                      /* where the section starts, for later shape errors */
    int filters, size, stride, padding;   /* conv; maxpool uses size and stride */
    int outputs;                   /* dense */
} layer_config;

/* How a key's value is read. */
typedef enum value_kind {
    V_INT, V_LONG, V_U64, V_FLOAT, V_PATH, V_FORMAT, V_HXW, V_GRAIN, V_OPTIMIZER, V_FUSE,
    V_DEVICES, V_TEXT, V_ONOFF, V_POLICY, V_PROFILE
} value_kind;

/* A key of a section: its field (an offset into job_config, or into layer_config for layer
 * sections) and, for numbers, the range allowed. */
typedef struct key_spec {
    const char *name;
    value_kind kind;
    size_t offset;
    double lo, hi;
} key_spec;

#endif
