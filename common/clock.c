#include "common/clock.h"

#include <pthread.h>
#include <time.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

int clock_use_tsc;
static double seconds_per_tick = 1e-9;
static pthread_once_t calibrated = PTHREAD_ONCE_INIT;

double clock_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

uint64_t clock_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
/* An invariant TSC ticks at a constant rate across P-states and C-states (CPUID 0x80000007). */
static int tsc_is_invariant(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007)
        return 0;
    __get_cpuid(0x80000007, &a, &b, &c, &d);
    return (d >> 8) & 1;
}
#endif

#if defined(__x86_64__)
/* A (CLOCK_MONOTONIC, TSC) pair read at one instant: the TSC read on both sides of the clock,
 * the narrowest of 16 tries kept. A thread preempted between two reads (a busy machine) would
 * pair them a time slice apart, and a calibration from such a pair can be off tenfold: idle
 * workers would spin ten times longer than they should (likely what a CI test once saw). */
static void read_pair(uint64_t *ns, uint64_t *tsc)
{
    uint64_t narrowest = UINT64_MAX;
    for (int i = 0; i < 16; i++) {
        uint64_t before = __rdtsc(), n = clock_monotonic_ns(), after = __rdtsc();
        if (after - before < narrowest) {
            narrowest = after - before;
            *ns = n, *tsc = before + (after - before) / 2;
        }
    }
}
#endif

static void calibrate(void)
{
#if defined(__x86_64__)
    if (!tsc_is_invariant())
        return;
    /* 5 ms against CLOCK_MONOTONIC gives the rate to well under 0.1%. */
    uint64_t n0 = 0, t0 = 0, n1 = 0, t1 = 0;   /* set by read_pair (GCC -fPIC did not see it) */
    read_pair(&n0, &t0);
    do
        read_pair(&n1, &t1);
    while (n1 - n0 < 5000000);
    if (t1 > t0) {
        seconds_per_tick = 1e-9 * (double)(n1 - n0) / (double)(t1 - t0);
        clock_use_tsc = 1;
    }
#endif
}

void clock_init(void)
{
    pthread_once(&calibrated, calibrate);
}

double clock_ticks_to_s(uint64_t ticks)
{
    pthread_once(&calibrated, calibrate);
    return (double)ticks * seconds_per_tick;
}

const char *clock_source(void)
{
    pthread_once(&calibrated, calibrate);
    return clock_use_tsc ? "tsc" : "monotonic";
}
