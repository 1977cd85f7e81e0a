/* The one monotonic clock every module reads: clock_now_s() for intervals in seconds, and cheap
 * timestamps for timing every task (the TSC where it is invariant, else CLOCK_MONOTONIC). */
#ifndef FRUGAL_CLOCK_H
#define FRUGAL_CLOCK_H

#include <stdint.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

extern int clock_use_tsc;
uint64_t clock_monotonic_ns(void);

/* Calibrates once; call before clock_ticks (rt_create does). Safe to call again. */
void clock_init(void);

/* Ticks since an arbitrary origin; convert with clock_ticks_to_s(). */
static inline uint64_t clock_ticks(void)
{
#if defined(__x86_64__)
    if (clock_use_tsc)
        return __rdtsc();
#endif
    return clock_monotonic_ns();
}

double clock_ticks_to_s(uint64_t ticks);
/* Monotonic seconds, for coarse intervals. */
double clock_now_s(void);
/* "tsc" or "monotonic": which source clock_ticks() reads. */
const char *clock_source(void);

#endif
