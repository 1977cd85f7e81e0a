/* Winograd F(4x4, 3x3)'s transforms, AVX2+FMA build (compiled with -mavx2 -mfma): the input
 * transform's column half takes 8 tiles' window columns straight out of the transformed rows
 * by 4x4 transposes within 128-bit lanes, and the input adjoint puts 8 tiles' windows back
 * into their rows the same way (winograd_f4_columns_impl.h), where the portable build goes
 * through tile arrays. */
#define ISA avx2
#define F4_OWN_INPUT input_transform_permuted
#define F4_OWN_ADJOINT input_adjoint_permuted
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

typedef struct line_index {
    int stride;   /* from a group's tile row's line to the next's */
} line_index;

static inline line_index line_index_make(int per_row, int stride)
{
    (void)per_row;   /* window_lines_store takes it as a constant */
    return (line_index){stride};
}

/* Values 0 to 3 of lo's 128-bit lane l, then of hi's: one tile of each. */
INLINE __m256 lanes_of(__m256 lo, __m256 hi, int l)
{
    return l ? _mm256_permute2f128_ps(lo, hi, 0x31) : _mm256_permute2f128_ps(lo, hi, 0x20);
}

/* The 2 floats of v's lane l at p: a tile's columns 4 and 5, where the tile row's line ends. */
INLINE void store_end(float *p, __m256 v, int l)
{
    _mm_storel_pi((__m64 *)p, l ? _mm256_extractf128_ps(v, 1) : _mm256_castps256_ps128(v));
}

/* winograd_f4_columns_impl.h's window rows into their lines, the inverse of window_columns:
 * a 4x4 transpose within lanes turns the columns 0 to 3 back into a[k] (tiles k and k + 4,
 * a lane each), columns 4 and 5 into b[k] (zeros after them); a tile's 4 positions take its
 * a plus the tile before's b (+ 0 for a row's first tile, as input_adjoint adds), stored 8
 * positions at a time, and a tile row's last tile's b ends its line. Tiles past n zeroed. */
INLINE void window_lines_store(const line_index *li, v8sf o[6][6], int n, int rows,
                               float *const line[6], int at, int join)
{
    const __m256 zero = _mm256_setzero_ps();
    const __m256 keep = _mm256_castsi256_ps(
        _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++) {
        __m256 c[6];
#pragma GCC unroll 6
        for (int k = 0; k < 6; k++)
            c[k] = n == 8 ? (__m256)o[i][k] : _mm256_and_ps((__m256)o[i][k], keep);
        __m256 t0 = _mm256_unpacklo_ps(c[0], c[1]), t1 = _mm256_unpackhi_ps(c[0], c[1]);
        __m256 t2 = _mm256_unpacklo_ps(c[2], c[3]), t3 = _mm256_unpackhi_ps(c[2], c[3]);
        __m256 t4 = _mm256_unpacklo_ps(c[4], c[5]), t5 = _mm256_unpackhi_ps(c[4], c[5]);
        __m256 a[4] = {_mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)),
                       _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2)),
                       _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)),
                       _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2))};
        __m256 b[4] = {
            _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t4), _mm256_setzero_pd())),
            _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t4), _mm256_setzero_pd())),
            _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t5), _mm256_setzero_pd())),
            _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t5), _mm256_setzero_pd()))};
        float *out = line[i] + at;
        __m256 p[4];
        if (rows == 1) {   /* tiles 0 to 7 of one row; tile 4 follows tile 3 (b[3]'s lane 0) */
            __m128 before = _mm_setzero_ps();   /* the group before's last columns 4 and 5 */
            if (join) {
                double two;
                memcpy(&two, out, sizeof two);
                before = _mm_castpd_ps(_mm_set_sd(two));
            }
            p[0] = _mm256_add_ps(a[0], _mm256_insertf128_ps(_mm256_castps128_ps256(before),
                                                            _mm256_castps256_ps128(b[3]), 1));
            p[1] = _mm256_add_ps(a[1], b[0]);
            p[2] = _mm256_add_ps(a[2], b[1]);
            p[3] = _mm256_add_ps(a[3], b[2]);
            _mm256_storeu_ps(out, lanes_of(p[0], p[1], 0));
            _mm256_storeu_ps(out + 8, lanes_of(p[2], p[3], 0));
            _mm256_storeu_ps(out + 16, lanes_of(p[0], p[1], 1));
            _mm256_storeu_ps(out + 24, lanes_of(p[2], p[3], 1));
            store_end(out + 32, b[3], 1);
        } else if (rows == 2) {   /* tiles 0 to 3 on one tile row's line, 4 to 7 on the next */
            p[0] = _mm256_add_ps(a[0], zero);
            p[1] = _mm256_add_ps(a[1], b[0]);
            p[2] = _mm256_add_ps(a[2], b[1]);
            p[3] = _mm256_add_ps(a[3], b[2]);
#pragma GCC unroll 2
            for (int j = 0; j < 2; j++) {
                float *row = out + (size_t)j * li->stride;
                _mm256_storeu_ps(row, lanes_of(p[0], p[1], j));
                _mm256_storeu_ps(row + 8, lanes_of(p[2], p[3], j));
                store_end(row + 16, b[3], j);
            }
        } else {   /* 2 tiles a tile row: 0 1, 2 3 in lane 0; 4 5, 6 7 in lane 1 */
            p[0] = _mm256_add_ps(a[0], zero);
            p[1] = _mm256_add_ps(a[1], b[0]);
            p[2] = _mm256_add_ps(a[2], zero);
            p[3] = _mm256_add_ps(a[3], b[2]);
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                float *row = out + (size_t)j * li->stride;
                int l = j / 2, second = j % 2;   /* the lane; tiles 2 3 (6 7) */
                _mm256_storeu_ps(row, lanes_of(p[2 * second], p[2 * second + 1], l));
                store_end(row + 8, b[2 * second + 1], l);
            }
        }
    }
}

#include "ops/winograd_f4_columns_impl.h"
