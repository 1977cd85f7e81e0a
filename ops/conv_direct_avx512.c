/* Direct and wide convolutions, AVX-512 build. */
#define ISA avx512
#define VEC_BYTES 64
#include "ops/conv_direct_impl.h"
#include "ops/conv_wide_impl.h"
