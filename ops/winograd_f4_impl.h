/* Winograd F(4x4, 3x3)'s transforms (winograd_tiling.h), at the points 0, +-1, +-2 and
 * infinity (Lavin and Gray's matrices): a 6x6 input window d and a 3x3 filter g give the 4x4
 * outputs A^T [(G g G^T) . (B^T d B)] A; 36 multiplies per 16 outputs instead of 144. Tile q of
 * a row reads input columns 4q .. 4q + 5. Each transform applies its matrix to rows, then to
 * columns, with the matrix written out as sums (BT6, AT6, A6, B6: winograd_f4_matrices.h).
 *
 * Included by winograd_f4.c (baseline SSE), winograd_f4_avx2.c and winograd_f4_avx512.c with
 * ISA set to the suffix of the variant to define. The transforms' arithmetic runs over a
 * block's tiles (tile_array), so wider vectors pay: AVX2 made training 8-15% faster than SSE;
 * 512-bit loops were slower than AVX2's (./build.sh bench ops, bench train), and the AVX-512
 * variant keeps 256-bit loops but for its own input transform (winograd_f4_avx512.c). */
#include "ops/winograd_f4_matrices.h"
#include "ops/winograd_tiling.h"

#include <emmintrin.h>   /* SSE2, baseline x86-64: 4x4 transposes between rows and tiles */
#include <string.h>

#define NAME2(a, b) a##_##b
#define NAME(a, b) NAME2(a, b)

/* cols[k][q] = s[4q + k] for k < 6 and q < tw: a padded row of 4 tw + 2 values split into its
 * tiles' window columns (tile q reads columns 4q .. 4q + 5, so neighbours share 2), four tiles
 * at a time by a 4x4 transpose in SSE registers: one value at a time, the split took half of
 * the input transform (perf). Columns 4 and 5 are the next tile's 0 and 1. */
static inline void split_windows(const float *s, int tw, float *const cols[6])
{
    int q = 0;
    for (; q + 4 <= tw; q += 4) {
        const float *p = s + 4 * q;
        __m128 c0 = _mm_loadu_ps(p), c1 = _mm_loadu_ps(p + 4);
        __m128 c2 = _mm_loadu_ps(p + 8), c3 = _mm_loadu_ps(p + 12);
        double two;   /* p[16], p[17]: a memcpy, as they need not be 8-byte aligned */
        memcpy(&two, p + 16, sizeof two);
        __m128 next = _mm_castpd_ps(_mm_set_sd(two));
        _MM_TRANSPOSE4_PS(c0, c1, c2, c3);
        __m128 t4 = _mm_shuffle_ps(c0, next, _MM_SHUFFLE(0, 0, 3, 3));   /* c0[3], next[0] */
        __m128 t5 = _mm_shuffle_ps(c1, next, _MM_SHUFFLE(1, 1, 3, 3));   /* c1[3], next[1] */
        _mm_storeu_ps(cols[0] + q, c0);
        _mm_storeu_ps(cols[1] + q, c1);
        _mm_storeu_ps(cols[2] + q, c2);
        _mm_storeu_ps(cols[3] + q, c3);
        _mm_storeu_ps(cols[4] + q, _mm_shuffle_ps(c0, t4, _MM_SHUFFLE(2, 0, 2, 1)));
        _mm_storeu_ps(cols[5] + q, _mm_shuffle_ps(c1, t5, _MM_SHUFFLE(2, 0, 2, 1)));
    }
    for (; q < tw; q++)
        for (int k = 0; k < 6; k++)
            cols[k][q] = s[4 * q + k];
}

/* The inverse of split_windows, overlaps summed: line[x] = the sum over the tiles' windows that
 * hold column x, for x < 4 tw + 2, from w[k][q] (column k of tile q's window). */
