/* SIGINT, SIGTERM and SIGHUP. During training the first asks the run to stop at the next batch
 * boundary (it then saves a checkpoint, the metrics and the summary, and exits with 128 + the
 * signal's number); a second one ends the process at once. A node (frugal join) leaves at once:
 * it stops waiting for messages, and whatever it computes, the process ends within
 * SIGNALS_LEAVE_S seconds with 128 + the signal's number. A process that ends at once writes the
 * sysfs limits it changed back first (energy/limit_state.h). */
#ifndef FRUGAL_SIGNALS_H
#define FRUGAL_SIGNALS_H

#include <signal.h>

/* 0, or the first signal received. A lock-free atomic: safe to set in a handler, whichever
 * thread the signal lands on, and to read from any other. */
extern _Atomic int signals_stop;

#define SIGNALS_LEAVE_S 2

void signals_install(void);
void signals_install_leaving(void);
void signals_restore(void);

#endif
