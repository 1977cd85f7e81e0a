/* Winograd F(4x4, 3x3)'s transforms, AVX-512 build: the AVX2 build's (256-bit loops, which
 * measured faster than 512-bit ones here: Makefile), except the column half of the input
 * transform. The AVX2 build splits each transformed row into tile arrays (4x4 SSE transposes),
 * then reads them back to transform the columns; here two-register permutes (vpermt2ps) take 8
 * tiles' window columns straight out of the row, and the 36 points go straight into V.
 * Compiled with AVX-512 flags. */
#define ISA avx512
#define F4_OWN_INPUT input_transform_permuted
#include "ops/winograd_f4_impl.h"

#include <immintrin.h>

typedef float v8sf __attribute__((vector_size(32)));

/* Inlined whatever GCC thinks: each caller passes constants that its code is specialised on. */
#define INLINE static inline __attribute__((always_inline))

/* Lanes 0 to 7: column 4l + m of the 32 values a register pair holds (lanes 8 to 15 unused). */
static inline __m512i window_column(int m)
{
    return _mm512_add_epi32(
        _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0),
        _mm512_set1_epi32(m));
}

/* Values [x, x + 16) of a transformed row, and [x + 4, x + 20) (the windows' columns 4 and 5
 * are the next tile's 0 and 1). */
INLINE void pair16(const float *s, int x, __m512 *at, __m512 *after)
{
    __m512 a = _mm512_loadu_ps(s + x), b = _mm512_loadu_ps(s + x + 16);
    *at = a;
    *after = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(b),
                                                     _mm512_castps_si512(a), 4));
}

/* 8 tiles into V at v (n <= 8 of them stored), from window row i's transformed rows: 8 tiles
 * of one tile row from column x of s[0] (rows 1), or whole tile rows of 4 or 2 tiles, s[j] of
 * tile row j (rows 2 or 4). Register pairs hold tile l's window column m (m < 4) at value
 * 4l + m, and the same from column 4 on; permutes take the 6 columns out; then B, and the 6
 * points stored. */
INLINE void column_half(const float *const s[4], int rows, int x, float *v, size_t plane, int n,
                        const __m512i col[4])
{
    __m512 p[4];   /* the pair from column 0, the pair from column 4 */
    if (rows == 1) {
        pair16(s[0], x, &p[0], &p[2]);
        pair16(s[0], x + 16, &p[1], &p[3]);
    } else if (rows == 2) {
        pair16(s[0], 0, &p[0], &p[2]);
        pair16(s[1], 0, &p[1], &p[3]);
    } else {   /* two tile rows' 8 values per register */
        __m512 a[4], b[4];
        for (int j = 0; j < 4; j++)
            pair16(s[j], 0, &a[j], &b[j]);
        p[0] = _mm512_shuffle_f32x4(a[0], a[1], _MM_SHUFFLE(1, 0, 1, 0));
        p[1] = _mm512_shuffle_f32x4(a[2], a[3], _MM_SHUFFLE(1, 0, 1, 0));
        p[2] = _mm512_shuffle_f32x4(b[0], b[1], _MM_SHUFFLE(1, 0, 1, 0));
        p[3] = _mm512_shuffle_f32x4(b[2], b[3], _MM_SHUFFLE(1, 0, 1, 0));
    }
    v8sf c[6], o[6];
#pragma GCC unroll 6
    for (int m = 0; m < 6; m++)
        c[m] = (v8sf)_mm512_castps512_ps256(
            _mm512_permutex2var_ps(p[m < 4 ? 0 : 2], col[m % 4], p[m < 4 ? 1 : 3]));
    BT6(c, o);
    __mmask8 keep = (__mmask8)((1u << n) - 1);
#pragma GCC unroll 6
    for (int k = 0; k < 6; k++)
        _mm256_mask_storeu_ps(v + k * plane, keep, (__m256)o[k]);
}

/* V[p][c][col] = (B^T d B)[p] for every channel and tile of the block: per group of tile rows
 * (one, or 2 of 4 tiles, or 4 of 2) the row half (row_transform) into row buffers, then the
 * column half 8 tiles at a time. Rows of 1 tile as the AVX2 build does. rows: 13 row buffers,
 * then the other groups' in the tile arrays' place. */
static void input_transform_permuted(const tiling *t, conv_input x, float *V, float *rows)
{
    int tw = t->tw, group = tw == 4 ? 2 : tw == 2 ? 4 : 1;
    if (tw == 1) {
        input_transform(t, x, V, rows);
        return;
    }
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)g->c * t->cols);   /* from one point to the next */
    const __m512i col[4] = {window_column(0), window_column(1), window_column(2),
                            window_column(3)};
    winograd_rows b = ops_winograd_rows_init(t, rows, 6);
    int stride = t->row_len + 32;   /* the loads reach 32 past: garbage there, not used */
    float *s[4][6];   /* s[j][i]: row i of tile row j of the group */
    for (int j = 0; j < group; j++)
        for (int i = 0; i < 6; i++) {
            s[j][i] = j ? tile_array(t, rows, 0) + (size_t)(6 * j + i) * stride : b.s[i];
            if (j)   /* the padding columns */
                memcpy(s[j][i], b.s[i], sizeof(float) * (size_t)t->row_len);
        }
    for (int c = 0; c < g->c; c++)
        for (int r = t->r0; r < t->r1; r += group) {
            for (int j = 0; j < group; j++)   /* past the block: tile row r again, not stored */
                row_transform(t, &x, &b, s[j], c, r + j < t->r1 ? r + j : r);
            float *v = V + (size_t)c * t->cols + (size_t)(r - t->r0) * tw;
            int left = (t->r1 - r) * tw < 8 ? (t->r1 - r) * tw : 8;
            for (int i = 0; i < 6; i++) {
                const float *const si[4] = {s[0][i], s[group > 1][i], s[group > 2 ? 2 : 0][i],
                                            s[group > 2 ? 3 : 0][i]};
                float *vi = v + 6 * i * plane;
                if (group == 2)   /* constants, so that each gets code of its own */
                    column_half(si, 2, 0, vi, plane, left, col);
                else if (group == 4)
                    column_half(si, 4, 0, vi, plane, left, col);
                else
                    for (int q = 0; q < tw; q += 8)
                        column_half(si, 1, 4 * q, vi + q, plane, tw - q < 8 ? tw - q : 8, col);
            }
        }
}