static inline void join_windows(const float *const w[6], int tw, float *line)
{
    int q = 0;
    for (; q + 4 <= tw; q += 4) {   /* columns 0 and 1 of tile q add columns 4 and 5 of q - 1 */
        __m128 prev4 = _mm_loadu_ps(w[4] + q - (q > 0)), prev5 = _mm_loadu_ps(w[5] + q - (q > 0));
        if (q == 0) {   /* no tile before: shift in a zero */
            prev4 = _mm_castsi128_ps(_mm_slli_si128(_mm_castps_si128(prev4), 4));
            prev5 = _mm_castsi128_ps(_mm_slli_si128(_mm_castps_si128(prev5), 4));
        }
        __m128 c0 = _mm_add_ps(_mm_loadu_ps(w[0] + q), prev4);
        __m128 c1 = _mm_add_ps(_mm_loadu_ps(w[1] + q), prev5);
        __m128 c2 = _mm_loadu_ps(w[2] + q), c3 = _mm_loadu_ps(w[3] + q);
        _MM_TRANSPOSE4_PS(c0, c1, c2, c3);
        _mm_storeu_ps(line + 4 * q, c0);
        _mm_storeu_ps(line + 4 * q + 4, c1);
        _mm_storeu_ps(line + 4 * q + 8, c2);
        _mm_storeu_ps(line + 4 * q + 12, c3);
    }
    for (; q < tw; q++)
        for (int k = 0; k < 4; k++)
            line[4 * q + k] = w[k][q] + (k < 2 && q > 0 ? w[k + 4][q - 1] : 0.0f);
    line[4 * tw] = w[4][tw - 1], line[4 * tw + 1] = w[5][tw - 1];
}

/* The row half of the input transform for tile row r of channel c: s[i][lo .. hi) = (B^T
 * d)[i], d its 6 input rows (b's zeros outside the image; bytes converted in b's rows), the
 * columns of the padded rows that hold input; the others stay as they are (zeros). */
static inline void row_transform(const tiling *t, const conv_input *x, const winograd_rows *b,
                                 float *const s[6], int c, int r)
{
    int n = r / t->th, y0 = 4 * (r % t->th) - t->g->pad, lo = b->lo;
    const float *d[6];
    for (int i = 0; i < 6; i++)
        d[i] = winograd_input_row(t, *x, n, c, y0 + i, b->zeros, b->tmp[i]);
    float *s0 = s[0] + lo, *s1 = s[1] + lo, *s2 = s[2] + lo, *s3 = s[3] + lo;
    float *s4 = s[4] + lo, *s5 = s[5] + lo;
#pragma omp simd
    for (int j = 0; j < b->hi - lo; j++) {
        float in[6] = {d[0][j], d[1][j], d[2][j], d[3][j], d[4][j], d[5][j]}, o[6];
        BT6(in, o);
        s0[j] = o[0], s1[j] = o[1], s2[j] = o[2], s3[j] = o[3], s4[j] = o[4], s5[j] = o[5];
    }
}

#ifdef F4_OWN_INPUT   /* the including file has its own (winograd_f4_avx512.c) */
static void F4_OWN_INPUT(const tiling *t, conv_input x, float *V, float *rows);
#define F4_INPUT F4_OWN_INPUT
#else
#define F4_INPUT input_transform
#endif

/* V[p][c][col] = (B^T d B)[p] for every channel and tile of the block: rows first
 * (row_transform); then each row of a tile row is split by column into cols[i][k][col] (row
 * i, column 4q + k of tile col), and the tiles' columns are transformed all at once. rows: 13
 * row buffers, 36 tile arrays. */
static void input_transform(const tiling *t, conv_input x, float *V, float *rows)
{
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)g->c * t->cols);   /* from one point to the next */
    winograd_rows b = ops_winograd_rows_init(t, rows, 6);
    float *cols[6][6];
    for (int i = 0; i < 6; i++)
        for (int k = 0; k < 6; k++)
            cols[i][k] = tile_array(t, rows, 6 * i + k);
    for (int c = 0; c < g->c; c++) {
        for (int r = t->r0; r < t->r1; r++) {
            row_transform(t, &x, &b, b.s, c, r);
            size_t at = (size_t)(r - t->r0) * t->tw;
            for (int i = 0; i < 6; i++) {
                float *const row_cols[6] = {cols[i][0] + at, cols[i][1] + at, cols[i][2] + at,
                                            cols[i][3] + at, cols[i][4] + at, cols[i][5] + at};
                split_windows(b.s[i], t->tw, row_cols);
            }
        }
        float *v = V + (size_t)c * t->cols;
        for (int i = 0; i < 6; i++) {
            float *v0 = v + 6 * i * plane;
            float *const *ci = cols[i];
#pragma omp simd
            for (int q = 0; q < t->tiles; q++) {
                float in[6] = {ci[0][q], ci[1][q], ci[2][q], ci[3][q], ci[4][q], ci[5][q]}, o[6];
                BT6(in, o);
#pragma GCC unroll 6
                for (int k = 0; k < 6; k++)
                    v0[k * plane + q] = o[k];
            }
        }
    }
}

