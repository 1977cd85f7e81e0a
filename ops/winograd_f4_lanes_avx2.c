/* Winograd F(4x4)'s input and output transforms by lanes (winograd_f4_lanes_impl.h), AVX2
 * build: 8 lanes to a register. */
#include "ops/lanes_avx2.h"
#include "ops/winograd_f4_lanes_impl.h"
