/* Kernels against PyTorch float64 references (tests/fixtures/ops.txt), on every SIMD path this
 * CPU supports, plus finite-difference checks of each backward kernel against its forward. */
#include "fixture.h"
#include "ops/conv.h"
#include "ops/conv_winograd.h"
#include "ops/cpu.h"
#include "ops/gemm.h"
#include "ops/layers.h"
#include "ops/winograd_ahead.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FIXTURES "tests/fixtures/ops.txt"
#define ATOL 2e-5
#define RTOL 1e-4
/* Winograd F(4x4, 3x3): its transforms' coefficients reach 8 and 1/24, and the float32 error
 * grows with them (about 5e-5 on these fixtures' outputs of 0.1 to 1, measured). */
#define ATOL_F4 1e-4
#define RTOL_F4 1e-3

/* Runs body once per SIMD path this machine can execute. */
#define FOR_EACH_ISA(isa)                                                                   \
    for (ops_isa isa = OPS_ISA_PORTABLE; isa <= ops_isa_supported(); isa++)                \
        if (ops_isa_set(isa) == 0)

TEST(ops_conv_matches_pytorch)
{
    int nc;
    fx_case *cs = fx_load(FIXTURES, "conv_", &nc);
    FOR_EACH_ISA(isa)
    for (conv_strategy strat = CONV_DIRECT; strat < CONV_STRATEGIES; strat++)
    for (int i = 0; i < nc; i++) {
        conv_set_strategy(strat);
        fx_case *c = &cs[i];
        double atol = strat == CONV_WINOGRAD4 ? ATOL_F4 : ATOL;
        double rtol = strat == CONV_WINOGRAD4 ? RTOL_F4 : RTOL;
        conv_geom g;
        int n = fx_param(c, "n");
        CHECK(conv_geom_init(&g, fx_param(c, "c"), fx_param(c, "h"), fx_param(c, "w"),
                             fx_param(c, "f"), fx_param(c, "kh"), fx_param(c, "kw"),
                             fx_param(c, "stride"), fx_param(c, "pad")) == 0);
        float *x = fx_floats(fx_get(c, "x")), *w = fx_floats(fx_get(c, "w")),
              *b = fx_floats(fx_get(c, "b")), *dy = fx_floats(fx_get(c, "dy"));
        const fx_array *y_ref = fx_get(c, "y"), *dx_ref = fx_get(c, "dx"),
                       *dw_ref = fx_get(c, "dw"), *db_ref = fx_get(c, "db");
        CHECK(y_ref->n == (long)n * g.f * g.oh * g.ow);
        float *y = calloc((size_t)y_ref->n, 4), *dx = calloc((size_t)dx_ref->n, 4),
              *dw = calloc((size_t)dw_ref->n, 4), *db = calloc((size_t)g.f, 4);
        char what[128];
        /* whole range, then per-sample and per-filter pieces must give the same answer */
        ops_conv2d_forward(&g, x, w, b, y, 0, n, 0, g.f);
        const char *path = conv_path_name(conv_path(&g, CONV_FORWARD));
        snprintf(what, sizeof what, "%s [%s %s] forward", c->name, ops_isa_name(isa), path);
        fx_close(what, y, y_ref, atol, rtol);
        memset(y, 0, sizeof(float) * (size_t)y_ref->n);
        for (int s = 0; s < n; s++)
            for (int f = 0; f < g.f; f++)
                ops_conv2d_forward(&g, x, w, b, y, s, s + 1, f, f + 1);
        snprintf(what, sizeof what, "%s [%s %s] forward per sample and filter", c->name,
                 ops_isa_name(isa), path);
        fx_close(what, y, y_ref, atol, rtol);
        ops_conv2d_backward_input(&g, dy, w, dx, 0, n);
        snprintf(what, sizeof what, "%s [%s %s] backward input", c->name, ops_isa_name(isa), path);
        fx_close(what, dx, dx_ref, atol, rtol);
        ops_conv2d_backward_filter(&g, x, dy, dw, db, 0, n, 0, g.f, 0);
        snprintf(what, sizeof what, "%s [%s %s] backward filter", c->name, ops_isa_name(isa), path);
        fx_close(what, dw, dw_ref, atol, rtol);
        fx_close(what, db, db_ref, atol, rtol);
        /* per-sample partial sums, reduced in order, as the engine does */
        long per_filter = (long)g.c * g.kh * g.kw;   /* a filter range's own gradients */
        for (int s = 0; s < n; s++)
            for (int f = 0; f < g.f; f++)
                ops_conv2d_backward_filter(&g, x, dy, dw + f * per_filter, db + f, s, s + 1, f, f + 1,
                                       s > 0);
        snprintf(what, sizeof what, "%s [%s %s] backward filter in pieces", c->name,
                 ops_isa_name(isa), path);
        fx_close(what, dw, dw_ref, atol, rtol);
        fx_close(what, db, db_ref, atol, rtol);
        free(x), free(w), free(b), free(dy), free(y), free(dx), free(dw), free(db);
    }
    fx_free(cs, nc);
}

TEST(ops_pool_matches_pytorch)
{
    int nc;
    fx_case *cs = fx_load(FIXTURES, "pool_", &nc);
    for (int i = 0; i < nc; i++) {
        fx_case *c = &cs[i];
        pool_geom g;
        int n = fx_param(c, "n");
        CHECK(pool_geom_init(&g, fx_param(c, "c"), fx_param(c, "h"), fx_param(c, "w"),
                             fx_param(c, "size"), fx_param(c, "stride")) == 0);
        float *x = fx_floats(fx_get(c, "x")), *dy = fx_floats(fx_get(c, "dy"));
        const fx_array *y_ref = fx_get(c, "y"), *dx_ref = fx_get(c, "dx");
        CHECK(y_ref->n == (long)n * g.c * g.oh * g.ow);
        float *y = calloc((size_t)y_ref->n, 4), *dx = calloc((size_t)dx_ref->n, 4);
        int32_t *arg = calloc((size_t)y_ref->n, 4);
        for (int s = 0; s < n; s++)
            ops_maxpool_forward(&g, x, y, arg, s, s + 1);
        fx_close(c->name, y, y_ref, 0, 0);   /* a max is exact */
        ops_maxpool_backward(&g, dy, arg, dx, 0, n);
        fx_close(c->name, dx, dx_ref, ATOL, RTOL);
        free(x), free(dy), free(y), free(dx), free(arg);
    }
    fx_free(cs, nc);
}

TEST(ops_dense_matches_pytorch)
{
    int nc;
    fx_case *cs = fx_load(FIXTURES, "dense_", &nc);
    FOR_EACH_ISA(isa)
    for (int i = 0; i < nc; i++) {
        fx_case *c = &cs[i];
        int n = fx_param(c, "n"), in = fx_param(c, "i"), out = fx_param(c, "o");
        float *x = fx_floats(fx_get(c, "x")), *w = fx_floats(fx_get(c, "w")),
              *b = fx_floats(fx_get(c, "b")), *dy = fx_floats(fx_get(c, "dy"));
        float *y = calloc((size_t)n * out, 4), *dx = calloc((size_t)n * in, 4),
              *dw = calloc((size_t)in * out, 4), *db = calloc((size_t)out, 4);
        for (int s = 0; s < n; s++)
            dense_forward(in, out, x, w, b, y, s, s + 1);
        fx_close(c->name, y, fx_get(c, "y"), ATOL, RTOL);
        dense_backward_input(in, out, dy, w, dx, 0, n);
        fx_close(c->name, dx, fx_get(c, "dx"), ATOL, RTOL);
        for (int s = 0; s < n; s++)
            dense_backward_weights(in, out, x, dy, dw, db, s, s + 1, s > 0);
        fx_close(c->name, dw, fx_get(c, "dw"), ATOL, RTOL);
        fx_close(c->name, db, fx_get(c, "db"), ATOL, RTOL);
        free(x), free(w), free(b), free(dy), free(y), free(dx), free(dw), free(db);
    }
    fx_free(cs, nc);
}

TEST(ops_softmax_xent_relu_sgd_match_pytorch)
{
    int nc;
    fx_case *cs = fx_load(FIXTURES, "xent_", &nc);
    for (int i = 0; i < nc; i++) {
        fx_case *c = &cs[i];
        int n = fx_param(c, "n"), k = fx_param(c, "k");
        float *z = fx_floats(fx_get(c, "z")), *lab = fx_floats(fx_get(c, "labels"));
        uint8_t labels[16];
        for (int s = 0; s < n; s++)
            labels[s] = (uint8_t)lab[s];
        float *dz = calloc((size_t)n * k, 4);
        double loss = ops_softmax_xent(k, z, labels, dz, 1.0f / (float)n, 0, n, NULL) / n;
        CHECK_NEAR(loss, fx_get(c, "loss")->v[0], 1e-6, 1e-6);
        fx_close(c->name, dz, fx_get(c, "dz"), 1e-7, 1e-5);
        labels[0] = (uint8_t)k;   /* an impossible label is reported, not read past */
        CHECK(isnan(ops_softmax_xent(k, z, labels, NULL, 1.0f, 0, 1, NULL)));
        free(z), free(lab), free(dz);
    }
    fx_free(cs, nc);

    cs = fx_load(FIXTURES, "relu", &nc);
    if (nc) {
        float *x = fx_floats(fx_get(cs, "x")), *dy = fx_floats(fx_get(cs, "dy"));
        float y[50], dx[50];
        ops_relu_forward(x, y, 0, 50);
        ops_relu_backward(y, dy, dx, 0, 50);
        fx_close("relu forward", y, fx_get(cs, "y"), 0, 0);
        float nan_in = NAN, nan_out = 0;
        ops_relu_forward(&nan_in, &nan_out, 0, 1);
        CHECK(isnan(nan_out));   /* NaN propagates, as in PyTorch */
        fx_close("relu backward", dx, fx_get(cs, "dx"), 0, 0);
        free(x), free(dy);
    }
    fx_free(cs, nc);

    cs = fx_load(FIXTURES, "sgd", &nc);
    if (nc) {
        float *w = fx_floats(fx_get(cs, "w")), v[40] = {0};
        const char *gs[] = {"g0", "g1", "g2"};
        for (int step = 0; step < 3; step++) {
            float *g = fx_floats(fx_get(cs, gs[step]));
            sgd_update(w, g, v, fx_param(cs, "lr_milli") / 1000.0f,
                       fx_param(cs, "momentum_milli") / 1000.0f, fx_param(cs, "wd_milli") / 1000.0f,
                       0, 40);
            free(g);
        }
        fx_close("sgd after 3 steps", w, fx_get(cs, "w3"), 1e-6, 1e-5);
        free(w);
    }
    fx_free(cs, nc);

    /* without momentum: w -= lr * (g + wd * w), the velocity left as it is (PyTorch keeps none) */
    float w[37], g[37], v[37];
    for (int i = 0; i < 37; i++)
        w[i] = (float)(i - 18) / 7, g[i] = (float)(i % 5) - 2.5f, v[i] = 1000.0f + (float)i;
    sgd_update(w, g, v, 0.25f, 0.0f, 0.5f, 3, 37);
    for (int i = 0; i < 37; i++) {
        double w0 = (double)(i - 18) / 7, expect = i < 3 ? w0 : w0 - 0.25 * (g[i] + 0.5 * w0);
        CHECK_NEAR(w[i], expect, 1e-6, 1e-6);
        CHECK(v[i] == 1000.0f + (float)i);
    }
}

/* The sum of a layer's chunks and its step in one pass: the bits of summing first (in the
 * parts' order) and stepping after, with and without momentum, across the pass's blocks. */
TEST(ops_sgd_from_parts_matches_summing_first)
{
    enum { N = 1300, PARTS = 4 };
    static float parts[PARTS][N], w[2][N], v[2][N], g[N];
    const float *order[PARTS];
    for (int k = 0; k < PARTS; k++) {
        order[k] = parts[PARTS - 1 - k];   /* the last chunk first, as the trainer sums */
        for (int i = 0; i < N; i++)
            parts[k][i] = sinf((float)(i * (k + 3))) / (float)(k + 1);
    }
    for (int momentum = 0; momentum < 2; momentum++)
        for (int nparts = 1; nparts <= PARTS; nparts++) {
            for (int i = 0; i < N; i++)
                w[0][i] = w[1][i] = cosf((float)i), v[0][i] = v[1][i] = 0.01f * (float)(i % 7);
            for (int i = 0; i < N; i++) {
                g[i] = order[0][i];
                for (int k = 1; k < nparts; k++)
                    g[i] += order[k][i];
            }
            float m = momentum ? 0.9f : 0.0f;
            sgd_update(w[0], g, v[0], 0.05f, m, 0.01f, 0, N);
            sgd_update_parts(w[1], order, nparts, momentum ? v[1] : NULL, 0.05f, m, 0.01f, N);
            CHECKF(!memcmp(w[0], w[1], sizeof w[0]) && !memcmp(v[0], v[1], sizeof v[0]),
                   "momentum %g, %d parts: not the same bits", (double)m, nparts);
        }
}

