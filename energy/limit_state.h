/* What a machine's limits were before frugal changed them, kept in a state file so that they are
 * put back whatever happens: at the end of the run, on a signal (the sysfs ones from the handler
 * itself), and, after a kill -9 or a crash, by the next frugal that starts on the machine (or
 * `frugal energy --restore`). One process holds the file at a time; another finds it held and
 * leaves the limits alone. The file names its owner by pid and start time, so a pid reused by
 * another program is not taken for the owner. */
#ifndef FRUGAL_ENERGY_LIMIT_STATE_H
#define FRUGAL_ENERGY_LIMIT_STATE_H

#include "energy/power_limit.h"

#include <stdio.h>

typedef struct limit_saved {
    power_limit_kind kind;
    char path[SYSFS_PATH];
    double value;                /* in the limit's unit */
} limit_saved;

typedef struct limit_state {
    char file[SYSFS_PATH];
    int held;
    int n;
    limit_saved saved[POWER_LIMIT_MAX];
} limit_state;

/* A state file's text: its owner (0 when unreadable) and the limits it lists, at most max;
 * lines that are not a limit (a value and a limit's file of its kind) are skipped, counted in
 * *skipped. Returns how many limits. */
int limit_state_parse(const char *text, long *pid, unsigned long long *start, limit_saved *saved,
                      int max, int *skipped);
/* Puts back what a process that is gone left in file, and removes it. Returns 0 (nothing left,
 * or all put back), 1 when a live process holds it (its pid in *owner), -1 when a limit could
 * not be put back (why says which; the file is kept for another try). */
int limit_state_recover(const char *file, int *owner, FILE *log, char *why, size_t n);
/* Holds file for this process (recovering it first). 0, or -1 with why. */
int limit_state_claim(limit_state *s, const char *file, FILE *log, char *why, size_t n);
/* Records a limit's value before its first change (a second call for the same limit keeps the
 * first value), rewriting the file atomically. 0, or -1 with why: then do not change it. */
int limit_state_save(limit_state *s, power_limit_kind kind, const char *path, double value,
                     char *why, size_t n);
/* Puts every saved limit back, says so on log, and releases the file. Returns how many could not
 * be put back (the file is then kept, for the next start). */
int limit_state_restore(limit_state *s, FILE *log);
/* From a signal handler: writes the saved sysfs limits back (async-signal-safe; NVML's are left
 * to the state file). Returns 1 when some NVML limit is left. */
int limit_state_restore_from_signal(void);

#endif
