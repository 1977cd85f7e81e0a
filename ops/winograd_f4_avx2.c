/* Winograd F(4x4, 3x3)'s transforms, AVX2+FMA build (compiled with -mavx2 -mfma). */
#define ISA avx2
#include "ops/winograd_f4_impl.h"
