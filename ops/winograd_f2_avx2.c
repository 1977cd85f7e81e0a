/* Winograd F(2x2, 3x3)'s transforms, AVX2+FMA build (compiled with -mavx2 -mfma). */
#define ISA avx2
#include "ops/winograd_f2_impl.h"
