/* Winograd F(4x4, 3x3)'s matrices (Lavin and Gray's, at the points 0, +-1, +-2 and infinity),
 * written out as sums, for every build's transforms: winograd_f4_impl.h's, and
 * winograd_f4_lanes_impl.h's, which must give the same bits. Each macro works on floats or
 * on vectors of them. */
#ifndef FRUGAL_WINOGRAD_F4_MATRICES_H
#define FRUGAL_WINOGRAD_F4_MATRICES_H

/* B^T x, x 6 values: the input transform along one direction. */
#define BT6(x, o)                                                                             \
    do {                                                                                      \
        (o)[0] = 4 * (x)[0] - 5 * (x)[2] + (x)[4];                                            \
        (o)[1] = (x)[3] + (x)[4] - 4 * ((x)[1] + (x)[2]);                                     \
        (o)[2] = 4 * ((x)[1] - (x)[2]) + (x)[4] - (x)[3];                                     \
        (o)[3] = 2 * ((x)[3] - (x)[1]) + (x)[4] - (x)[2];                                     \
        (o)[4] = 2 * ((x)[1] - (x)[3]) + (x)[4] - (x)[2];                                     \
        (o)[5] = 4 * (x)[1] - 5 * (x)[3] + (x)[5];                                            \
    } while (0)

/* A^T x, x 6 values (floats or vectors of them), 4 out: the output transform along one
 * direction. */
#define AT6(x, o)                                                                             \
    do {                                                                                      \
        __typeof__((x)[0]) s12 = (x)[1] + (x)[2], d12 = (x)[1] - (x)[2];                      \
        __typeof__((x)[0]) s34 = (x)[3] + (x)[4], d34 = (x)[3] - (x)[4];                      \
        (o)[0] = (x)[0] + s12 + s34;                                                          \
        (o)[1] = d12 + 2 * d34;                                                               \
        (o)[2] = s12 + 4 * s34;                                                               \
        (o)[3] = d12 + 8 * d34 + (x)[5];                                                      \
    } while (0)

/* A x, x 4 values (floats or vectors of them), 6 out: the adjoint of AT6 (the output
 * gradient's transform). */
#define A6(x, o)                                                                              \
    do {                                                                                      \
        __typeof__((x)[0]) s02 = (x)[0] + (x)[2], s13 = (x)[1] + (x)[3];                      \
        __typeof__((x)[0]) t02 = (x)[0] + 4 * (x)[2], t13 = 2 * (x)[1] + 8 * (x)[3];          \
        (o)[0] = (x)[0];                                                                      \
        (o)[1] = s02 + s13;                                                                   \
        (o)[2] = s02 - s13;                                                                   \
        (o)[3] = t02 + t13;                                                                   \
        (o)[4] = t02 - t13;                                                                   \
        (o)[5] = (x)[3];                                                                      \
    } while (0)

/* B x, x 6 values: the adjoint of BT6 (back from the transform domain to a window). */
#define B6(x, o)                                                                              \
    do {                                                                                      \
        (o)[0] = 4 * (x)[0];                                                                  \
        (o)[1] = 4 * ((x)[2] - (x)[1] + (x)[5]) + 2 * ((x)[4] - (x)[3]);                      \
        (o)[2] = -5 * (x)[0] - 4 * ((x)[1] + (x)[2]) - (x)[3] - (x)[4];                       \
        (o)[3] = (x)[1] - (x)[2] + 2 * ((x)[3] - (x)[4]) - 5 * (x)[5];                        \
        (o)[4] = (x)[0] + (x)[1] + (x)[2] + (x)[3] + (x)[4];                                  \
        (o)[5] = (x)[5];                                                                      \
    } while (0)

/* The 6x6 window B z B^T of a tile (the input adjoint's), columns first: z[(6 i + k) * plane +
 * q] point (i, k) of tile q, into win[i][k][q]. A macro, for the loops over tiles (or
 * channels) around it to vectorise, and for every build's GCC to contract its multiplies and
 * adds alike: written on vectors of 16 instead, a few percent of the values came out rounded
 * otherwise. */
