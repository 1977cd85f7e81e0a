/* A coordinator resumed: which nodes were training with it when it stopped (from the run's
 * summary.json, before it is rewritten), so the user knows whom to expect back. */
#ifndef FRUGAL_NODES_BEFORE_H
#define FRUGAL_NODES_BEFORE_H

#include <stdio.h>

/* Prints "cluster: when it stopped, N nodes were training with it: ..." (or why it cannot say)
 * to out; returns N, or -1 when the summary names none (no file, no cluster section). */
int nodes_before_say(const char *summary_path, FILE *out);

#endif
