#include "trace_check.h"

#include "common/input_file.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_int(const json_value *v) { return v && v->type == JSON_NUMBER && v->number == floor(v->number); }
static int non_negative(const json_value *v) { return v && v->type == JSON_NUMBER && v->number >= 0; }

static const char *check_event(const json_value *e)
{
    const char *ph = json_str(json_get(e, "ph"), NULL);
    if (e->type != JSON_OBJECT || !ph || strlen(ph) != 1)
        return "an event without a one-letter ph";
    if (!json_str(json_get(e, "name"), NULL))
        return "an event without a name";
    if (!is_int(json_get(e, "pid")))
        return "an event without an integer pid";
    if (*ph == 'X')
        return !is_int(json_get(e, "tid")) ? "a span without an integer tid"
               : !non_negative(json_get(e, "ts")) ? "a span with a negative or missing ts"
               : !non_negative(json_get(e, "dur")) ? "a span with a negative or missing dur" : NULL;
    if (*ph == 'C') {
        const json_value *args = json_get(e, "args");
        if (!non_negative(json_get(e, "ts")) || !args || args->type != JSON_OBJECT || !args->n)
            return "a counter without ts or args";
        for (int i = 0; i < args->n; i++)
            if (args->items[i].type != JSON_NUMBER)
                return "a counter with a value that is not a number";
        return NULL;
    }
    if (*ph == 'M') {
        const char *name = json_str(json_get(e, "name"), "");
        return strcmp(name, "thread_name") && strcmp(name, "process_name") ? "unknown metadata"
               : !json_str(json_get(e, "args.name"), NULL) ? "metadata without args.name" : NULL;
    }
    return "a phase frugal does not write";
}

#define MAX_TRACKS 1024

/* Each tid's thread_name (NULL: unnamed), for tids below MAX_TRACKS. */
static void track_names(const json_value *events, const char **names)
{
    memset(names, 0, MAX_TRACKS * sizeof *names);
    for (int i = 0; i < events->n; i++) {
        const json_value *e = &events->items[i];
        double tid = json_num(json_get(e, "tid"), -1);
        if (!strcmp(json_str(json_get(e, "ph"), ""), "M") && tid >= 0 && tid < MAX_TRACKS &&
            !strcmp(json_str(json_get(e, "name"), ""), "thread_name"))
            names[(int)tid] = json_str(json_get(e, "args.name"), NULL);
    }
}

static const char *track_of(const char **names, const json_value *e)
{
    double tid = json_num(json_get(e, "tid"), -1);
    return tid >= 0 && tid < MAX_TRACKS ? names[(int)tid] : NULL;
}

json_value *trace_load_checked(const char *path, char *why, size_t whylen)
{
    size_t len = 0;
    char *text = input_read_all(path, (size_t)1 << 30, "trace", &len, why, whylen);
    json_value *t = text ? json_parse(text, len, why, whylen) : NULL;
    free(text);
    const json_value *events = json_get(t, "traceEvents");
    const char *bad = t && (!events || events->type != JSON_ARRAY) ? "no traceEvents array" : NULL;
    if (bad)
        snprintf(why, whylen, "%s", bad);
    static const char *names[MAX_TRACKS];
    if (t && !bad)
        track_names(events, names);
    for (int i = 0; t && !bad && i < events->n; i++) {
        const json_value *e = &events->items[i];
        bad = check_event(e);
        if (!bad && !strcmp(json_str(json_get(e, "ph"), ""), "X") && !track_of(names, e))
            bad = "a span on a track without a thread_name";
        if (bad)
            snprintf(why, whylen, "event %d: %s", i, bad);
    }
    if (bad) {
        json_free(t);
        return NULL;
    }
    return t;
}

int trace_has_track(const json_value *trace, const char *track)
{
    const json_value *events = json_get(trace, "traceEvents");
    static const char *names[MAX_TRACKS];
    if (!events)
        return 0;
    track_names(events, names);
    for (int i = 0; i < MAX_TRACKS; i++)
        if (names[i] && !strcmp(names[i], track))
            return 1;
    return 0;
}

int trace_spans(const json_value *trace, const char *track, const char *name)
{
    const json_value *events = json_get(trace, "traceEvents");
    static const char *names[MAX_TRACKS];
    if (!events)
        return 0;
    track_names(events, names);
    int n = 0;
    for (int i = 0; i < events->n; i++) {
        const json_value *e = &events->items[i];
        if (strcmp(json_str(json_get(e, "ph"), ""), "X") ||
            (name && strcmp(json_str(json_get(e, "name"), ""), name)))
            continue;
        const char *t = track_of(names, e);
        n += t && !strncmp(t, track, strlen(track));
    }
    return n;
}

int trace_counters(const json_value *trace, const char *name)
{
    const json_value *events = json_get(trace, "traceEvents");
    int n = 0;
    for (int i = 0; events && i < events->n; i++)
        n += !strcmp(json_str(json_get(&events->items[i], "ph"), ""), "C") &&
             !strcmp(json_str(json_get(&events->items[i], "name"), ""), name);
    return n;
}