/* Naive double-precision reference for GEMM. */
static void gemm_ref(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++)
                s += (double)(ta ? A[k * lda + i] : A[i * lda + k]) *
                     (double)(tb ? B[j * ldb + k] : B[k * ldb + j]);
            C[i * ldc + j] = (float)(alpha * s + (beta != 0 ? beta * C[i * ldc + j] : 0));
        }
}

TEST(ops_gemm_every_path_matches_reference)
{
    ops_rng r;
    ops_rng_seed(&r, 7);
    /* {16, 700, 300} and {9, 300, 260}: B read in place though its rows lie far apart, as few
     * rows use it; {100, 40, 700}: A's rows too far apart to be read in place, packed; {32,
     * 48, 40} and {11, 32, 20}: whole columns of register tiles over a last tile of 2 or 5 of
     * AVX2's 6 rows (gemm_arch.rows); {24, 48, 20}: a last column tile of 16 of AVX-512's 32,
     * written by its half kernel in place (gemm_arch.half; 45, 33, 300 and 16 columns, through
     * its scratch tile) */
    int shapes[][3] = {{1, 1, 1}, {5, 7, 3}, {6, 16, 9}, {13, 33, 17}, {64, 64, 64},
                       {97, 45, 300}, {4, 676, 9}, {130, 70, 513}, {12, 32, 1}, {16, 700, 300},
                       {9, 300, 260}, {100, 40, 700}, {32, 48, 40}, {11, 32, 20}, {24, 48, 20}};
    FOR_EACH_ISA(isa)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++) {
            int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], ta = t & 1, tb = t >> 1;
            int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 2;   /* padded rows */
            float *A = malloc(sizeof(float) * (size_t)lda * (ta ? K : M));
            float *B = malloc(sizeof(float) * (size_t)ldb * (tb ? N : K));
            float *C = malloc(sizeof(float) * (size_t)ldc * M), *R = malloc(sizeof(float) * (size_t)ldc * M);
            for (int i = 0; i < lda * (ta ? K : M); i++)
                A[i] = ops_rng_uniform(&r) - 0.5f;
            for (int i = 0; i < ldb * (tb ? N : K); i++)
                B[i] = ops_rng_uniform(&r) - 0.5f;
            float alpha = 0.75f, beta = t == 3 ? 0.0f : 0.5f;
            for (int i = 0; i < ldc * M; i++)   /* beta = 0 must not read C: NaN there */
                C[i] = R[i] = beta == 0.0f && i % ldc < N ? NAN : ops_rng_uniform(&r);
            ops_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
            gemm_ref(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, R, ldc);
            int bad = 0;
            for (int i = 0; i < M; i++)
                for (int j = 0; j < ldc; j++) {
                    double tol = 1e-5 * K + 1e-5;
                    /* padding columns must be untouched */
                    if (j >= N ? C[i * ldc + j] != R[i * ldc + j]
                               : !(fabs(C[i * ldc + j] - R[i * ldc + j]) <= tol))
                        bad++;
                }
            CHECKF(bad == 0, "[%s] M=%d N=%d K=%d ta=%d tb=%d: %d wrong elements", ops_isa_name(isa),
                   M, N, K, ta, tb, bad);
            free(A), free(B), free(C), free(R);
        }
    float C[6] = {NAN, NAN, NAN, NAN, NAN, NAN}, one = 1;   /* K = 0, beta = 0: C = 0 */
    ops_sgemm(0, 0, 2, 3, 0, 1.0f, &one, 1, &one, 3, 0.0f, C, 3);
    for (int i = 0; i < 6; i++)
        CHECKF(C[i] == 0.0f, "K = 0, beta = 0: C[%d] = %g", i, (double)C[i]);
}

/* ops_transpose on every ISA: blocks of 8 and the edges of any length (AVX2's 6-row panels),
 * every value in place and nothing written around them. */
TEST(ops_transpose_every_edge)
{
    int sides[] = {1, 3, 6, 8, 9, 14, 16, 21};
    enum { N = 8 };
    FOR_EACH_ISA(isa)
    for (int a = 0; a < N; a++)
        for (int b = 0; b < N; b++) {
            int rows = sides[a], cols = sides[b], lds = cols + 2, ldd = rows + 3, bad = 0;
            float src[21 * 23], dst[21 * 24];
            for (int i = 0; i < rows * lds; i++)
                src[i] = (float)i;
            for (int i = 0; i < cols * ldd; i++)
                dst[i] = -1.0f;
            ops_transpose(src, lds, rows, cols, dst, ldd);
            for (int k = 0; k < cols; k++)
                for (int i = 0; i < ldd; i++)
                    bad += dst[k * ldd + i] != (i < rows ? src[i * lds + k] : -1.0f);
            CHECKF(bad == 0, "[%s] %d x %d: %d wrong values", ops_isa_name(isa), rows, cols,
                   bad);
        }
}

/* Finite differences: L = sum(forward(x) * r); dL/dx from backward(r) must match. */
static double dot(const float *a, const float *b, long n)
{
    double s = 0;
    for (long i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

static void check_fd(const char *what, float *param, long nparam, double (*loss)(void *),
                     void *ctx, const float *analytic, double eps)
{
    int bad = 0;
    for (long i = 0; i < nparam; i++) {
        float keep = param[i];
        param[i] = keep + (float)eps;
        double up = loss(ctx);
        param[i] = keep - (float)eps;
        double down = loss(ctx);
        param[i] = keep;
        double numeric = (up - down) / (2 * eps);
        if (!(fabs(numeric - analytic[i]) <= 2e-3 + 2e-2 * fabs(numeric)) && bad++ < 3)
            test_fail(__FILE__, __LINE__, "%s: d/dp[%ld] numeric %.6g, backward %.6g", what, i,
                      numeric, (double)analytic[i]);
    }
    CHECK(bad == 0);
}

static float *random_floats(ops_rng *r, long n, float scale);

typedef struct conv_fd { conv_geom g; int n; float *x, *w, *b, *y, *r; } conv_fd;
static double conv_loss(void *p)
{
    conv_fd *c = p;
    ops_conv2d_forward(&c->g, c->x, c->w, c->b, c->y, 0, c->n, 0, c->g.f);
    return dot(c->y, c->r, (long)c->n * c->g.f * c->g.oh * c->g.ow);
}

static float *random_floats(ops_rng *r, long n, float scale)
{
    float *p = malloc(sizeof(float) * (size_t)n);
    for (long i = 0; i < n; i++)
        p[i] = (ops_rng_uniform(r) * 2 - 1) * scale;
    return p;
}

/* More classes than softmax_xent keeps exponentials for (256): those past it are computed
 * again for the gradient; both agree with the softmax in double. */
TEST(ops_softmax_xent_past_the_kept_exponentials)
{
    ops_rng r;
    ops_rng_seed(&r, 31);
    enum { N = 2, K = 300 };
    float *z = random_floats(&r, (long)N * K, 4), dz[N * K];
    uint8_t labels[N] = {7, 255};
    double loss = ops_softmax_xent(K, z, labels, dz, 1.0f, 0, N, NULL), want = 0;
    for (int n = 0; n < N; n++) {
        double zmax = z[n * K], sum = 0;
        for (int k = 0; k < K; k++)
            zmax = z[n * K + k] > zmax ? z[n * K + k] : zmax;
        for (int k = 0; k < K; k++)
            sum += exp((double)z[n * K + k] - zmax);
        want += log(sum) - ((double)z[n * K + labels[n]] - zmax);
        for (int k = 0; k < K; k++) {
            double p = exp((double)z[n * K + k] - zmax) / sum - (k == labels[n]);
            CHECKF(fabs(dz[n * K + k] - p) < 1e-7 + 1e-6 * fabs(p), "sample %d class %d", n, k);
        }
    }
    CHECK_NEAR(loss, want, 1e-9, 1e-9);
    free(z);
}

static void conv_fd_case(int c, int h, int w, int f, int kh, int kw, int stride, int pad)
{
    ops_rng r;
    ops_rng_seed(&r, 3);
    conv_fd cf = {.n = 2};
    CHECK(conv_geom_init(&cf.g, c, h, w, f, kh, kw, stride, pad) == 0);
    long nx = 2L * c * h * w, nw = (long)f * c * kh * kw, ny = 2L * f * cf.g.oh * cf.g.ow;
    cf.x = random_floats(&r, nx, 1), cf.w = random_floats(&r, nw, 0.5f);
    cf.b = random_floats(&r, f, 0.1f), cf.y = malloc(4 * (size_t)ny), cf.r = random_floats(&r, ny, 1);
    float *dx = malloc(4 * (size_t)nx), *dw = malloc(4 * (size_t)nw), *db = malloc(4 * (size_t)f);
    ops_conv2d_backward_input(&cf.g, cf.r, cf.w, dx, 0, 2);
    ops_conv2d_backward_filter(&cf.g, cf.x, cf.r, dw, db, 0, 2, 0, f, 0);
    char what[64];
    snprintf(what, sizeof what, "conv stride %d (%s) dx", stride,
             conv_path_name(conv_path(&cf.g, CONV_BACKWARD_FILTER)));
    check_fd(what, cf.x, nx, conv_loss, &cf, dx, 1e-2);
    check_fd(what, cf.w, nw, conv_loss, &cf, dw, 1e-2);
    check_fd(what, cf.b, f, conv_loss, &cf, db, 1e-2);
    free(cf.x), free(cf.w), free(cf.b), free(cf.y), free(cf.r), free(dx), free(dw), free(db);
}

TEST(ops_conv_gradients_match_finite_differences)
{
    conv_fd_case(2, 7, 6, 3, 3, 2, 2, 1);   /* stride 2: im2col */
    conv_fd_case(5, 6, 7, 5, 3, 3, 1, 1);   /* stride 1: direct, with partial filter and channel blocks */
    conv_set_strategy(CONV_WIDE);
    conv_fd_case(5, 6, 7, 5, 3, 3, 1, 1);
    conv_set_strategy(CONV_IM2COL);
    conv_fd_case(5, 6, 7, 5, 3, 3, 1, 1);
    conv_set_strategy(CONV_WINOGRAD);
    conv_fd_case(5, 6, 7, 5, 3, 3, 1, 1);
    conv_set_strategy(CONV_WINOGRAD4);
    conv_fd_case(5, 6, 7, 5, 3, 3, 1, 1);
    conv_set_strategy(CONV_AUTO);
}

typedef struct dense_fd { int n, in, out; float *x, *w, *b, *y, *r; } dense_fd;
static double dense_loss(void *p)
{
    dense_fd *d = p;
    dense_forward(d->in, d->out, d->x, d->w, d->b, d->y, 0, d->n);
    return dot(d->y, d->r, (long)d->n * d->out);
}

TEST(ops_dense_gradients_match_finite_differences)
{
    ops_rng r;
    ops_rng_seed(&r, 4);
    dense_fd d = {.n = 3, .in = 11, .out = 5};
    d.x = random_floats(&r, 33, 1), d.w = random_floats(&r, 55, 0.5f), d.b = random_floats(&r, 5, 0.1f);
    d.y = malloc(4 * 15), d.r = random_floats(&r, 15, 1);
    float dx[33], dw[55], db[5];
    dense_backward_input(11, 5, d.r, d.w, dx, 0, 3);
    dense_backward_weights(11, 5, d.x, d.r, dw, db, 0, 3, 0);
    check_fd("dense dx", d.x, 33, dense_loss, &d, dx, 1e-2);
    check_fd("dense dw", d.w, 55, dense_loss, &d, dw, 1e-2);
    check_fd("dense db", d.b, 5, dense_loss, &d, db, 1e-2);
    free(d.x), free(d.w), free(d.b), free(d.y), free(d.r);
}

typedef struct pool_fd { pool_geom g; float *x, *y, *r; int32_t *arg; } pool_fd;
static double pool_loss(void *p)
{
    pool_fd *q = p;
    ops_maxpool_forward(&q->g, q->x, q->y, q->arg, 0, 1);
    return dot(q->y, q->r, (long)q->g.c * q->g.oh * q->g.ow);
}

typedef struct act_fd { float *x, *y, *r; long n; } act_fd;
static double relu_loss(void *p)
{
    act_fd *a = p;
    ops_relu_forward(a->x, a->y, 0, a->n);
    return dot(a->y, a->r, a->n);
}

typedef struct xent_fd { float *z; uint8_t labels[4]; } xent_fd;
static double xent_loss(void *p)
{
    xent_fd *x = p;
    return ops_softmax_xent(6, x->z, x->labels, NULL, 1, 0, 4, NULL);
}

TEST(ops_pool_relu_xent_gradients_match_finite_differences)
{
    ops_rng r;
    ops_rng_seed(&r, 5);
    /* distinct inputs, at least 0.05 apart: no window changes its winner within eps */
    pool_fd q;
    CHECK(pool_geom_init(&q.g, 2, 5, 6, 2, 2) == 0);
    float x[60];
    for (int i = 0; i < 60; i++)
        x[i] = 0.05f * (float)((i * 37) % 60) - 1.5f;
    q.x = x, q.y = malloc(4 * 12), q.r = random_floats(&r, 12, 1), q.arg = malloc(4 * 12);
    float dx[60];
    ops_maxpool_forward(&q.g, q.x, q.y, q.arg, 0, 1);
    ops_maxpool_backward(&q.g, q.r, q.arg, dx, 0, 1);
    check_fd("maxpool dx", x, 60, pool_loss, &q, dx, 1e-3);
    free(q.y), free(q.r), free(q.arg);

    act_fd a = {random_floats(&r, 40, 1), malloc(4 * 40), random_floats(&r, 40, 1), 40};
    for (int i = 0; i < 40; i++)   /* keep inputs away from the kink at 0 */
        a.x[i] += a.x[i] > 0 ? 0.05f : -0.05f;
    float da[40];
    ops_relu_forward(a.x, a.y, 0, 40);
    ops_relu_backward(a.y, a.r, da, 0, 40);
    check_fd("relu dx", a.x, 40, relu_loss, &a, da, 1e-3);
    free(a.x), free(a.y), free(a.r);

    xent_fd xf = {random_floats(&r, 24, 2), {0, 5, 2, 2}};
    float dz[24];
    ops_softmax_xent(6, xf.z, xf.labels, dz, 1, 0, 4, NULL);
    check_fd("softmax_xent dz", xf.z, 24, xent_loss, &xf, dz, 1e-2);
    free(xf.z);
}

TEST(ops_init_is_seeded_and_bounded)
{
    ops_rng a, b;
    ops_rng_seed(&a, 42);
    ops_rng_seed(&b, 42);
    float w1[300], w2[300];
    init_kaiming_uniform(&a, w1, 300, 9);
    init_kaiming_uniform(&b, w2, 300, 9);
    CHECK(memcmp(w1, w2, sizeof w1) == 0);
    double lo = 1, hi = -1, mean = 0;
    for (int i = 0; i < 300; i++) {
        lo = w1[i] < lo ? w1[i] : lo;
        hi = w1[i] > hi ? w1[i] : hi;
        mean += w1[i] / 300;
    }
    CHECK(lo >= -1.0 / 3 && hi < 1.0 / 3);   /* bound 1/sqrt(9) */
    CHECK(hi - lo > 0.6);                     /* and it fills the range */
    CHECK(fabs(mean) < 0.05);
    ops_rng_seed(&b, 43);
    CHECK(ops_rng_next(&a) != ops_rng_next(&b));
}

TEST(ops_geometry_rejects_impossible_shapes)
{
    conv_geom g;
    CHECK(conv_geom_init(&g, 1, 2, 2, 1, 3, 3, 1, 0) == -1);   /* kernel larger than input */
    CHECK(conv_geom_init(&g, 1, 2, 2, 1, 3, 3, 1, 1) == 0);    /* padding makes it fit */
    CHECK(g.oh == 2 && g.ow == 2);
    CHECK(conv_geom_init(&g, 0, 5, 5, 1, 3, 3, 1, 0) == -1);
    CHECK(conv_geom_init(&g, 1, 5, 5, 1, 3, 3, 0, 0) == -1);
    pool_geom p;
    CHECK(pool_geom_init(&p, 1, 1, 5, 2, 2) == -1);
    CHECK(pool_geom_init(&p, 1, 5, 5, 2, 2) == 0 && p.oh == 2);
}

/* Each SIMD path against the portable one, on identical inputs: GEMM and both conv paths. */
static float max_rel_diff(const float *a, const float *b, long n)
{
    float worst = 0;
    for (long i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]) / (1.0f + fabsf(b[i]));
        worst = d > worst ? d : worst;
    }
    return worst;
}

