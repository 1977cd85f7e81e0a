/* This core's measured single-precision FMA throughput, for "% of peak" figures and for the
 * placement heuristic's device speeds. */
#ifndef FRUGAL_PEAK_H
#define FRUGAL_PEAK_H

#include "ops/cpu.h"

/* GFLOP/s of one core running independent FMAs with the given path, for about `seconds`. */
double ops_peak_gflops(ops_isa isa, double seconds);

/* Per-ISA loops: n iterations of the kernel, returning FLOPs done (and a value to keep). */
double peak_loop_portable(long n, float *sink);
double peak_loop_avx2(long n, float *sink);
double peak_loop_avx512(long n, float *sink);

#endif
