/* Winograd F(4x4)'s input and output transforms by lanes (winograd_f4_lanes_impl.h), AVX512
 * build: 16 lanes to a register. */
#include "ops/lanes_avx512.h"
#include "ops/winograd_f4_lanes_impl.h"
