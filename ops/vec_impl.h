/* The float vector of the width a file is compiled for, and its loads, stores and broadcast:
 * included by the kernels compiled once per instruction set (conv_direct_impl.h,
 * dense_rows_impl.h), with VEC_BYTES set to 16, 32 or 64: once per translation unit, hence
 * no include guard. */
#include <immintrin.h>
#include <string.h>

typedef float vf __attribute__((vector_size(VEC_BYTES)));

static inline vf vload(const float *p)
{
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void vstore(float *p, vf v) { memcpy(p, &v, sizeof v); }

/* x in every lane, a broadcast load where x is in memory. Not (vf){0} + x: GCC kept that
 * addition (0 + x is not x for x = -0), then broadcast from a register, an add and a shuffle
 * per weight on pipes the FMAs need. */
static inline vf vsplat(float x)
{
#if VEC_BYTES >= 64
    __m512 v = _mm512_set1_ps(x);
#elif VEC_BYTES >= 32
    __m256 v = _mm256_set1_ps(x);
#else
    __m128 v = _mm_set1_ps(x);
#endif
    vf r;
    memcpy(&r, &v, sizeof r);
    return r;
}
