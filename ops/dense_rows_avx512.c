/* The dense layers' row kernels, AVX-512 build. */
#define ISA avx512
#define VEC_BYTES 64
#include "ops/dense_rows_impl.h"
