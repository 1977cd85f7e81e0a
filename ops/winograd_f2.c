/* Winograd F(2x2, 3x3)'s transforms, baseline SSE build. */
#define ISA portable
#include "ops/winograd_f2_impl.h"
