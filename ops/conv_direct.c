/* Direct and wide convolutions, baseline SSE2 build. */
#define ISA portable
#define VEC_BYTES 16
#include "ops/conv_direct_impl.h"
#include "ops/conv_wide_impl.h"
