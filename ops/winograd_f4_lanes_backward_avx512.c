/* Winograd F(4x4)'s output gradient transform and input adjoint by lanes
 * (winograd_f4_lanes_backward_impl.h), AVX-512 build: 16 lanes to a register. */
#include "ops/lanes_avx512.h"
#include "ops/winograd_f4_lanes_backward_impl.h"
