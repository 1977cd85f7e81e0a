/* [placement] operating_point: which hardware limits a run sets, and how.
 *
 *   off | auto | WATTS | a list of [PART=]off|auto|VALUE, separated by commas
 *
 * PART names a part: gpu (every GPU), cpu (every CPU package, and the clocks when no package
 * limit can be set), cpufreq (the CPU clocks), or one part by the name `frugal energy` shows
 * (nvidia0, package-0). A value is in the part's unit: watts for power limits, MHz for cpufreq;
 * a value without a part is a power limit for every part that has one (never a clock). Later
 * items win: "auto, cpu=off" searches the GPUs' caps only. */
#ifndef FRUGAL_OP_SETTING_H
#define FRUGAL_OP_SETTING_H

#include <stddef.h>

#define OP_SETTING_ITEMS 8

typedef enum op_mode { OP_OFF, OP_AUTO, OP_VALUE } op_mode;

typedef struct op_item {
    char part[32];               /* "" (every part), gpu, cpu, cpufreq, or a part's name */
    op_mode mode;
    double value;                /* OP_VALUE: watts or MHz */
} op_item;

typedef struct op_setting {
    int n;
    op_item item[OP_SETTING_ITEMS];
} op_setting;

/* 0, or -1 with why ("" and "off" are no item). */
int op_setting_parse(const char *text, op_setting *s, char *why, size_t n);
/* 1 when some item sets or searches something (not only "off"). */
int op_setting_any(const op_setting *s);
/* The mode and value the setting gives a part: its name, whether it is a GPU, a clock. */
op_mode op_setting_for(const op_setting *s, const char *part, int gpu, int clock, double *value);

#endif
