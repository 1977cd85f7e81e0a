/* Checks a trace file against the Trace Event Format (Catapult's rules, which Perfetto's JSON
 * importer follows) as frugal writes it: an object with a traceEvents array; each event an
 * object with a one-letter "ph"; "X" spans with a name, integer pid and tid, and ts, dur >= 0;
 * "C" counters with a name, ts >= 0 and numeric args; "M" metadata naming a thread or process;
 * every span's tid named by a thread_name. */
#ifndef FRUGAL_TEST_TRACE_CHECK_H
#define FRUGAL_TEST_TRACE_CHECK_H

#include "common/json_parse.h"

#include <stddef.h>

/* The parsed trace, or NULL with why (a parse error, or the first rule broken). */
json_value *trace_load_checked(const char *path, char *why, size_t whylen);
/* Spans named name (NULL: any) on tracks whose name starts with track. */
int trace_spans(const json_value *trace, const char *track, const char *name);
/* Whether a track is named exactly `track`. */
int trace_has_track(const json_value *trace, const char *track);
/* Counter events named name. */
int trace_counters(const json_value *trace, const char *name);

#endif