TEST(ops_simd_paths_agree_with_portable)
{
    ops_rng r;
    ops_rng_seed(&r, 11);
    conv_geom g;
    CHECK(conv_geom_init(&g, 3, 19, 23, 6, 3, 3, 1, 1) == 0);
    int n = 3, M = 37, N = 53, K = 71;
    long nx = (long)n * 3 * 19 * 23, nw = 6L * 27, ny = (long)n * 6 * g.oh * g.ow;
    float *x = random_floats(&r, nx, 1), *w = random_floats(&r, nw, 0.5f), *b = random_floats(&r, 6, 0.1f);
    float *dy = random_floats(&r, ny, 1), *A = random_floats(&r, (long)M * K, 1),
          *B = random_floats(&r, (long)K * N, 1);
    enum { OUTS = 5 };
    long sizes[OUTS] = {ny, nx, nw, 6, (long)M * N};
    float *ref[OUTS], *got[OUTS];
    for (int k = 0; k < OUTS; k++)
        ref[k] = calloc((size_t)sizes[k], 4), got[k] = calloc((size_t)sizes[k], 4);
    for (conv_strategy s = CONV_DIRECT; s < CONV_STRATEGIES; s++)
        for (ops_isa isa = OPS_ISA_PORTABLE; isa <= ops_isa_supported(); isa++) {
            conv_set_strategy(s);
            CHECK(ops_isa_set(isa) == 0);
            float **out = isa == OPS_ISA_PORTABLE ? ref : got;
            ops_conv2d_forward(&g, x, w, b, out[0], 0, n, 0, 6);
            ops_conv2d_backward_input(&g, dy, w, out[1], 0, n);
            ops_conv2d_backward_filter(&g, x, dy, out[2], out[3], 0, n, 0, 6, 0);
            ops_sgemm(0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, out[4], N);
            if (isa == OPS_ISA_PORTABLE)
                continue;
            for (int k = 0; k < OUTS; k++)
                CHECKF(max_rel_diff(got[k], ref[k], sizes[k]) < 1e-4,
                       "%s path, output %d (%s conv): differs from portable by %g",
                       ops_isa_name(isa), k, conv_path_name(s),
                       (double)max_rel_diff(got[k], ref[k], sizes[k]));
        }
    for (int k = 0; k < OUTS; k++)
        free(ref[k]), free(got[k]);
    free(x), free(w), free(b), free(dy), free(A), free(B);
}

/* The few-sample path (dot products and axpys) and the GEMM path give the same dense results
 * (40 outputs: with fewer than 32, every chunk takes dot products forward and, on AVX2 and
 * AVX-512, dense_rows_outer for the weights). */
TEST(ops_dense_small_and_gemm_paths_agree)
{
    ops_rng r;
    ops_rng_seed(&r, 21);
    enum { n = 12, in = 37, out = 40 };
    float *x = random_floats(&r, (long)n * in, 1), *w = random_floats(&r, (long)out * in, 1);
    float *b = random_floats(&r, out, 1), *dy = random_floats(&r, (long)n * out, 1);
    float y1[n * out], y2[n * out], dx1[n * in], dx2[n * in], dw1[out * in], dw2[out * in];
    float db1[out], db2[out];
    dense_forward(in, out, x, w, b, y1, 0, n);   /* GEMM */
    dense_backward_input(in, out, dy, w, dx1, 0, n);
    dense_backward_weights(in, out, x, dy, dw1, db1, 0, n, 0);
    for (int s = 0; s < n; s += 3) {             /* three samples at a time: dot products */
        dense_forward(in, out, x, w, b, y2, s, s + 3);
        dense_backward_input(in, out, dy, w, dx2, s, s + 3);
        dense_backward_weights(in, out, x, dy, dw2, db2, s, s + 3, s > 0);
    }
    CHECK(max_rel_diff(y1, y2, n * out) < 1e-5);
    CHECK(max_rel_diff(dx1, dx2, n * in) < 1e-5);
    CHECK(max_rel_diff(dw1, dw2, out * in) < 1e-5);
    CHECK(max_rel_diff(db1, db2, out) < 1e-5);
    memset(y2, 0, sizeof y2);   /* GEMM on samples [2, n): their rows, the same bits */
    dense_forward(in, out, x, w, b, y2, 2, n);
    CHECK(!memcmp(y1 + 2 * out, y2 + 2 * out, sizeof(float) * (n - 2) * out));
    CHECK(y2[0] == 0.0f && y2[2 * out - 1] == 0.0f);
    free(x), free(w), free(b), free(dy);
}

/* The weight gradient of few outputs (dense_rows_outer, on AVX2 and AVX-512) is GEMM's bit for
 * bit: the same sums in the same order, so a model trains to the same bytes as before it. On
 * every path it is the plain sum within float rounding, accumulating too. Inputs with a single
 * vector after AVX-512's pairs and a tail, 10 outputs (two groups of 5) and 3. */
TEST(ops_dense_few_outputs_weight_gradient_is_gemms)
{
    ops_rng r;
    ops_rng_seed(&r, 29);
    enum { N = 13, IN = 2048 + 93 };
    float *x = random_floats(&r, (long)N * IN, 1), *dy = random_floats(&r, (long)N * 10, 1);
    float *dw = malloc(sizeof(float) * 10 * IN), *gemm = malloc(sizeof(float) * 10 * IN);
    float *sum = malloc(sizeof(float) * 10 * IN), db[10];
    ops_isa was = ops_isa_active();
    for (int out = 10; out > 0; out -= 7) {
        for (int o = 0; o < out; o++)   /* in double: the plain sum */
            for (int i = 0; i < IN; i++) {
                double s = 0;
                for (int n = 0; n < N; n++)
                    s += (double)dy[n * out + o] * x[(long)n * IN + i];
                sum[(long)o * IN + i] = (float)s;
            }
        for (ops_isa isa = OPS_ISA_PORTABLE; isa <= ops_isa_supported(); isa++) {
            ops_isa_set(isa);
            CHECK(!ops_sgemm(1, 0, out, IN, N, 1.0f, dy, out, x, IN, 0.0f, gemm, IN));
            CHECK(!dense_backward_weights(IN, out, x, dy, dw, db, 0, N, 0));
            CHECKF(isa == OPS_ISA_PORTABLE || !memcmp(dw, gemm, sizeof(float) * out * IN),
                   "path %s, %d outputs", ops_isa_name(isa), out);
            CHECKF(max_rel_diff(dw, sum, (long)out * IN) < 1e-5, "path %s", ops_isa_name(isa));
            CHECK(!dense_backward_weights(IN, out, x, dy, dw, db, 0, N, 1));
            for (long k = 0; k < (long)out * IN; k++)
                dw[k] /= 2;
            CHECKF(max_rel_diff(dw, sum, (long)out * IN) < 1e-5, "path %s, accumulated",
                   ops_isa_name(isa));
        }
    }
    ops_isa_set(was);
    free(x), free(dy), free(dw), free(gemm), free(sum);
}

/* A sample's dense outputs on the few-sample path are the same bits whichever samples share
 * its chunk: the cluster's byte-identical weights depend on it (AVX2 and AVX-512 take samples
 * in fours, dense_rows_forward, and the rest one by one). Inputs past two tiles (1024) and a
 * tail, 10 outputs (rows in groups: 5 and 5, or 2 at a time on AVX2), 7, 4 and 1, every kernel
 * path; chunks of 9 samples (two fours and one), 8 from the second, and 1; all near the plain
 * sum. */
