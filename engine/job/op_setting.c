#include "engine/job/op_setting.h"

#include "common/text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_item(char *text, op_item *it, char *why, size_t n)
{
    char *eq = strchr(text, '='), *value = text;
    memset(it, 0, sizeof *it);
    if (eq) {
        *eq = 0;
        char *part = text_trim(text);
        value = eq + 1;
        if (!*part || strlen(part) >= sizeof it->part || strpbrk(part, " \t")) {
            snprintf(why, n, "'%s': expected a part's name (gpu, cpu, cpufreq, nvidia0, "
                     "package-0) before '='", part);
            return -1;
        }
        snprintf(it->part, sizeof it->part, "%s", part);
    }
    value = text_trim(value);
    char *end;
    if (!strcmp(value, "off")) {
        it->mode = OP_OFF;
    } else if (!strcmp(value, "auto")) {
        it->mode = OP_AUTO;
    } else {
        it->value = strtod(value, &end);
        if (end == value || *end || !isfinite(it->value) || it->value <= 0 || it->value > 1e6) {
            snprintf(why, n, "'%s': expected off, auto, or a limit (watts; MHz for cpufreq)", value);
            return -1;
        }
        it->mode = OP_VALUE;
    }
    return 0;
}

int op_setting_parse(const char *text, op_setting *s, char *why, size_t n)
{
    char copy[256];
    memset(s, 0, sizeof *s);
    if (snprintf(copy, sizeof copy, "%s", text) >= (int)sizeof copy) {
        snprintf(why, n, "at most %zu characters", sizeof copy - 1);
        return -1;
    }
    if (!text_trim(copy)[0])
        return 0;
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        if (s->n == OP_SETTING_ITEMS) {
            snprintf(why, n, "at most %d items", OP_SETTING_ITEMS);
            return -1;
        }
        if (parse_item(item, &s->item[s->n++], why, n))
            return -1;
    }
    return 0;
}

int op_setting_any(const op_setting *s)
{
    for (int i = 0; i < s->n; i++)
        if (s->item[i].mode != OP_OFF)
            return 1;
    return 0;
}

static int matches(const op_item *it, const char *part, int gpu, int clock)
{
    if (!it->part[0])   /* every part: a bare value is a power limit, never a clock */
        return !(clock && it->mode == OP_VALUE);
    if (!strcmp(it->part, "gpu"))
        return gpu;
    if (!strcmp(it->part, "cpu"))
        return !gpu && !(clock && it->mode == OP_VALUE);
    return !strcmp(it->part, part);
}

op_mode op_setting_for(const op_setting *s, const char *part, int gpu, int clock, double *value)
{
    op_mode mode = OP_OFF;
    for (int i = 0; i < s->n; i++)
        if (matches(&s->item[i], part, gpu, clock)) {
            mode = s->item[i].mode;
            *value = s->item[i].value;
        }
    return mode;
}
