/* The dense layers' row kernels, AVX2+FMA build (compiled with -mavx2 -mfma). */
#define ISA avx2
#define VEC_BYTES 32
#include "ops/dense_rows_impl.h"
