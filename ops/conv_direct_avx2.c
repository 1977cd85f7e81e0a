/* Direct and wide convolutions, AVX2+FMA build (compiled with -mavx2 -mfma). */
#define ISA avx2
#define VEC_BYTES 32
#include "ops/conv_direct_impl.h"
#include "ops/conv_wide_impl.h"
