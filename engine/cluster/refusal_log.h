/* Connections refused before authentication (a stranger, garbage, a silent socket), logged so
 * that a flood cannot fill the log: REFUSAL_LOG_LINES lines a window of REFUSAL_LOG_WINDOW_S
 * seconds name each refusal (address and why), and the rest are counted and said in one line
 * when the window is over (how many, from which addresses). Not thread-safe: the caller's lock. */
#ifndef FRUGAL_CLUSTER_REFUSAL_LOG_H
#define FRUGAL_CLUSTER_REFUSAL_LOG_H

#include <stdio.h>

#define REFUSAL_LOG_LINES 8
#define REFUSAL_LOG_WINDOW_S 10.0
#define REFUSAL_LOG_ADDRS 4              /* addresses named in a summary line */

typedef struct refusal_log {
    double window_start;                 /* seconds (any monotonic origin) */
    int lines;                           /* said in full this window */
    long more;                           /* counted, not said */
    int naddrs;
    char addrs[REFUSAL_LOG_ADDRS][64];   /* those of the counted ones, the first few */
    int other_addrs;                     /* counted ones from addresses not in addrs */
} refusal_log;

/* A refusal at time now: a line of its own, or counted. */
void refusal_log_add(refusal_log *r, FILE *f, double now, const char *addr, const char *why);
/* The counted ones in one line, if any (a window over, or the end of the run). */
void refusal_log_flush(refusal_log *r, FILE *f, double now);

#endif