TEST(ops_dense_few_samples_same_bits_in_any_chunk)
{
    ops_rng r;
    ops_rng_seed(&r, 23);
    enum { N = 9, IN = 2048 + 77, OUT = 10 };
    float *x = random_floats(&r, (long)N * IN, 1), *w = random_floats(&r, (long)OUT * IN, 1);
    float *b = random_floats(&r, OUT, 1), y1[N * OUT], y2[N * OUT], sum[N * OUT];
    ops_isa was = ops_isa_active();
    for (int out = OUT; out > 0; out -= 3) {
        for (int n = 0; n < N; n++)   /* in double: the plain sum */
            for (int o = 0; o < out; o++) {
                double t = b[o];
                for (int i = 0; i < IN; i++)
                    t += (double)x[(long)n * IN + i] * w[(long)o * IN + i];
                sum[n * out + o] = (float)t;
            }
        for (ops_isa isa = OPS_ISA_PORTABLE; isa <= ops_isa_supported(); isa++) {
            ops_isa_set(isa);
            size_t bytes = sizeof(float) * N * out, one = sizeof(float) * out;
            dense_forward(IN, out, x, w, b, y1, 0, N);
            CHECKF(max_rel_diff(y1, sum, N * out) < 1e-4, "path %s, %d outputs",
                   ops_isa_name(isa), out);
            for (int s = 0; s < N; s++)
                dense_forward(IN, out, x, w, b, y2, s, s + 1);
            CHECKF(!memcmp(y1, y2, bytes), "path %s, %d outputs", ops_isa_name(isa), out);
            dense_forward(IN, out, x, w, b, y2, 1, N);
            CHECKF(!memcmp((char *)y1 + one, (char *)y2 + one, bytes - one),
                   "path %s, %d outputs, from 1", ops_isa_name(isa), out);
        }
    }
    ops_isa_set(was);
    free(x), free(w), free(b);
}

/* The 2x2 stride-2 fast path on odd shapes (an uncovered last row and column) and on ties (the
 * first maximum in the window wins, as in PyTorch), against a naive reference. */
TEST(ops_pool_2x2_odd_shapes_and_ties)
{
    /* rows shorter than a vector block, a whole block, and longer rows ending part-way */
    const int shapes[][2] = {{7, 9}, {5, 4}, {2, 2}, {9, 3}, {3, 16}, {4, 35}, {5, 29}};
    for (int k = 0; k < 7; k++) {
        int c = 3, h = shapes[k][0], w = shapes[k][1];
        pool_geom g;
        CHECK(pool_geom_init(&g, c, h, w, 2, 2) == 0);
        int nin = c * h * w, nout = c * g.oh * g.ow;
        float *x = malloc(sizeof(float) * (size_t)nin), *y = malloc(sizeof(float) * (size_t)nout);
        float *dy = malloc(sizeof(float) * (size_t)nout), *dx = malloc(sizeof(float) * (size_t)nin);
        int32_t *arg = malloc(sizeof(int32_t) * (size_t)nout);
        for (int i = 0; i < nin; i++)
            x[i] = (float)((i * 7 + k) % 4);   /* many ties */
        for (int i = 0; i < nout; i++)
            dy[i] = (float)(i + 1);
        for (int i = 0; i < nin; i++)
            dx[i] = NAN;   /* every element must be written */
        ops_maxpool_forward(&g, x, y, arg, 0, 1);
        ops_maxpool_backward(&g, dy, arg, dx, 0, 1);
        float *want = calloc((size_t)nin, sizeof(float));
        for (int ch = 0; ch < c; ch++)
            for (int oy = 0; oy < g.oh; oy++)
                for (int ox = 0; ox < g.ow; ox++) {
                    int best = ch * h * w + 2 * oy * w + 2 * ox;
                    for (int i = 0; i < 2; i++)
                        for (int j = 0; j < 2; j++) {
                            int at = ch * h * w + (2 * oy + i) * w + 2 * ox + j;
                            if (x[at] > x[best])
                                best = at;
                        }
                    int o = (ch * g.oh + oy) * g.ow + ox;
                    CHECKF(y[o] == x[best] && arg[o] == best, "%dx%d output %d", h, w, o);
                    want[best] += dy[o];
                }
        for (int i = 0; i < nin; i++)
            CHECKF(dx[i] == want[i], "%dx%d dx[%d] = %g, expected %g", h, w, i, dx[i], want[i]);
        free(x), free(y), free(dy), free(dx), free(arg), free(want);
    }
}

/* A first layer reading bytes gives, bit for bit, what the float functions give on the scaled
 * bytes, on both convolution paths, with samples anywhere in memory (here in reverse order);
 * rows shorter than a vector, of whole vectors, and with a partial last one, on every path. */
static void bytes_like_floats_case(int W)
{
    conv_geom g;
    CHECK(conv_geom_init(&g, 3, 11, W, 6, 3, 3, 1, 1) == 0);
    size_t nin = (size_t)3 * 11 * W, nout = (size_t)6 * g.oh * g.ow, nw = 6 * 27;
    uint8_t *xb = malloc(2 * nin);
    float *xf = malloc(sizeof(float) * 2 * nin), *w = malloc(sizeof(float) * nw);
    float *bias = malloc(24), *y1 = calloc(2 * nout, sizeof(float)), *y2 = calloc(2 * nout, 4);
    float *dy = malloc(sizeof(float) * 2 * nout), *dw1 = malloc(sizeof(float) * (nw + 6));
    float *dw2 = malloc(sizeof(float) * (nw + 6));
    for (size_t i = 0; i < 2 * nin; i++)
        xb[i] = (uint8_t)(i * 37 % 256);
    for (size_t i = 0; i < nin; i++) {   /* xf holds sample 0 = xb's second half, then the first */
        xf[i] = (float)xb[nin + i] * (1.0f / 255.0f);
        xf[nin + i] = (float)xb[i] * (1.0f / 255.0f);
    }
    const uint8_t *samples[2] = {xb + nin, xb};
    for (size_t i = 0; i < nw; i++)
        w[i] = (float)((int)(i * 7 % 11) - 5) * 0.1f;
    for (int i = 0; i < 6; i++)
        bias[i] = 0.01f * (float)i;
    for (size_t i = 0; i < 2 * nout; i++)
        dy[i] = (float)((int)(i * 5 % 9) - 4) * 0.25f;
    FOR_EACH_ISA(isa)
    for (conv_strategy p = CONV_DIRECT; p < CONV_STRATEGIES; p++) {
        conv_set_strategy(p);
        ops_conv2d_forward(&g, xf, w, bias, y1, 0, 2, 1, 6);
        conv_input bytes = {NULL, samples, 1.0f / 255.0f, 0};
        ops_conv2d_forward_in(&g, bytes, w, bias, y2, 0, 2, 1, 6);
        CHECKF(!memcmp(y1, y2, sizeof(float) * 2 * nout), "[%s] width %d, forward, %s path",
               ops_isa_name(isa), W, conv_path_name(p));
        ops_conv2d_backward_filter(&g, xf, dy, dw1, dw1 + nw, 0, 2, 0, 6, 0);
        ops_conv2d_backward_filter_in(&g, bytes, dy, dw2, dw2 + nw, 0, 2, 0, 6, 0);
        CHECKF(!memcmp(dw1, dw2, sizeof(float) * (nw + 6)), "[%s] width %d, filter gradient, %s path",
               ops_isa_name(isa), W, conv_path_name(p));
    }
    conv_set_strategy(CONV_AUTO);
    free(xb), free(xf), free(w), free(bias), free(y1), free(y2), free(dy), free(dw1), free(dw2);
}

TEST(ops_conv_reads_bytes_like_floats)
{
    ops_isa was = ops_isa_active();
    const int widths[] = {3, 13, 16, 37};
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++)
        bytes_like_floats_case(widths[i]);
    ops_isa_set(was);
}

/* n samples (at most 3) of nin bytes each and the same as floats scaled by 1/255, both as
 * conv_inputs: in[0] the floats, in[1] the bytes. Filled in place (in[1] points into it). */
typedef struct byte_samples {
    uint8_t *b;
    float *f;
    const uint8_t *samples[3];
    conv_input in[2];
} byte_samples;

static void byte_samples_make(byte_samples *s, int n, size_t nin)
{
    s->b = malloc(n * nin);
    s->f = malloc(sizeof(float) * n * nin);
    for (size_t i = 0; i < n * nin; i++) {
        s->b[i] = (uint8_t)((i * 2654435761u) >> 24);
        s->f[i] = (float)s->b[i] * (1.0f / 255.0f);
    }
    for (int i = 0; i < n; i++)
        s->samples[i] = s->b + i * nin;
    s->in[0] = (conv_input){s->f, NULL, 0, 0};
    s->in[1] = (conv_input){NULL, s->samples, 1.0f / 255.0f, 0};
}

static void byte_samples_free(byte_samples *s) { free(s->b), free(s->f); }

/* Convolution fused with max-pooling gives, bit for bit, what the two layers give one after the
 * other: pooled output, argmax, and the filter gradients from the pooled gradient. Tall enough
 * for several row bands (at width 197 the backward's bands have 35 rows: 2x2 windows across a
 * band's edge), odd sizes (a last row and column no window covers), 6 filters (a partial
 * register block), 2x2 and 3x3 windows, float and byte inputs. */
TEST(ops_conv_maxpool_fused_matches_separate)
{
    /* 209: the direct backward's bands are 33 rows, so windows straddle their edges */
    const int pools[] = {2, 3, 2, 2}, widths[] = {201, 201, 197, 209};
    ops_isa was = ops_isa_active();
    FOR_EACH_ISA(isa)   /* each build's pooling rows: 16, 8 or 4 windows a block */
    for (int k = 0; k < 4; k++) {
        conv_geom g;
        pool_geom p;
        CHECK(conv_geom_init(&g, 3, 75, widths[k], 6, 3, 3, 1, 1) == 0);
        CHECK(pool_geom_init(&p, 6, g.oh, g.ow, pools[k], pools[k]) == 0);
        CHECK(conv_pool_fusable(&g, &p));
        int n = 2;
        size_t nin = (size_t)3 * 75 * widths[k], nout = (size_t)6 * g.oh * g.ow;
        size_t npool = (size_t)6 * p.oh * p.ow, nw = 6 * 27;
        byte_samples x;
        byte_samples_make(&x, n, nin);
        float *w = malloc(sizeof(float) * nw);
        float *y = malloc(sizeof(float) * n * nout), *dx = malloc(sizeof(float) * n * nout);
        float *y1 = malloc(sizeof(float) * n * npool), *y2 = malloc(sizeof(float) * n * npool);
        float *dy = malloc(sizeof(float) * n * npool), *bias = malloc(24);
        float *dyr = malloc(sizeof(float) * n * npool);
        float *dw1 = malloc(sizeof(float) * (nw + 6)), *dw2 = malloc(sizeof(float) * (nw + 6));
        int32_t *a1 = malloc(4 * n * npool), *a2 = malloc(4 * n * npool);
        for (size_t i = 0; i < nw; i++)
            w[i] = (float)((int)(i * 7 % 11) - 5) * 0.1f;
        for (int i = 0; i < 6; i++)
            bias[i] = 0.01f * (float)i;
        for (size_t i = 0; i < n * npool; i++)
            dy[i] = (float)((int)(i * 5 % 9) - 4) * 0.25f;
        for (int relu = 0; relu < 2; relu++) {   /* then a relu after the max-pool */
            ops_conv2d_forward(&g, x.f, w, bias, y, 0, n, 0, 6);
            ops_maxpool_forward(&p, y, y1, a1, 0, n);
            if (relu) {
                ops_relu_forward(y1, y1, 0, (long)(n * npool));
                ops_relu_backward(y1, dy, dyr, 0, (long)(n * npool));
            }
            ops_maxpool_backward(&p, relu ? dyr : dy, a1, dx, 0, n);
            ops_conv2d_backward_filter(&g, x.f, dx, dw1, dw1 + nw, 0, n, 0, 6, 0);
            for (int in = 0; in < 2; in++) {
                ops_conv2d_forward_maxpool(&g, x.in[in], w, bias, &p, relu, y2, a2, 0, n);
                CHECKF(!memcmp(y1, y2, sizeof(float) * n * npool), "pooled output, %dx%d, "
                       "input %d, relu %d", pools[k], pools[k], in, relu);
                CHECKF(!memcmp(a1, a2, 4 * n * npool), "argmax, %dx%d, input %d, relu %d",
                       pools[k], pools[k], in, relu);
                ops_conv2d_backward_maxpool(&g, x.in[in], &p, relu ? y2 : NULL, dy, a2, NULL, dw2,
                                        dw2 + nw, NULL, 0, n, 0);
                CHECKF(!memcmp(dw1, dw2, sizeof(float) * (nw + 6)), "filter gradient, %dx%d, "
                       "input %d, relu %d", pools[k], pools[k], in, relu);
            }
            /* from the second sample on: the arrays are indexed by sample, not from n0 */
            ops_conv2d_backward_filter(&g, x.f, dx, dw1, dw1 + nw, 1, n, 0, 6, 0);
            ops_conv2d_backward_maxpool(&g, x.in[0], &p, relu ? y2 : NULL, dy, a2, NULL, dw2,
                                        dw2 + nw, NULL, 1, n, 0);
            CHECKF(!memcmp(dw1, dw2, sizeof(float) * (nw + 6)), "filter gradient of samples 1.., "
                   "%dx%d, relu %d", pools[k], pools[k], relu);
        }
        byte_samples_free(&x);
        free(w), free(y), free(dx), free(y1), free(y2), free(dy), free(dyr), free(bias);
        free(dw1), free(dw2), free(a1), free(a2);
    }
    ops_isa_set(was);
}

