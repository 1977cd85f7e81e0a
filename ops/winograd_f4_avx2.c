/* Winograd F(4x4, 3x3)'s transforms, AVX2+FMA build (compiled with -mavx2 -mfma): the input
 * transform's column half takes 8 tiles' window columns straight out of the transformed rows
 * by 4x4 transposes within 128-bit lanes (winograd_f4_columns_impl.h), where the portable
 * build splits the rows into tile arrays first and reads them back. */
#define ISA avx2
#define F4_OWN_INPUT input_transform_permuted
#include "ops/winograd_f4_impl.h"

#include <immintrin.h>

typedef float v8sf __attribute__((vector_size(32)));

/* Inlined whatever GCC thinks: each caller passes constants that its code is specialised on. */
#define INLINE static inline __attribute__((always_inline))

typedef struct window_index {
    char unused;   /* in-lane shuffles take their order from immediates */
} window_index;

static inline window_index window_index_make(void) { return (window_index){0}; }

/* 4 floats at lo, then 4 at hi. */
static inline __m256 halves(const float *lo, const float *hi)
{
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(lo)), _mm_loadu_ps(hi), 1);
}

/* winograd_f4_columns_impl.h's window columns: tile l's window starts at at[l]; register k
 * holds tiles k and k + 4 (a 128-bit lane each), columns 0 to 3 or 4 to 7, so that a 4x4
 * transpose within lanes gives columns of tiles 0 to 7 in order. */
INLINE void window_columns(const window_index *ix, const float *const s[4], int rows, int x,
                           v8sf c[6])
{
    (void)ix;
    const int per_row = 8 / rows;
    const float *at[8];
#pragma GCC unroll 8
    for (int l = 0; l < 8; l++)
        at[l] = s[l / per_row] + x + 4 * (l % per_row);
    __m256 a[4], b[4];
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        a[k] = halves(at[k], at[k + 4]);
        b[k] = halves(at[k] + 4, at[k + 4] + 4);
    }
    __m256 u0 = _mm256_unpacklo_ps(a[0], a[1]), u1 = _mm256_unpackhi_ps(a[0], a[1]);
    __m256 u2 = _mm256_unpacklo_ps(a[2], a[3]), u3 = _mm256_unpackhi_ps(a[2], a[3]);
    __m256 w0 = _mm256_unpacklo_ps(b[0], b[1]), w2 = _mm256_unpacklo_ps(b[2], b[3]);
    c[0] = (v8sf)_mm256_shuffle_ps(u0, u2, _MM_SHUFFLE(1, 0, 1, 0));
    c[1] = (v8sf)_mm256_shuffle_ps(u0, u2, _MM_SHUFFLE(3, 2, 3, 2));
    c[2] = (v8sf)_mm256_shuffle_ps(u1, u3, _MM_SHUFFLE(1, 0, 1, 0));
    c[3] = (v8sf)_mm256_shuffle_ps(u1, u3, _MM_SHUFFLE(3, 2, 3, 2));
    c[4] = (v8sf)_mm256_shuffle_ps(w0, w2, _MM_SHUFFLE(1, 0, 1, 0));
    c[5] = (v8sf)_mm256_shuffle_ps(w0, w2, _MM_SHUFFLE(3, 2, 3, 2));
}

/* The first n of 8 values. */
static inline void store_tiles8(float *p, v8sf v, int n)
{
    if (n == 8) {
        _mm256_storeu_ps(p, (__m256)v);
        return;
    }
    __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_ps(p, keep, (__m256)v);
}

#include "ops/winograd_f4_columns_impl.h"
