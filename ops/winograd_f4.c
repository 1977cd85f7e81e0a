/* Winograd F(4x4, 3x3)'s transforms, baseline SSE build. */
#define ISA portable
#include "ops/winograd_f4_impl.h"