/* Tile q's 4x4 outputs A^T m A into o[4][4], m its 36 points (plane apart) from m[q], for
 * winograd_output_impl.h. A macro: as a function, inlined or not, the loops around it did not
 * vectorise. */
#define TILE_OUTPUTS(m, plane, q, o)                                                          \
    do {                                                                                      \
        float s_[6][4];                                                                       \
        _Pragma("GCC unroll 6") for (int i_ = 0; i_ < 6; i_++) { /* m A: rows' columns */    \
            float in_[6];                                                                     \
            _Pragma("GCC unroll 6") for (int k_ = 0; k_ < 6; k_++)                            \
                in_[k_] = (m)[(6 * i_ + k_) * (plane) + (q)];                                 \
            AT6(in_, s_[i_]);                                                                 \
        }                                                                                     \
        _Pragma("GCC unroll 4") for (int k_ = 0; k_ < 4; k_++) { /* A^T (m A): rows */       \
            float in_[6] = {s_[0][k_], s_[1][k_], s_[2][k_], s_[3][k_], s_[4][k_], s_[5][k_]}; \
            float c_[4];                                                                      \
            AT6(in_, c_);                                                                     \
            _Pragma("GCC unroll 4") for (int a_ = 0; a_ < 4; a_++)(o)[a_][k_] = c_[a_];       \
        }                                                                                     \
    } while (0)

#define TILE_M 4
#include "ops/winograd_output_impl.h"

/* p[0 .. n), zeros after: 4 values past a row's end without reading there (and without a copy
 * through memory, whose loads stalled on its stores). */
static inline __m128 load_upto4(const float *p, int n)
{
    if (n >= 4)
        return _mm_loadu_ps(p);
    return n <= 0 ? _mm_setzero_ps()
                  : _mm_setr_ps(p[0], n > 1 ? p[1] : 0.0f, n > 2 ? p[2] : 0.0f, 0.0f);
}

static inline __m128i load_upto4i(const int32_t *p, int n)
{
    if (n >= 4)
        return _mm_loadu_si128((const __m128i *)p);
    return n <= 0 ? _mm_setzero_si128()
                  : _mm_setr_epi32(p[0], n > 1 ? p[1] : 0, n > 2 ? p[2] : 0, 0);
}

/* out[k][q .. q + 4) = ck, as far as tile tw: 4 stores past it would spill into the next
 * tile row. */
static inline void store_tiles(float *const out[4], int q, int tw, __m128 c0, __m128 c1,
                               __m128 c2, __m128 c3)
{
    if (q + 4 <= tw) {
        _mm_storeu_ps(out[0] + q, c0);
        _mm_storeu_ps(out[1] + q, c1);
        _mm_storeu_ps(out[2] + q, c2);
        _mm_storeu_ps(out[3] + q, c3);
        return;
    }
    float part[4][4];
    _mm_storeu_ps(part[0], c0);
    _mm_storeu_ps(part[1], c1);
    _mm_storeu_ps(part[2], c2);
    _mm_storeu_ps(part[3], c3);
    for (int k = 0; k < 4; k++)
        memcpy(out[k] + q, part[k], sizeof(float) * (size_t)(tw - q));
}

/* dy[0 .. n), zeros after, through the relu whose output is ry (unless NULL): dy where ry > 0,
 * else 0, as relu_backward gives. */
static inline __m128 load_upto4_through(const float *dy, const float *ry, int n)
{
    __m128 d = load_upto4(dy, n);
    return ry ? _mm_and_ps(_mm_cmpgt_ps(load_upto4(ry, n), _mm_setzero_ps()), d) : d;
}

/* out[k][q] = row[4q + k] for q < tw, zero past the output's width ow: a row of output
 * gradients (through its relu, relu_y not NULL) split by column modulo 4, four tiles at a time
 * by 4x4 transposes. */
static void split_gradient_row(const float *row, const float *relu_y, int ow, int tw,
                               float *const out[4])
{
    for (int q = 0; q < tw; q += 4) {
        int x = 4 * q, left = ow - x;
        const float *ry = relu_y ? relu_y + x : NULL;
        __m128 c0 = load_upto4_through(row + x, ry, left);
        __m128 c1 = load_upto4_through(row + x + 4, ry ? ry + 4 : NULL, left - 4);
        __m128 c2 = load_upto4_through(row + x + 8, ry ? ry + 8 : NULL, left - 8);
        __m128 c3 = load_upto4_through(row + x + 12, ry ? ry + 12 : NULL, left - 12);
        _MM_TRANSPOSE4_PS(c0, c1, c2, c3);
        store_tiles(out, q, tw, c0, c1, c2, c3);
    }
}