/* Values a and b agree within rounding (the filter gradient's sums in another order). */
static int near_all(const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(fabsf(a[i] - b[i]) <= 1e-4f + 1e-4f * fabsf(b[i])))
            return 0;
    return 1;
}

/* One shape of ops_conv_lanes_match_the_direct_kernel: N samples of C channels, H x W, F filters, padding P. */
static void conv_lanes_case(int C, int H, int W, int F, int P)
{
    enum { N = 3 };
    conv_geom g;
    CHECK(conv_geom_init(&g, C, H, W, F, 3, 3, 1, P) == 0);
    size_t nin = (size_t)C * H * W, nout = (size_t)F * g.oh * g.ow, nw = (size_t)F * C * 9;
    ops_rng r;
    ops_rng_seed(&r, 21);
    byte_samples x;
    byte_samples_make(&x, N, nin);
    for (int c = 0; c < C; c++)   /* sample 0's first rows zero: windows of equal values */
        for (int k = 0; k < 4 * W; k++)
            x.b[c * H * W + k] = 0, x.f[c * H * W + k] = 0;
    float *w = random_floats(&r, (long)nw, 0.3f), *bias = random_floats(&r, F, 0.1f);
    float *dy = random_floats(&r, (long)(N * nout), 1), *dyr = calloc(N * nout, 4);
    float *y[2], *dw[2], *pooled[2], *dense = calloc(N * nout, 4);
    int32_t *a[2];
    for (int i = 0; i < 2; i++) {   /* [AVX2's direct kernel, AVX-512's lanes] */
        y[i] = calloc(N * nout, 4), dw[i] = calloc(nw + F, 4);
        pooled[i] = calloc(N * nout, 4), a[i] = calloc(N * nout, 4);
    }
    const int ranges[][2] = {{0, F}, {5, F - 3}, {16, F}};
    for (int i = 0; i < 2; i++) {
        ops_isa_set(i ? OPS_ISA_AVX512 : OPS_ISA_AVX2);
        for (int k = 0; k < 3; k++)   /* forward of filter ranges cut anywhere */
            ops_conv2d_forward_in(&g, x.in[k % 2], w, bias, y[i], 1, N, ranges[k][0], ranges[k][1]);
        ops_conv2d_backward_filter(&g, x.f, dy, dw[i], dw[i] + nw, 1, N, 0, F, 0);
    }
    CHECKF(!memcmp(y[0], y[1], sizeof(float) * N * nout), "%dx%dx%d -> %d: forward", C, H, W, F);
    CHECKF(near_all(dw[1], dw[0], nw + F), "%dx%dx%d -> %d: filter gradient", C, H, W, F);
    float *ref = dw[0], *part = calloc(nw + F, 4);   /* lanes' own: every other pass's bits */
    memcpy(ref, dw[1], sizeof(float) * (nw + F));
    for (int in = 0; in < 2; in++) {
        ops_conv2d_backward_filter_in(&g, x.in[in], dy, part, part + nw, 1, N, 16, F, 0);
        CHECKF(!memcmp(part, ref + 16 * C * 9, sizeof(float) * (F - 16) * C * 9) &&
               !memcmp(part + nw, ref + nw + 16, sizeof(float) * (F - 16)),
               "%dx%dx%d -> %d: filter range from 16, input %d", C, H, W, F, in);
    }
    ops_conv2d_backward_filter(&g, x.f, dy, part, part + nw, 1, N, 0, F, 0);
    ops_conv2d_backward_filter(&g, x.f, dy, part, part + nw, 1, N, 0, F, 1);
    int doubled = 1;
    for (size_t i = 0; i < nw + F; i++)
        doubled &= part[i] == ref[i] + ref[i];
    CHECKF(doubled, "%dx%dx%d -> %d: accumulated", C, H, W, F);
    /* fused with a relu: forward as the direct kernel's, gradients as the passes apart */
    ops_isa_set(OPS_ISA_AVX2);
    ops_conv2d_forward_relu(&g, x.in[0], w, bias, y[0], 0, N);
    ops_isa_set(OPS_ISA_AVX512);
    ops_conv2d_forward_relu(&g, x.in[1], w, bias, y[1], 0, N);
    CHECKF(!memcmp(y[0], y[1], sizeof(float) * N * nout), "%dx%dx%d -> %d: forward, relu", C, H, W, F);
    ops_relu_backward(y[1], dy, dyr, 0, (long)(N * nout));
    ops_conv2d_backward_filter(&g, x.f, dyr, ref, ref + nw, 0, N, 0, F, 0);
    ops_conv2d_backward_relu(&g, x.in[1], y[1], dy, w, part, part + nw, NULL, 0, N);
    CHECKF(!memcmp(part, ref, sizeof(float) * (nw + F)), "%dx%dx%d -> %d: gradient through the relu",
           C, H, W, F);
    for (int size = 2; size <= 3; size++)   /* max-pools, then a relu: the same */
        for (int relu = 0; relu < 2; relu++) {
            pool_geom p;
            CHECK(pool_geom_init(&p, F, g.oh, g.ow, size, size) == 0);
            size_t npool = (size_t)F * p.oh * p.ow;
            for (int i = 0; i < 2; i++) {
                ops_isa_set(i ? OPS_ISA_AVX512 : OPS_ISA_AVX2);
                ops_conv2d_forward_maxpool(&g, x.in[i], w, bias, &p, relu, pooled[i], a[i], 0, N);
            }
            CHECKF(!memcmp(pooled[0], pooled[1], sizeof(float) * N * npool) &&
                   !memcmp(a[0], a[1], 4 * N * npool), "%dx%dx%d -> %d: %dx%d pool, relu %d",
                   C, H, W, F, size, size, relu);
            if (relu)
                ops_relu_backward(pooled[1], dy, dyr, 0, (long)(N * npool));
            ops_maxpool_backward(&p, relu ? dyr : dy, a[1], dense, 0, N);
            ops_conv2d_backward_filter(&g, x.f, dense, ref, ref + nw, 0, N, 0, F, 0);
            ops_conv2d_backward_maxpool(&g, x.in[1], &p, relu ? pooled[1] : NULL, dy, a[1], NULL,
                                        part, part + nw, NULL, 0, N, 0);
            CHECKF(!memcmp(part, ref, sizeof(float) * (nw + F)), "%dx%dx%d -> %d: gradient "
                   "through a %dx%d pool, relu %d", C, H, W, F, size, size, relu);
        }
    byte_samples_free(&x);
    for (int i = 0; i < 2; i++)
        free(y[i]), free(dw[i]), free(pooled[i]), free(a[i]);
    free(w), free(bias), free(dy), free(dyr), free(dense), free(part);
}

/* On AVX-512, first layers (few channels, filters by 16) take the lanes kernel
 * (ops/conv_lanes.h): its forward gives AVX2's direct kernel's bits, pooled or not, on filter
 * ranges cut anywhere, from floats or bytes; its filter gradient is the direct kernel's within
 * rounding, and the same bits on any filter range, accumulated, and fused with a relu or a
 * 2x2 or 3x3 max-pool as the passes apart. Shapes: wide-28's first layer, odd sizes (rows and
 * columns no window covers, blocks past the edge), no padding, two and three channels. */
TEST(ops_conv_lanes_match_the_direct_kernel)
{
    ops_isa was = ops_isa_active();
    if (ops_isa_supported() < OPS_ISA_AVX512) {
        printf("  no AVX-512 on this machine: the lanes kernel is not used\n");
        return;
    }
    conv_lanes_case(1, 28, 28, 64, 1);
    conv_lanes_case(3, 13, 19, 32, 1);
    conv_lanes_case(2, 9, 21, 48, 0);
    ops_isa_set(was);
}

/* ops_conv2d_backward (both gradients in one call; the Winograd paths transform dy once for both)
 * gives the passes' results apart, bit for bit, on every path: odd sizes, samples from the
 * second on, float and byte inputs, and without dx. */
TEST(ops_conv_backward_matches_the_passes_apart)
{
    enum { N = 3, C = 16, H = 11, W = 14, F = 24 };
    conv_geom g;
    CHECK(conv_geom_init(&g, C, H, W, F, 3, 3, 1, 1) == 0);
    size_t nin = (size_t)C * H * W, nout = (size_t)F * g.oh * g.ow, nw = (size_t)F * C * 9;
    ops_rng r;
    ops_rng_seed(&r, 12);
    byte_samples x;
    byte_samples_make(&x, N, nin);
    float *w = random_floats(&r, (long)nw, 0.3f), *dy = random_floats(&r, (long)(N * nout), 1);
    float *dw1 = malloc(sizeof(float) * (nw + F)), *dw2 = malloc(sizeof(float) * (nw + F));
    float *dx1 = calloc(N * nin, 4), *dx2 = calloc(N * nin, 4);
    for (conv_strategy s = CONV_DIRECT; s <= CONV_WINOGRAD4; s++) {
        conv_set_strategy(s);
        const char *path = conv_path_name(s);
        ops_conv2d_backward_filter(&g, x.f, dy, dw1, dw1 + nw, 1, N, 0, F, 0);
        ops_conv2d_backward_input(&g, dy, w, dx1, 1, N);
        for (int in = 0; in < 2; in++) {
            CHECK(ops_conv2d_backward(&g, x.in[in], dy, w, dw2, dw2 + nw, dx2, 1, N) == 0);
            CHECKF(!memcmp(dw1, dw2, sizeof(float) * (nw + F)), "%s: filter gradient, input %d",
                   path, in);
            CHECKF(!memcmp(dx1, dx2, sizeof(float) * N * nin), "%s: input gradient, input %d",
                   path, in);
            memset(dw2, 0, sizeof(float) * (nw + F));
            CHECK(ops_conv2d_backward(&g, x.in[in], dy, w, dw2, dw2 + nw, NULL, 1, N) == 0);
            CHECKF(!memcmp(dw1, dw2, sizeof(float) * (nw + F)), "%s: filter gradient alone, "
                   "input %d", path, in);
        }
    }
    conv_set_strategy(CONV_AUTO);
    byte_samples_free(&x);
    free(w), free(dy), free(dw1), free(dw2), free(dx1), free(dx2);
}

/* F(4x4)'s passes on rows of 1 to 17 tiles (the AVX-512 input transform takes 8 tiles of a
 * row, or whole rows of 4 or 2 tiles, per register pair): on every path this machine has, near
 * the direct convolution; and on AVX-512, bit for bit AVX2's, whose arithmetic it shares. */
/* Winograd's products counted as its kernels compute them (conv_executed_share, which the
 * bench's share of the FMA peak uses): F(4x4)'s whole tiles, wasted outputs too, but for the
 * half tiles of the variants by lanes (AVX2, AVX-512), on which the choice of F(4x4) over
 * F(2x2) counts. */
TEST(ops_conv_executed_share_counts_the_tiles)
{
    ops_isa was = ops_isa_active();
    conv_geom wide, ten, thin;
    CHECK(conv_geom_init(&wide, 64, 14, 14, 128, 3, 3, 1, 1) == 0);   /* wide-28's */
    CHECK(conv_geom_init(&ten, 32, 10, 10, 32, 3, 3, 1, 1) == 0);
    CHECK(conv_geom_init(&thin, 8, 14, 14, 16, 3, 3, 1, 1) == 0);   /* not by lanes */
    FOR_EACH_ISA(isa)
    {
        int lanes = isa >= OPS_ISA_AVX2;
        double direct = 14 * 14 * 9, side = lanes ? 22 : 24;   /* 6 + 6 + 6 + 4, or 4 x 6 */
        CHECK(fabs(conv_executed_share(&wide, CONV_WINOGRAD4) - side * side / direct) < 1e-12);
        CHECK(fabs(conv_executed_share(&thin, CONV_WINOGRAD4) - 24 * 24 / direct) < 1e-12);
        CHECK(fabs(conv_executed_share(&wide, CONV_WINOGRAD) - 28 * 28 / direct) < 1e-12);
        CHECK(conv_executed_share(&wide, CONV_DIRECT) == 1);
        /* 10 x 10: F(4x4) 16 x 16 products by lanes (18 x 18 in whole tiles), F(2x2) 20 x 20 */
        conv_strategy ten_path = conv_path(&ten, CONV_FORWARD);
        CHECKF(ten_path == (lanes ? CONV_WINOGRAD4 : CONV_WINOGRAD), "[%s] 10 x 10: %s",
               ops_isa_name(isa), conv_path_name(ten_path));
    }
    ops_isa_set(was);
}

