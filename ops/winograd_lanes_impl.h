/* What the channel-lanes transforms share (winograd_f4_lanes_impl.h, forward;
 * winograd_f4_lanes_backward_impl.h): a pixel's 16 channels (filters) side by side in memory,
 * taken VL to a register (16 on AVX-512, 8 on AVX2: the ISA's lanes header, included first,
 * lanes_avx512.h or lanes_avx2.h), moved in and out of NCHW rows by 16 x 16 transposes, or read
 * and written as they are where the activations are in channel lanes themselves (conv_geom's
 * in_lanes, out_lanes). A transform's arithmetic on a pixel runs once per VL of its lanes. */
#ifndef FRUGAL_WINOGRAD_LANES_IMPL_H
#define FRUGAL_WINOGRAD_LANES_IMPL_H

#include "ops/winograd_f4_matrices.h"
#include "ops/winograd_tiling.h"

#include <stdint.h>
#include <string.h>

/* The four transforms of this ISA's build (one file has the forward pair, another the
 * backward: each sees the other's), gathered in its variant (winograd_tiling.h) at the end of
 * winograd_f4_lanes_backward_impl.h. */
void LANES_ISA(winograd_f4_lanes_input)(const tiling *t, conv_input x, float *V, float *rows);
void LANES_ISA(winograd_f4_lanes_output)(const tiling *t, const float *M, const float *bias,
                                         const winograd_out *o, int f0, int f1, float *rows);
void LANES_ISA(winograd_f4_lanes_gradient)(const tiling *t, const winograd_grad *dy, int f0,
                                           int f1, float *D, float *dbias, float *rows);
void LANES_ISA(winograd_f4_lanes_input_adjoint)(const tiling *t, const float *Z, float *dx,
                                                float *rows);