/* v where argmax a is x, else 0. */
static inline __m128 at_argmax(__m128i a, __m128i x, __m128 v)
{
    return _mm_and_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(a, x)), v);
}

/* The same from the pooled gradient (through its relu, if any): column x = 4q + k of the
 * output row is in window x / 2 of r, and gets its gradient where its argmax is x (numbered
 * from r.first); pw windows. Four tiles at a time: their 8 windows' even and odd ones split,
 * then compared. */
static void unpool_gradient_row(gradient_row r, int pw, int tw, float *const out[4])
{
    const __m128i one = _mm_set1_epi32(1);
    for (int q = 0; q < tw; q += 4) {
        int left = pw - 2 * q;
        const float *ry = r.relu_y ? r.relu_y + 2 * q : NULL;
        __m128 d0 = load_upto4_through(r.dy + 2 * q, ry, left);
        __m128 d1 = load_upto4_through(r.dy + 2 * q + 4, ry ? ry + 4 : NULL, left - 4);
        __m128 a0 = _mm_castsi128_ps(load_upto4i(r.argmax + 2 * q, left));
        __m128 a1 = _mm_castsi128_ps(load_upto4i(r.argmax + 2 * q + 4, left - 4));
        __m128 d_even = _mm_shuffle_ps(d0, d1, _MM_SHUFFLE(2, 0, 2, 0));
        __m128 d_odd = _mm_shuffle_ps(d0, d1, _MM_SHUFFLE(3, 1, 3, 1));
        __m128i a_even = _mm_castps_si128(_mm_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0)));
        __m128i a_odd = _mm_castps_si128(_mm_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1)));
        __m128i x0 = _mm_add_epi32(_mm_set1_epi32(r.first + 4 * q), _mm_setr_epi32(0, 4, 8, 12));
        __m128i x2 = _mm_add_epi32(x0, _mm_add_epi32(one, one));
        store_tiles(out, q, tw, at_argmax(a_even, x0, d_even),
                    at_argmax(a_even, _mm_add_epi32(x0, one), d_even),
                    at_argmax(a_odd, x2, d_odd), at_argmax(a_odd, _mm_add_epi32(x2, one), d_odd));
    }
}

/* Output row oy of filter f of sample n as its tiles' columns: out[k][q] = column 4q + k. */
static void load_gradient_row(const tiling *t, const winograd_grad *dy, int n, int f, int oy,
                              float *const out[4])
{
    gradient_row r = winograd_gradient_row(t, dy, n, f, oy);
    if (!r.dy)
        for (int k = 0; k < 4; k++)
            memset(out[k], 0, sizeof(float) * (size_t)t->tw);
    else if (r.argmax)
        unpool_gradient_row(r, dy->pool->ow, t->tw, out);
    else
        split_gradient_row(r.dy, r.relu_y, t->g->ow, t->tw, out);
}

/* s[0] + ... + s[n - 1] in a fixed order, whatever the build: 8 lanes of partial sums, then
 * pairs. So that every build's bias gradients have the same bits (the AVX-512 one sums its
 * tiles in groups of its own: winograd_f4_avx512.c). */