TEST(ops_winograd4_every_row_length)
{
    enum { N = 3, C = 3, F = 5 };
    const int widths[] = {3, 4, 5, 8, 9, 12, 15, 16, 20, 24, 28, 32, 33, 36, 62, 66, 40, 64};
    ops_rng r;
    ops_rng_seed(&r, 13);
    for (size_t k = 0; k < sizeof widths / sizeof widths[0]; k++) {
        conv_geom g;
        CHECK(conv_geom_init(&g, C, 9, widths[k], F, 3, 3, 1, (int)(k & 1)) == 0);
        size_t nin = (size_t)C * g.h * g.w, nout = (size_t)F * g.oh * g.ow, nw = (size_t)F * C * 9;
        float *x = random_floats(&r, (long)(N * nin), 1), *w = random_floats(&r, (long)nw, 0.3f);
        float *dy = random_floats(&r, (long)(N * nout), 1), *out[2][3];
        for (int a = 0; a < 2; a++) {   /* [direct or the ISA's, AVX2's][y, dx, dw] */
            out[a][0] = calloc(N * nout, 4), out[a][1] = calloc(N * nin, 4);
            out[a][2] = calloc(nw + F, 4);
        }
        conv_set_strategy(CONV_DIRECT);
        ops_conv2d_forward(&g, x, w, NULL, out[0][0], 1, N, 0, F);
        ops_conv2d_backward(&g, (conv_input){x, NULL, 0, 0}, dy, w, out[0][2], out[0][2] + nw,
                            out[0][1], 1, N);
        float *ref[3] = {out[0][0], out[0][1], out[0][2]};
        size_t n[3] = {N * nout, N * nin, nw + F};
        conv_set_strategy(CONV_WINOGRAD4);
        FOR_EACH_ISA(isa) {
            float *got[3] = {calloc(n[0], 4), calloc(n[1], 4), calloc(n[2], 4)};
            ops_conv2d_forward(&g, x, w, NULL, got[0], 1, N, 0, F);
            ops_conv2d_backward(&g, (conv_input){x, NULL, 0, 0}, dy, w, got[2], got[2] + nw, got[1],
                                1, N);
            for (int p = 0; p < 3; p++) {
                int bad = 0;
                for (size_t i = 0; i < n[p]; i++)
                    bad += !(fabsf(got[p][i] - ref[p][i]) <= 1e-3f + 1e-3f * fabsf(ref[p][i]));
                CHECKF(!bad, "[%s] width %d, pass %d: %d values off", ops_isa_name(isa),
                       widths[k], p, bad);
                if (isa == OPS_ISA_AVX2)
                    memcpy(out[1][p], got[p], sizeof(float) * n[p]);
                if (isa == OPS_ISA_AVX512)
                    CHECKF(!memcmp(got[p], out[1][p], sizeof(float) * n[p]),
                           "width %d, pass %d: AVX-512 not AVX2's bits", widths[k], p);
                free(got[p]);
            }
        }
        conv_set_strategy(CONV_AUTO);
        for (int a = 0; a < 2; a++)
            free(out[a][0]), free(out[a][1]), free(out[a][2]);
        free(x), free(w), free(dy);
    }
}

/* The same on the Winograd paths (both tile sizes), which also give the input gradient: odd
 * sizes (a last row and column no window covers, tiles past the edge), samples from the second
 * on (the fused backward works from sample 0 of its scratch), float and byte inputs. */
static void winograd_maxpool_case(int W)
{
    enum { N = 3, C = 16, H = 13, F = 20 };
    conv_geom g;
    pool_geom p;
    CHECK(conv_geom_init(&g, C, H, W, F, 3, 3, 1, 1) == 0);
    CHECK(pool_geom_init(&p, F, g.oh, g.ow, 2, 2) == 0);
    size_t nin = (size_t)C * H * W, nout = (size_t)F * g.oh * g.ow, npool = (size_t)F * p.oh * p.ow;
    size_t nw = (size_t)F * C * 9;
    ops_rng r;
    ops_rng_seed(&r, 11);
    byte_samples x;
    byte_samples_make(&x, N, nin);
    float *w = random_floats(&r, (long)nw, 0.3f);
    float *bias = random_floats(&r, F, 0.1f), *dy = random_floats(&r, (long)(N * npool), 1);
    float *dyr = calloc(N * npool, sizeof(float));
    float *y = malloc(sizeof(float) * N * nout), *dense = calloc(N * nout, sizeof(float));
    float *y1 = calloc(N * npool, 4), *y2 = calloc(N * npool, 4);
    int32_t *a1 = calloc(N * npool, 4), *a2 = calloc(N * npool, 4);
    float *dw1 = malloc(sizeof(float) * (nw + F)), *dw2 = malloc(sizeof(float) * (nw + F));
    float *dx1 = calloc(N * nin, 4), *dx2 = calloc(N * nin, 4);
    FOR_EACH_ISA(isa)
    for (conv_strategy s = CONV_WINOGRAD; s <= CONV_WINOGRAD4; s++) {
        conv_set_strategy(s);
        CHECK(conv_pool_fusable_with_input_gradient(&g, &p));
        for (int relu = 0; relu < 2; relu++) {   /* then a relu after the max-pool */
            char path[64];
            snprintf(path, sizeof path, "%s, %s", conv_path_name(s), ops_isa_name(isa));
            ops_conv2d_forward(&g, x.f, w, bias, y, 1, N, 0, F);
            ops_maxpool_forward(&p, y, y1, a1, 1, N);
            if (relu) {
                ops_relu_forward(y1, y1, (long)npool, (long)(N * npool));
                ops_relu_backward(y1, dy, dyr, (long)npool, (long)(N * npool));
            }
            ops_maxpool_backward(&p, relu ? dyr : dy, a1, dense, 1, N);
            ops_conv2d_backward_filter(&g, x.f, dense, dw1, dw1 + nw, 1, N, 0, F, 0);
            ops_conv2d_backward_input(&g, dense, w, dx1, 1, N);
            for (int in = 0; in < 2; in++) {
                ops_conv2d_forward_maxpool(&g, x.in[in], w, bias, &p, relu, y2, a2, 1, N);
                CHECKF(!memcmp(y1, y2, sizeof(float) * N * npool), "%s: pooled output, input %d, "
                       "relu %d", path, in, relu);
                CHECKF(!memcmp(a1, a2, 4 * N * npool), "%s: argmax, input %d, relu %d", path, in,
                       relu);
                ops_conv2d_backward_maxpool(&g, x.in[in], &p, relu ? y2 : NULL, dy, a2, w, dw2,
                                        dw2 + nw, dx2, 1, N, 0);
                CHECKF(!memcmp(dw1, dw2, sizeof(float) * (nw + F)), "%s: filter gradient, "
                       "input %d, relu %d", path, in, relu);
                CHECKF(!memcmp(dx1, dx2, sizeof(float) * N * nin), "%s: input gradient, "
                       "input %d, relu %d", path, in, relu);
            }
        }
    }
    conv_set_strategy(CONV_AUTO);
    byte_samples_free(&x);
    free(w), free(bias), free(dy), free(dyr), free(y), free(dense), free(y1), free(y2);
    free(a1), free(a2), free(dw1), free(dw2), free(dx1), free(dx2);
}

/* Winograd's filter gradient with the GEMM's operands either way round (dU^T = V D^T where the
 * channels, 16 or 3, would pad its 32-wide tiles and the filters would not), over two blocks
 * of tiles and filter ranges of 32 from 0 and from 32, written then accumulated: the direct
 * convolution's gradient within rounding, on every ISA. */
TEST(ops_winograd4_filter_gradient_either_way_round)
{
    const int shapes[][2] = {{16, 64}, {3, 64}, {64, 16}};   /* channels, filters */
    enum { N = 10, H = 16 };   /* 16 tiles a sample: two blocks of 128 or three of 64 */
    ops_rng r;
    ops_rng_seed(&r, 37);
    for (int k = 0; k < 3; k++) {
        int c = shapes[k][0], f = shapes[k][1];
        conv_geom g;
        CHECK(conv_geom_init(&g, c, H, H, f, 3, 3, 1, 1) == 0);
        size_t nin = (size_t)c * H * H, nout = (size_t)f * H * H, nw = (size_t)f * c * 9;
        float *x = random_floats(&r, (long)(N * nin), 1);
        float *dy = random_floats(&r, (long)(N * nout), 1);
        float *ref = calloc(nw + f, 4), *got = calloc(nw + f, 4);
        conv_set_strategy(CONV_DIRECT);
        ops_conv2d_backward_filter(&g, x, dy, ref, ref + nw, 0, N, 0, f, 0);
        conv_set_strategy(CONV_WINOGRAD4);
        FOR_EACH_ISA(isa) {
            int half = f / 2;
            for (int acc = 0; acc < 2; acc++)   /* samples [0, 4) written, [4, N) added */
                for (int f0 = 0; f0 < f; f0 += half)
                    ops_conv2d_backward_filter(&g, x, dy, got + (size_t)f0 * c * 9, NULL,
                                               acc ? 4 : 0, acc ? N : 4, f0, f0 + half, acc);
            int bad = 0;
            for (size_t i = 0; i < nw; i++)
                bad += !(fabsf(got[i] - ref[i]) <= 1e-3f + 1e-3f * fabsf(ref[i]));
            CHECKF(!bad, "[%s] %d -> %d: %d weights off", ops_isa_name(isa), c, f, bad);
        }
        conv_set_strategy(CONV_AUTO);
        free(x), free(dy), free(ref), free(got);
    }
}

/* Widths whose rows hold 2, 4, 8 and 16 whole tiles (the AVX-512 build's own gradient and
 * output transforms take those: winograd_f4_avx512.c), 6 (a part of 8 tiles in each row) and
 * 15 (the AVX2 build's there); and widths 6 and 18, whose pooled rows of 3 and 9 windows end
 * inside the last group of 4 that the AVX2 and portable builds store (they once wrote the
 * group's fifth value over the row's last). */
TEST(ops_winograd_maxpool_fused_matches_separate)
{
    const int widths[] = {15, 8, 16, 24, 32, 64, 6, 18};
    for (int k = 0; k < 8; k++)
        winograd_maxpool_case(widths[k]);
}

/* A convolution fused with the relu after it gives, bit for bit, what the two layers give one
 * after the other: the relu's output, and from its gradient the filter gradient and (the
 * Winograd paths) the input gradient, on every ISA: odd sizes (tiles past the edge), samples
 * from the second on, float and byte inputs. The direct path fuses without the input gradient
 * only, and refuses it. */
static void conv_relu_case(int W)
{
    enum { N = 3, C = 16, H = 13, F = 20 };
    conv_geom g;
    CHECK(conv_geom_init(&g, C, H, W, F, 3, 3, 1, 1) == 0);
    size_t nin = (size_t)C * H * W, nout = (size_t)F * g.oh * g.ow, nw = (size_t)F * C * 9;
    ops_rng r;
    ops_rng_seed(&r, 17);
    byte_samples x;
    byte_samples_make(&x, N, nin);
    float *w = random_floats(&r, (long)nw, 0.3f), *bias = random_floats(&r, F, 0.1f);
    float *dy = random_floats(&r, (long)(N * nout), 1), *dyr = calloc(N * nout, 4);
    float *y1 = calloc(N * nout, 4), *y2 = calloc(N * nout, 4);
    float *dw1 = malloc(sizeof(float) * (nw + F)), *dw2 = malloc(sizeof(float) * (nw + F));
    float *dx1 = calloc(N * nin, 4), *dx2 = calloc(N * nin, 4);
    const conv_strategy paths[] = {CONV_DIRECT, CONV_WINOGRAD, CONV_WINOGRAD4};
    FOR_EACH_ISA(isa)
    for (int k = 0; k < 3; k++) {
        conv_set_strategy(paths[k]);
        int with_dx = paths[k] != CONV_DIRECT;
        char path[64];
        snprintf(path, sizeof path, "%s, %s", conv_path_name(paths[k]), ops_isa_name(isa));
        CHECKF(conv_relu_fusable(&g, 0) && conv_relu_fusable(&g, 1) == with_dx, "%s", path);
        ops_conv2d_forward(&g, x.f, w, bias, y1, 1, N, 0, F);
        ops_relu_forward(y1, y1, (long)nout, (long)(N * nout));
        ops_relu_backward(y1, dy, dyr, (long)nout, (long)(N * nout));
        ops_conv2d_backward(&g, x.in[0], dyr, w, dw1, dw1 + nw, with_dx ? dx1 : NULL, 1, N);
        for (int in = 0; in < 2; in++) {
            CHECK(ops_conv2d_forward_relu(&g, x.in[in], w, bias, y2, 1, N) == 0);
            CHECKF(!memcmp(y1, y2, sizeof(float) * N * nout), "%s: output, input %d", path, in);
            CHECK(ops_conv2d_backward_relu(&g, x.in[in], y2, dy, w, dw2, dw2 + nw,
                                           with_dx ? dx2 : NULL, 1, N) == 0);
            CHECKF(!memcmp(dw1, dw2, sizeof(float) * (nw + F)), "%s: filter gradient, input %d",
                   path, in);
            CHECKF(!with_dx || !memcmp(dx1, dx2, sizeof(float) * N * nin),
                   "%s: input gradient, input %d", path, in);
        }
        if (!with_dx)
            CHECK(ops_conv2d_backward_relu(&g, x.in[0], y2, dy, w, dw2, dw2 + nw, dx2, 1, N) < 0);
    }
    conv_set_strategy(CONV_AUTO);
    byte_samples_free(&x);
    free(w), free(bias), free(dy), free(dyr), free(y1), free(y2), free(dw1), free(dw2);
    free(dx1), free(dx2);
}