#define WINDOW_ADJOINT(z, plane, q, win)                                                      \
    do {                                                                                      \
        float h_[6][6];                                                                       \
        _Pragma("GCC unroll 6") for (int i_ = 0; i_ < 6; i_++) { /* z B^T: row's columns */  \
            float in_[6];                                                                     \
            _Pragma("GCC unroll 6") for (int k_ = 0; k_ < 6; k_++)                            \
                in_[k_] = (z)[(6 * i_ + k_) * (plane) + (q)];                                 \
            B6(in_, h_[i_]);                                                                  \
        }                                                                                     \
        _Pragma("GCC unroll 6") for (int k_ = 0; k_ < 6; k_++) { /* B (z B^T): the rows */   \
            float in_[6] = {h_[0][k_], h_[1][k_], h_[2][k_], h_[3][k_], h_[4][k_], h_[5][k_]}, \
                  o_[6];                                                                      \
            B6(in_, o_);                                                                      \
            _Pragma("GCC unroll 6") for (int i_ = 0; i_ < 6; i_++)(win)[i_][k_][q] = o_[i_];  \
        }                                                                                     \
    } while (0)

/* Half tiles (winograd_tiling.h): F(2, 3) along one side inside F(4x4)'s transform domain.
 * F(2)'s points 0, 1, -1 and infinity are F(4)'s slots 0, 1, 2 and 5, where F4_G's rows are
 * F(2)'s filter transform's times 1/4, -1/3, -1/3 and 1: the input transform takes those
 * factors back (4, -3, -3, 1), so that its products with F(4x4)'s U are F(2)'s. On 6 slots,
 * 3 and 4 neither read nor written; x: 4 inputs (BT2H), 2 output gradients (A2H). Used by
 * the transforms by lanes only (AVX2, AVX-512). */
#define BT2H(x, o)                                                                            \
    do {                                                                                      \
        (o)[0] = 4 * ((x)[0] - (x)[2]);                                                       \
        (o)[1] = -3 * ((x)[1] + (x)[2]);                                                      \
        (o)[2] = 3 * ((x)[1] - (x)[2]);                                                       \
        (o)[5] = (x)[1] - (x)[3];                                                             \
    } while (0)

/* Whether a side (a half one if half is set) leaves slot i of its 6 out. */
#define HALF_SKIPS(half, i) ((half) && ((i) == 3 || (i) == 4))

/* A^T m for a half tile: its 2 outputs from slots 0, 1, 2 and 5. */
#define AT2H(x, o)                                                                            \
    do {                                                                                      \
        (o)[0] = (x)[0] + (x)[1] + (x)[2];                                                    \
        (o)[1] = (x)[1] - (x)[2] - (x)[5];                                                    \
    } while (0)

/* The adjoint of AT2H: 2 output gradients into slots 0, 1, 2 and 5. */
#define A2H(x, o)                                                                             \
    do {                                                                                      \
        (o)[0] = (x)[0];                                                                      \
        (o)[1] = (x)[0] + (x)[1];                                                             \
        (o)[2] = (x)[0] - (x)[1];                                                             \
        (o)[5] = -(x)[1];                                                                     \
    } while (0)

/* The adjoint of BT2H: slots 0, 1, 2 and 5 back to a window of 4. */
#define B2H(x, o)                                                                             \
    do {                                                                                      \
        (o)[0] = 4 * (x)[0];                                                                  \
        (o)[1] = 3 * ((x)[2] - (x)[1]) + (x)[5];                                              \
        (o)[2] = -4 * (x)[0] - 3 * ((x)[1] + (x)[2]);                                         \
        (o)[3] = -(x)[5];                                                                     \
    } while (0)

/* G, 6 x 3: the filter transform, U = G g G^T. */
#define F4_G                                                                                  \
    {                                                                                         \
        {1 / 4.0f, 0, 0}, {-1 / 6.0f, -1 / 6.0f, -1 / 6.0f}, {-1 / 6.0f, 1 / 6.0f, -1 / 6.0f}, \
            {1 / 24.0f, 1 / 12.0f, 1 / 6.0f}, {1 / 24.0f, -1 / 12.0f, 1 / 6.0f}, { 0, 0, 1 }  \
    }

#endif