static inline vl loadv(const float *p)
{
    vl v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void storev(float *p, vl v) { memcpy(p, &v, sizeof v); }

static inline void storevi(int32_t *p, vli v) { memcpy(p, &v, sizeof v); }

/* v as computed: no multiply behind it fused into what comes after. The half tiles' input
 * adjoint fences its stages with it, so that the AVX2 and AVX-512 builds round alike (left to
 * GCC, they fused across the stages differently, and their input gradients differed in the
 * last bits at half tiles' pixels). */
#define FUSE_FENCE(v) __asm__("" : "+x"(v))

/* Per lane of the vector at lane h of a pixel: filter f + h + lane's first output in the
 * argmax numbering (of one sample, planes of size outputs). */
static inline vli first_outputs_vl(int f, int h, int size)
{
    vli v;
    for (int i = 0; i < VL; i++)
        v[i] = (f + h + i) * size;
    return v;
}

/* Where lanes_row reads: 16 planes of one sample, plane apart, floats or bytes times the
 * scale (as winograd_input_row converts them); or with lanes, floats in channel lanes, a
 * pixel's 16 channels side by side (row y at f + 16 w y). */
typedef struct lanes_src {
    const float *f;
    const uint8_t *b;   /* where f is NULL */
    float scale;
    size_t plane;
    int lanes;
} lanes_src;

/* Channels [c0, c0 + 16) of sample s of x: in NCHW, their planes; in lanes, their block,
 * which lies where their planes would. */
static inline lanes_src lanes_src_of(const conv_geom *g, conv_input x, int s, int c0)
{
    size_t plane = (size_t)g->h * g->w;
    if (x.f)
        return (lanes_src){x.f + ((size_t)s * g->c + (size_t)c0) * plane, NULL, 0, plane,
                           g->in_lanes};
    return (lanes_src){NULL, x.b[s] + (size_t)c0 * plane, x.scale, plane, 0};
}

/* n values of plane k of src from at into to, as floats (bytes times the scale: the bits of
 * winograd_input_row's conversion). */
static inline void src_floats(lanes_src src, int k, size_t at, size_t n, float *to)
{
    if (src.f) {
        memcpy(to, src.f + (size_t)k * src.plane + at, sizeof(float) * n);
        return;
    }
    const uint8_t *b = src.b + (size_t)k * src.plane + at;
    for (size_t i = 0; i < n; i++)
        to[i] = (float)b[i] * src.scale;
}

/* How many rows ahead the transforms prefetch the rows they read from 16 planes: the planes'
 * lines share cache sets (planes 4 KB apart on a 32 x 32 layer) and each is a stream of its
 * own, more than the hardware's prefetchers follow (docs/kernels.md: it helps when the host's
 * memory is contended). 1 and 2 measured alike, 4 and 8 slower. */
enum { ROWS_AHEAD = 2 };

/* Prefetches the line at p of 16 planes, plane bytes apart, into L1. */
INLINE void prefetch_planes(const char *p, size_t plane)
{
#pragma GCC unroll 16
    for (int k = 0; k < LANES; k++)
        _mm_prefetch(p + (size_t)k * plane, _MM_HINT_T0);
}

/* Prefetches what lanes_row reads at at of the 16 planes. */
static inline void prefetch_src(lanes_src src, size_t at)
{
    if (src.f)
        prefetch_planes((const char *)(src.f + at), sizeof(float) * src.plane);
    else
        prefetch_planes((const char *)(src.b + at), src.plane);
}

/* Values [at, at + count) of 16 planes, from from (planes from_plane floats apart) into to
 * (to_plane apart): the rows of a sample's planes the transforms copy before they read them
 * (window_source, gradient_source), or after they wrote them (the input adjoint's). */
static inline void copy_planes(float *to, size_t to_plane, const float *from, size_t from_plane,
                               size_t at, size_t count)
{
    for (int k = 0; k < LANES; k++)
        memcpy(to + (size_t)k * to_plane + at, from + (size_t)k * from_plane + at,
               sizeof(float) * count);
}

/* line[16 x + k] = plane k of src's row y at padded column x, for x < row_len: zeros in the
 * padding and outside the image. (In channel lanes, the row copied: the input adjoint reads
 * back what the block before left in dx.) */
static inline void lanes_row(const tiling *t, lanes_src src, int y, float *line)
{
    const conv_geom *g = t->g;
    int len = t->row_len, lo = g->pad, hi = g->pad + g->w < len ? g->pad + g->w : len;
    if (y < 0 || y >= g->h) {
        memset(line, 0, sizeof(float) * LANES * (size_t)len);
        return;
    }
    memset(line, 0, sizeof(float) * LANES * (size_t)lo);
    memset(line + (size_t)LANES * hi, 0, sizeof(float) * LANES * (size_t)(len - hi));
    if (src.lanes) {
        lanes_copy(src.f + (size_t)LANES * y * g->w, NULL, hi - lo, line + (size_t)LANES * lo);
        return;
    }
    for (int j = 0; j < hi - lo; j += LANES) {
        int n = hi - lo - j < LANES ? hi - lo - j : LANES;
        size_t at = (size_t)y * g->w + (size_t)j;
        float *out = line + (size_t)LANES * lo;
        if (src.f) {
            rows_to_lanes(src.f + at - j, NULL, src.plane, LANES, j, hi - lo, out);
        } else {   /* bytes: their 16 x n values as floats first */
            float tile[LANES * LANES];
            for (int k = 0; k < LANES; k++)
                src_floats(src, k, at, (size_t)n, tile + LANES * k);
            rows_to_lanes(tile, NULL, LANES, LANES, 0, n, out + (size_t)LANES * j);
        }
        if (y + ROWS_AHEAD < g->h)
            prefetch_src(src, at + (size_t)ROWS_AHEAD * g->w);
    }
}

/* Row i of a tile's 6 x 6 points at m (points plane apart) into in: its 6, or a half side's 4
 * (half set: slots 3 and 4 left alone; winograd_f4_matrices.h, HALF_SKIPS). */
INLINE void load_point_row(const float *m, size_t plane, int i, int half, vl in[6])
{
#pragma GCC unroll 6
    for (int k = 0; k < 6; k++)
        if (!HALF_SKIPS(half, k))
            in[k] = loadv(m + (6 * i + k) * plane);
}

#endif