TEST(ops_conv_relu_fused_matches_separate)
{
    const int widths[] = {15, 16, 32};   /* as ops_winograd_maxpool_fused_matches_separate */
    for (int k = 0; k < 3; k++)
        conv_relu_case(widths[k]);
}

/* One backward of a shape on samples [1, N) with the input gradient, by the fused call k
 * (0: unfused, 1: with its relu, 2: with its max-pool), x through a relu or not; -1 where the
 * call is not on this path. */
static int backward_call(int k, const conv_geom *g, const pool_geom *p, conv_input x,
                         const float *w, const float *dy, const float *y, const int32_t *argmax,
                         float *dw, float *dx, int N)
{
    float *db = dw + (size_t)g->f * g->c * 9;
    if (k == 0)
        return ops_conv2d_backward(g, x, dy, w, dw, db, dx, 1, N);
    if (k == 1)
        return ops_conv2d_backward_relu(g, x, y, dy, w, dw, db, dx, 1, N);
    return ops_conv2d_backward_maxpool(g, x, p, y, dy, argmax, w, dw, db, dx, 1, N, 0);
}

/* An input that is a relu's output (conv_input.relu_output) takes the input gradient through
 * that relu: relu_backward's bits on the gradient without it, the filter gradient unchanged,
 * sample 0 (outside the range) untouched. 28 x 28 cuts the Winograd blocks inside samples
 * (18 tile rows of 7 a block at F(4x4), 9 of 14 at F(2x2)), so a sample is masked only once
 * the block after has added its edge rows; the direct path masks after its input gradient. */
TEST(ops_conv_input_gradient_through_the_relu_before)
{
    enum { N = 5, C = 16, H = 28, F = 16 };
    conv_geom g;
    pool_geom p;
    CHECK(conv_geom_init(&g, C, H, H, F, 3, 3, 1, 1) == 0);
    CHECK(pool_geom_init(&p, F, g.oh, g.ow, 2, 2) == 0);
    size_t nin = (size_t)C * H * H, nout = (size_t)F * g.oh * g.ow, nw = (size_t)F * C * 9 + F;
    ops_rng r;
    ops_rng_seed(&r, 23);
    float *xs = random_floats(&r, (long)(N * nin), 1), *w = random_floats(&r, (long)nw, 0.3f);
    float *dy = random_floats(&r, (long)(N * nout), 1), *y = random_floats(&r, (long)(N * nout), 1);
    int32_t *argmax = calloc(N * nout, sizeof(int32_t));
    ops_relu_forward(xs, xs, 0, (long)(N * nin));   /* half of it zeros */
    float *dx[2], *dw[2];
    for (int i = 0; i < 2; i++)
        dx[i] = calloc(N * nin, sizeof(float)), dw[i] = calloc(nw, sizeof(float));
    const conv_strategy paths[] = {CONV_WINOGRAD, CONV_WINOGRAD4, CONV_DIRECT};
    ops_isa was = ops_isa_active();
    FOR_EACH_ISA(isa)   /* the variants by lanes mask after, the others as they store */
    for (int s = 0; s < 3; s++)
        for (int k = 0; k < (paths[s] == CONV_DIRECT ? 1 : 3); k++) {
            conv_set_strategy(paths[s]);
            ops_conv2d_forward_maxpool(&g, (conv_input){xs, NULL, 0, 0}, w, w + nw - F, &p, 1,
                                       y, argmax, 0, N);   /* a real argmax for the pooled call */
            for (int i = 0; i < 2; i++) {
                for (size_t j = 0; j < N * nin; j++)
                    dx[i][j] = 7.0f;
                CHECK(backward_call(k, &g, &p, (conv_input){xs, NULL, 0, i}, w, dy, y, argmax,
                                    dw[i], dx[i], N) == 0);
            }
            conv_set_strategy(CONV_AUTO);
            ops_relu_backward(xs, dx[0], dx[0], (long)nin, (long)(N * nin));
            CHECKF(!memcmp(dx[0], dx[1], sizeof(float) * N * nin) &&
                       !memcmp(dw[0], dw[1], sizeof(float) * nw),
                   "[%s] %s, call %d: not the relu's gradient", ops_isa_name(isa),
                   conv_path_name(paths[s]), k);
            CHECK(dx[1][0] == 7.0f && dx[1][nin - 1] == 7.0f);
        }
    ops_isa_set(was);
    for (int i = 0; i < 2; i++)
        free(dx[i]), free(dw[i]);
    free(xs), free(w), free(dy), free(y), free(argmax);
}

/* Every output of one run of F(4x4)'s passes on a shape, for lanes_case to compare: the
 * output (two filter ranges of 16), through a relu, pooled (without and with a relu), the
 * filter and input gradients of those three, and the argmaxes. */
enum { LANES_OUTPUTS = 12 };

static void lanes_passes(const conv_geom *g, const pool_geom *p, conv_input x, const float *w,
                         const float *bias, const float *dy, const float *dyp,
                         float *o[LANES_OUTPUTS])
{
    int N = 3, F = g->f;
    size_t nw = (size_t)F * g->c * 9;
    int32_t *a[2] = {(int32_t *)o[10], (int32_t *)o[11]};
    ops_conv2d_forward_in(g, x, w, bias, o[0], 1, N, 0, F / 2);
    ops_conv2d_forward_in(g, x, w, bias, o[0], 1, N, F / 2, F);
    ops_conv2d_forward_relu(g, x, w, bias, o[1], 1, N);
    for (int relu = 0; relu < 2; relu++)
        ops_conv2d_forward_maxpool(g, x, w, bias, p, relu, o[2 + relu], a[relu], 1, N);
    ops_conv2d_backward(g, x, dy, w, o[4], o[4] + nw, o[7], 1, N);
    ops_conv2d_backward_relu(g, x, o[1], dy, w, o[5], o[5] + nw, o[8], 1, N);
    ops_conv2d_backward_maxpool(g, x, p, o[3], dyp, a[1], w, o[6], o[6] + nw, o[9], 1, N, 0);
}


/* The rows a Winograd block reads, as winograd_ahead lists them for the GEMMs to prefetch: a
 * 32 x 32 layer of 32 channels in channel lanes, F(4x4) (8 x 8 tiles a sample), the block of
 * tile rows 4 to 12: sample 0's input rows 15 to 31 and sample 1's 0 to 16 (padding 1), of
 * each block of 16 channels; sample 0's second block runs on into sample 1's first, one run.
 * The pooled gradient of filters [16, 32) there: rows 8 to 15 and 0 to 7 of 16 x 16, values
 * then argmaxes. Fails when rows are clipped wrong, runs are not merged, or a sample is
 * missed. */
TEST(ops_winograd_ahead_lists_the_rows_a_block_reads)
{
    conv_geom g;
    CHECK(conv_geom_init(&g, 32, 32, 32, 32, 3, 3, 1, 1) == 0);
    g.in_lanes = g.out_lanes = 1;
    tiling t = {.g = &g, .m = 4, .points = 36, .th = 8, .tw = 8, .r0 = 4, .r1 = 12};
    static float x[2 * 32 * 32 * 32];
    size_t row = 16 * 32, sample = 32 * 32 * 32;   /* floats: a row of 16 lanes, a sample */
    winograd_ahead a = {.n = 0, .total = 0};
    winograd_ahead_input_rows(&a, &t, (conv_input){x, NULL, 0, 0});
    CHECK(a.n == 3);
    CHECK(a.at[0] == (const char *)(x + 15 * row) && a.bytes[0] == sizeof(float) * 17 * row);
    CHECK(a.at[1] == (const char *)(x + 16 * 32 * 32 + 15 * row));
    CHECK(a.bytes[1] == sizeof(float) * (17 + 17) * row);
    CHECK(a.at[2] == (const char *)(x + sample + 16 * 32 * 32));
    CHECK(a.bytes[2] == sizeof(float) * 17 * row);
    CHECK(a.total == sizeof(float) * 4 * 17 * row);

    pool_geom p;
    CHECK(pool_geom_init(&p, 32, 32, 32, 2, 2) == 0);
    static float dy[2 * 32 * 16 * 16];
    static int32_t argmax[2 * 32 * 16 * 16];
    winograd_grad src = {dy, &p, argmax, NULL};
    winograd_ahead d = {.n = 0, .total = 0};
    winograd_ahead_output_rows(&d, &t, &src, 16, 32);
    size_t prow = 16 * 16, psample = 32 * 16 * 16, pblock = 16 * 16 * 16;
    CHECK(d.n == 4);
    CHECK(d.at[0] == (const char *)(dy + pblock + 8 * prow) && d.bytes[0] == sizeof(float) * 8 * prow);
    CHECK(d.at[1] == (const char *)(argmax + pblock + 8 * prow));
    CHECK(d.at[2] == (const char *)(dy + psample + pblock) && d.bytes[2] == sizeof(float) * 8 * prow);
    CHECK(d.at[3] == (const char *)(argmax + psample + pblock));
    CHECK(d.total == sizeof(float) * 4 * 8 * prow);
}

/* Whether every a[i] is b[i] within rel times b's largest magnitude. */
static int near_largest(const float *a, const float *b, size_t n, double rel)
{
    double big = 0, diff = 0;
    for (size_t i = 0; i < n; i++) {
        big = fabs(b[i]) > big ? fabs(b[i]) : big;
        diff = fabs(a[i] - b[i]) > diff ? fabs(a[i] - b[i]) : diff;
    }
    return diff <= rel * big;
}

/* F(4x4) with channels and filters 16 to a pixel (winograd_f4_lanes_impl.h), 8 to a register
 * on AVX2, gives the bits of AVX2's variant by columns: outputs (filter ranges, relu, max-pool
 * and its argmax), filter and input gradients, from floats and bytes; rows of 1 to 16 tiles,
 * edges, padding 0 and 1, a blank sample (its windows tie: the first kept). Where it takes
 * half tiles (an output side of 4k + 1 or 4k + 2: winograd_tiling.h), which the variants by
 * columns do not have, their values within 1e-5 of each output's largest (F(4x4)'s own
 * error is some 5e-5), and their argmaxes. AVX-512's, 16 to a register, gives AVX2's by
 * lanes' bits, half tiles too (FUSE_FENCE). */