static inline float tile_sum(const float *s, int n)
{
    typedef float v8 __attribute__((vector_size(32)));
    v8 acc = {0}, v;
    int q = 0;
    for (; q + 8 <= n; q += 8) {
        memcpy(&v, s + q, sizeof v);
        acc += v;
    }
    float tail[8] = {0};
    memcpy(tail, s + q, sizeof(float) * (size_t)(n - q));
    memcpy(&v, tail, sizeof v);
    acc += v;
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* D[p][f - f0][col] = (A e A^T)[p], e the 4x4 block of output gradients of a tile (zero past
 * the output's edge), for filters [f0, f1): a filter's tiles are gathered into e[a][k][col]
 * (row a, column 4q + k of tile col), then transformed all at once (and each tile's sum kept,
 * for dbias). */
static void gradient_transform(const tiling *t, const winograd_grad *dy, int f0, int f1,
                               float *D, float *dbias, float *rows)
{
    size_t plane = plane_of((size_t)(f1 - f0) * t->cols);
    float *e[4][4], *sums = tile_array(t, rows, 16);
    for (int a = 0; a < 4; a++)
        for (int k = 0; k < 4; k++)
            e[a][k] = tile_array(t, rows, 4 * a + k);
    for (int f = f0; f < f1; f++) {
        for (int r = t->r0; r < t->r1; r++) {
            size_t at = (size_t)(r - t->r0) * t->tw;
            for (int a = 0; a < 4; a++) {
                float *const tile_row[4] = {e[a][0] + at, e[a][1] + at, e[a][2] + at,
                                            e[a][3] + at};
                load_gradient_row(t, dy, r / t->th, f, 4 * (r % t->th) + a, tile_row);
            }
        }
        float *d = D + (size_t)(f - f0) * t->cols;
#pragma omp simd
        for (int q = 0; q < t->tiles; q++) {
            float a[6][4];
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) {   /* A e: rows */
                float in[4] = {e[0][k][q], e[1][k][q], e[2][k][q], e[3][k][q]}, o[6];
                A6(in, o);
#pragma GCC unroll 6
                for (int i = 0; i < 6; i++)
                    a[i][k] = o[i];
            }
            sums[q] = (a[1][0] + a[1][1]) + (a[1][2] + a[1][3]);   /* row sums: A's row 1 */
#pragma GCC unroll 6
            for (int i = 0; i < 6; i++) {   /* (A e) A^T: columns */
                float o[6];
                A6(a[i], o);
#pragma GCC unroll 6
                for (int k = 0; k < 6; k++)
                    d[(6 * i + k) * plane + q] = o[k];
            }
        }
        if (dbias)
            dbias[f - f0] += tile_sum(sums, t->tiles);
    }
}

/* dx = the sum of B z B^T of each tile of Z[p][c][col] over the tiles whose 6x6 windows hold
 * it: a channel's tiles are transformed all at once into win[i][k][col] (row i, column 4q + k
 * of tile col's window), then each tile row's windows are summed row by row (neighbours overlap
 * by 2 columns) into dx (winograd_store_input_row). rows: a row buffer, 36 tile arrays. */
static void input_adjoint(const tiling *t, const float *Z, float *dx, float *rows)
{
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)g->c * t->cols);
    float *win[6][6], *line = rows;
    for (int i = 0; i < 6; i++)
        for (int k = 0; k < 6; k++)
            win[i][k] = tile_array(t, rows, i * 6 + k);
    for (int c = 0; c < g->c; c++) {
        const float *z = Z + (size_t)c * t->cols;
#pragma omp simd
        for (int q = 0; q < t->tiles; q++)
            WINDOW_ADJOINT(z, plane, q, win);
        for (int r = t->r0; r < t->r1; r++) {
            size_t at = (size_t)(r - t->r0) * t->tw;
            for (int i = 0, y; i < 6; i++) {
                if (!winograd_window_row(t, r, i, &y))
                    continue;
                const float *const wi[6] = {win[i][0] + at, win[i][1] + at, win[i][2] + at,
                                            win[i][3] + at, win[i][4] + at, win[i][5] + at};
                join_windows(wi, t->tw, line);
                winograd_store_input_row(t, dx, c, r, i, y, line);
            }
        }
    }
}

#ifdef F4_OWN_ADJOINT   /* the including file has its own (winograd_f4_avx512.c) */
static void F4_OWN_ADJOINT(const tiling *t, const float *Z, float *dx, float *rows);
#define F4_ADJOINT F4_OWN_ADJOINT
#else
#define F4_ADJOINT input_adjoint
#endif

#ifdef F4_OWN_OUTPUT   /* the including file has its own (winograd_f4_avx512.c) */
static void F4_OWN_OUTPUT(const tiling *t, const float *M, const float *bias,
                          const winograd_out *o, int f0, int f1, float *rows);
#define F4_OUTPUT F4_OWN_OUTPUT
#else
#define F4_OUTPUT output_transform
#endif

#ifdef F4_OWN_GRADIENT   /* the including file has its own (winograd_f4_avx512.c) */
static void F4_OWN_GRADIENT(const tiling *t, const winograd_grad *dy, int f0, int f1, float *D,
                            float *dbias, float *rows);
#define F4_GRADIENT F4_OWN_GRADIENT
#else
#define F4_GRADIENT gradient_transform
#endif

const winograd_variant NAME(winograd_f4, ISA) = {
    .m = 4,
    .G = F4_G,
    .input = F4_INPUT,
    .output = F4_OUTPUT,
    .gradient = F4_GRADIENT,
    .input_adjoint = F4_ADJOINT,
};