static void lanes_case(int C, int H, int W, int F, int pad)
{
    enum { N = 3, RUNS = 3 };
    conv_geom g;
    pool_geom p;
    CHECK(conv_geom_init(&g, C, H, W, F, 3, 3, 1, pad) == 0);
    CHECK(pool_geom_init(&p, F, g.oh, g.ow, 2, 2) == 0);
    size_t nin = (size_t)C * H * W, nout = (size_t)F * g.oh * g.ow, npool = (size_t)F * p.oh * p.ow;
    size_t nw = (size_t)F * C * 9;
    int halves = g.oh % 4 == 1 || g.oh % 4 == 2 || g.ow % 4 == 1 || g.ow % 4 == 2;
    ops_rng r;
    ops_rng_seed(&r, 41);
    byte_samples x;
    byte_samples_make(&x, N, nin);
    memset(x.b + (N - 1) * nin, 0, nin);   /* a blank sample: its pooled windows all tie */
    memset(x.f + (N - 1) * nin, 0, sizeof(float) * nin);
    float *w = random_floats(&r, (long)nw, 0.3f), *bias = random_floats(&r, F, 0.1f);
    float *dy = random_floats(&r, (long)(N * nout), 1);
    float *dyp = random_floats(&r, (long)(N * npool), 1);
    const size_t n[LANES_OUTPUTS] = {nout,   nout,   npool, npool, nw + F, nw + F,
                                     nw + F, nin,    nin,   nin,   npool,  npool};
    const char *name[RUNS] = {"AVX2 by columns", "AVX2 by lanes", "AVX-512 by lanes"};
    float *run[RUNS][LANES_OUTPUTS];
    for (int k = 0; k < RUNS; k++)
        for (int i = 0; i < LANES_OUTPUTS; i++)
            run[k][i] = calloc(N * n[i], sizeof(float));
    ops_isa was = ops_isa_active();
    int runs = ops_isa_supported() >= OPS_ISA_AVX512 ? 3 : 2;
    conv_set_strategy(CONV_WINOGRAD4);
    for (int in = 0; in < 2; in++) {
        for (int k = 0; k < runs; k++) {
            CHECK(ops_isa_set(k == 2 ? OPS_ISA_AVX512 : OPS_ISA_AVX2) == 0);
            conv_winograd_allow_lanes(k > 0);
            CHECK(conv_winograd4_by_lanes(&g) == (k > 0));
            lanes_passes(&g, &p, x.in[in], w, bias, dy, dyp, run[k]);
        }
        conv_winograd_allow_lanes(1);
        for (int k = 1; k < runs; k++)
            for (int i = 0; i < LANES_OUTPUTS; i++) {
                int values = k == 1 && halves && i < 10;   /* half tiles against whole ones */
                CHECKF(values ? near_largest(run[k][i], run[k - 1][i], N * n[i], 1e-5)
                              : !memcmp(run[k - 1][i], run[k][i], sizeof(float) * N * n[i]),
                       "%d -> %d, %dx%d, pad %d, input %d: output %d of %s not %s's %s", C, F, H,
                       W, pad, in, i, name[k], name[k - 1], values ? "values" : "bits");
            }
    }
    ops_isa_set(was);
    conv_set_strategy(CONV_AUTO);
    for (int k = 0; k < RUNS; k++)
        for (int i = 0; i < LANES_OUTPUTS; i++)
            free(run[k][i]);
    byte_samples_free(&x);
    free(w), free(bias), free(dy), free(dyp);
}

TEST(ops_winograd4_lanes_match_the_columns)
{
    if (ops_isa_supported() < OPS_ISA_AVX2) {
        printf("  (no AVX2 here: F(4x4) by lanes is not taken)\n");
        return;
    }
    /* the last four: a sample's tile rows in two blocks of tiles (winograd_f4_lanes_input_adjoint
     * reads the rows that the block before left back from dx); 64 x 64 and 48 x 64 with planes
     * a multiple of 4 KB apart (and 32 x 32): the input gradient staged. Half tiles: 13 x 15
     * (the last tile rows), 40 x 37 (the last tiles), and both ways 14 x 14 (wide-28's), 5 x 6,
     * 6 x 10, 17 x 18, 8 x 12 unpadded (the windows' last column inside the input), 2 x 2 (one
     * tile) and 42 x 38 (blocks across samples) */
    const int shapes[][5] = {{16, 13, 15, 32, 1}, {32, 8, 8, 16, 1},   {16, 14, 14, 48, 1},
                             {32, 9, 21, 32, 0},  {16, 32, 32, 16, 1}, {16, 5, 6, 16, 1},
                             {16, 4, 4, 16, 1},   {48, 16, 16, 32, 1}, {16, 6, 10, 16, 1},
                             {32, 17, 18, 16, 1}, {16, 2, 2, 32, 1},   {16, 8, 12, 16, 0},
                             {16, 64, 64, 16, 1}, {32, 40, 37, 48, 1}, {16, 48, 64, 16, 1},
                             {16, 42, 38, 16, 1}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        lanes_case(shapes[k][0], shapes[k][1], shapes[k][2], shapes[k][3], shapes[k][4]);
}

/* n samples of c planes of hw values (c a multiple of 16), NCHW into channel lanes (conv.h:
 * [n][c / 16][hw][16]), or back. As bits: argmaxes go through too. */
static void lanes_layout(const void *from, void *to, int n, int c, int hw, int back)
{
    const uint32_t *in = from;
    uint32_t *out = to;
    for (int s = 0; s < n; s++)
        for (int k = 0; k < c; k++)
            for (int p = 0; p < hw; p++) {
                size_t nchw = ((size_t)s * c + k) * hw + p;
                size_t lanes = ((size_t)s * c + k / 16 * 16) * hw + (size_t)p * 16 + k % 16;
                out[back ? nchw : lanes] = in[back ? lanes : nchw];
            }
}

static float *lanes_copy_of(const float *x, int n, int c, int hw)
{
    float *y = malloc(sizeof(float) * (size_t)n * c * hw);
    lanes_layout(x, y, n, c, hw, 0);
    return y;
}

/* A shape's passes in NCHW, then with the input (where it has 16 channels or more) and the
 * output in channel lanes: every output, brought back to NCHW, and every gradient the same
 * bits (lanes_passes' 12, the forward by filter ranges of 16; a first layer, 3 channels on the
 * lanes kernel, without its input gradient). */
static void layout_case(int C, int H, int W, int F)
{
    enum { N = 3 };
    conv_geom g;
    pool_geom p;
    CHECK(conv_geom_init(&g, C, H, W, F, 3, 3, 1, 1) == 0);
    CHECK(pool_geom_init(&p, F, g.oh, g.ow, 2, 2) == 0);
    int in = C % 16 == 0, hw = g.oh * g.ow, phw = p.oh * p.ow;
    pool_geom p3;   /* other windows than 2x2: NCHW */
    CHECK(pool_geom_init(&p3, F, g.oh, g.ow, 3, 3) == 0);
    CHECK(conv_lanes_layout(&g, &p, CONV_LANES_OUTPUT, in));
    CHECK(conv_lanes_layout(&g, NULL, CONV_LANES_INPUT, in) == in);
    CHECK(!conv_lanes_layout(&g, &p3, CONV_LANES_OUTPUT, in));
    size_t nin = (size_t)C * H * W, nout = (size_t)F * hw, npool = (size_t)F * phw;
    size_t nw = (size_t)F * C * 9;
    ops_rng r;
    ops_rng_seed(&r, 43);
    float *x = random_floats(&r, (long)(N * nin), 1), *w = random_floats(&r, (long)nw, 0.3f);
    float *bias = random_floats(&r, F, 0.1f), *dy = random_floats(&r, (long)(N * nout), 1);
    float *dyp = random_floats(&r, (long)(N * npool), 1);
    const size_t n[LANES_OUTPUTS] = {nout,   nout,   npool, npool, nw + F, nw + F,
                                     nw + F, nin,    nin,   nin,   npool,  npool};
    /* in lanes: 0 for the weights' gradients, else the planes and their size */
    const int planes[LANES_OUTPUTS][2] = {{F, hw}, {F, hw},  {F, phw}, {F, phw},
                                          {0, 0},  {0, 0},   {0, 0},   {C, H * W},
                                          {C, H * W}, {C, H * W}, {F, phw}, {F, phw}};
    float *run[2][LANES_OUTPUTS];   /* NCHW's, lanes' */
    float *gated[2][2];   /* pooled without relu_y (the next layer gates): dW and db, dx */
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < LANES_OUTPUTS; i++)
            run[k][i] = calloc(N * n[i], sizeof(float));
        gated[k][0] = calloc(nw + F, sizeof(float));
        gated[k][1] = calloc(N * nin, sizeof(float));
    }
    float *xl = in ? lanes_copy_of(x, N, C, H * W) : x;
    float *dyl = lanes_copy_of(dy, N, F, hw), *dypl = lanes_copy_of(dyp, N, F, phw);
    for (int k = 0; k < 2; k++) {
        conv_geom gk = g;
        gk.in_lanes = k && in, gk.out_lanes = k;
        conv_input xk = {k ? xl : x, NULL, 0, 0};
        const float *d = k ? dyl : dy, *dp = k ? dypl : dyp;
        float **o = run[k];
        int32_t *a[2] = {(int32_t *)o[10], (int32_t *)o[11]};
        for (int f = 0; f < F; f += 16)
            CHECK(ops_conv2d_forward_in(&gk, xk, w, bias, o[0], 1, N, f, f + 16) == 0);
        CHECK(ops_conv2d_forward_relu(&gk, xk, w, bias, o[1], 1, N) == 0);
        for (int relu = 0; relu < 2; relu++)
            CHECK(ops_conv2d_forward_maxpool(&gk, xk, w, bias, &p, relu, o[2 + relu], a[relu], 1,
                                             N) == 0);
        if (in) {
            CHECK(ops_conv2d_backward(&gk, xk, d, w, o[4], o[4] + nw, o[7], 1, N) == 0);
            xk.relu_output = 1;   /* and through the relu that gave x */
        }
        CHECK(ops_conv2d_backward_relu(&gk, xk, o[1], d, w, o[5], o[5] + nw, in ? o[8] : NULL,
                                       1, N) == 0);
        CHECK(ops_conv2d_backward_maxpool(&gk, xk, &p, o[3], dp, a[1], w, o[6], o[6] + nw,
                                          in ? o[9] : NULL, 1, N, 0) == 0);
        CHECK(ops_conv2d_backward_maxpool(&gk, xk, &p, NULL, dp, a[1], w, gated[k][0],
                                          gated[k][0] + nw, in ? gated[k][1] : NULL, 1, N,
                                          0) == 0);
    }
    float *gated_dx = malloc(sizeof(float) * N * nin);
    if (in)
        lanes_layout(gated[1][1], gated_dx, N, C, H * W, 1);
    CHECKF(!memcmp(gated[0][0], gated[1][0], sizeof(float) * (nw + F)) &&
               (!in || !memcmp(gated[0][1], gated_dx, sizeof(float) * N * nin)),
           "%d -> %d, %dx%d: pooled without the relu's output, in lanes: not NCHW's bits", C,
           F, H, W);
    free(gated_dx);
    for (int i = 0; i < LANES_OUTPUTS; i++) {
        if (!in && planes[i][0] == C)   /* a first layer's input gradient: none */
            continue;
        float *back = malloc(sizeof(float) * N * n[i]);
        if (planes[i][0])
            lanes_layout(run[1][i], back, N, planes[i][0], planes[i][1], 1);
        else
            memcpy(back, run[1][i], sizeof(float) * N * n[i]);
        CHECKF(!memcmp(run[0][i], back, sizeof(float) * N * n[i]),
               "%d -> %d, %dx%d: output %d in channel lanes not NCHW's bits", C, F, H, W, i);
        free(back);
    }
    /* NCHW paths refuse lanes: a 3x3 layer of 8 filters, and the input of a first layer */
    conv_geom bad = g;
    bad.in_lanes = 1;
    CHECK(in || ops_conv2d_forward_in(&bad, (conv_input){x, NULL, 0, 0}, w, bias, run[0][0], 0,
                                      1, 0, F) == -1);
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < LANES_OUTPUTS; i++)
            free(run[k][i]);
        free(gated[k][0]), free(gated[k][1]);
    }
    if (in)
        free(xl);
    free(x), free(w), free(bias), free(dy), free(dyp), free(dyl), free(dypl);
}

TEST(ops_conv_in_channel_lanes_gives_the_nchw_bits)
{
    if (ops_isa_supported() < OPS_ISA_AVX2) {
        printf("  (no AVX2 here: channel lanes are not taken)\n");
        return;
    }
    ops_isa was = ops_isa_active();
    /* Winograd F(4x4): 32 x 32 (the 4 KB planes), 16 x 16, 8 x 8, 14 x 14 and 13 x 15 (half
     * tiles, pooled rows of 7 and 6), a sample's tile rows in two blocks (40 x 40);
     * first layers of 3 channels on the lanes kernel (AVX-512's only) */
    const int shapes[][4] = {{32, 32, 32, 32}, {32, 16, 16, 64}, {64, 8, 8, 128},
                             {16, 14, 14, 32}, {16, 13, 15, 16}, {32, 40, 40, 16},
                             {3, 32, 32, 32},  {3, 13, 15, 16}};
    for (ops_isa isa = OPS_ISA_AVX2; isa <= ops_isa_supported() && isa <= OPS_ISA_AVX512; isa++) {
        CHECK(ops_isa_set(isa) == 0);
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
            conv_geom g;
            CHECK(conv_geom_init(&g, shapes[k][0], shapes[k][1], shapes[k][2], shapes[k][3], 3,
                                 3, 1, 1) == 0);
            if (isa == OPS_ISA_AVX512 || shapes[k][0] % 16 == 0)
                layout_case(shapes[k][0], shapes[k][1], shapes[k][2], shapes[k][3]);
            else
                CHECK(!conv_lanes_layout(&g, NULL, CONV_LANES_OUTPUT, 0));
        }
    }
    ops_isa_set(was);
}
