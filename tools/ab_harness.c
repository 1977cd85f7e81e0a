/* Two builds of the CPU kernels in one process (tools/bench_ab.sh): each a shared library of
 * ops/ and common/, loaded side by side; the fused convolution passes of the bench's layers
 * timed with one library, then the other, call by call, the fastest call of each kept. A host
 * whose speed drifts over minutes slows both alike this way, where runs one after another
 * would each catch a different stretch of it. Before every call a sweep through 4 MB takes the
 * layer's input out of L2, as it arrives in training (from the task before, or the other core).
 * Each layer's relu goes back as training's plan sends it (engine/train/plan.c): through the
 * next layer's input gradient where that layer takes it (relu_y NULL here), and the layers
 * with an input gradient take the relu before them; and the activations between two
 * convolutions in channel lanes where training's plan puts them there (where the library
 * has conv_lanes_layout and it says yes).
 * DAHL's first layers read their bytes in place: 16 samples a call, drawn from 64 MB of them,
 * out of cache as a data set is.
 *
 * AB_BASE_ISA and AB_NEW_ISA (portable, avx2 or avx512) hold a library to that instruction
 * set (its own ops_isa_set): one tree's two builds compared in one process. AB_ONLY times only
 * the cases whose name contains it (perf over one layer).
 *
 * usage: ab_harness CALLS BASE.so NEW.so
 * prints: bench ab LAYER PASS base_us=A new_us=B speedup=A/B */
#include "ops/conv.h"
#include "ops/cpu.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*geom_init_fn)(conv_geom *, int, int, int, int, int, int, int, int);
typedef int (*pool_init_fn)(pool_geom *, int, int, int, int, int);
typedef int (*forward_fn)(const conv_geom *, conv_input, const float *, const float *,
                          const pool_geom *, int, float *, int32_t *, int, int);
typedef int (*backward_fn)(const conv_geom *, conv_input, const pool_geom *, const float *,
                           const float *, const int32_t *, const float *, float *, float *,
                           float *, int, int, int);
typedef int (*relu_forward_fn)(const conv_geom *, conv_input, const float *, const float *,
                               float *, int, int);
typedef int (*relu_backward_fn)(const conv_geom *, conv_input, const float *, const float *,
                                const float *, float *, float *, float *, int, int);
typedef int (*lanes_layout_fn)(const conv_geom *, const pool_geom *, int, int);

typedef struct kernels {
    const char *path;
    geom_init_fn geom_init;
    pool_init_fn pool_init;
    forward_fn forward;
    backward_fn backward;
    relu_forward_fn relu_forward;
    relu_backward_fn relu_backward;
    lanes_layout_fn lanes_layout;   /* NULL: NCHW only */
} kernels;

/* A layer of the bench's jobs, fused with its 2x2 max-pool and relu (or its relu alone), 16
 * samples a call. */
typedef struct layer_case {
    const char *name;
    int c, h, f, dx;   /* channels, side, filters; dx: the input gradient too */
    int pool;          /* fused with a max-pool; else with its relu only */
    int next_gates;    /* the next layer takes this one's relu back (no relu_y here) */
    int in_lanes, out_lanes;   /* the layer before, after it a convolution (plan.c) */
} layer_case;

static const layer_case cases[] = {
    {"wide-28_28x28_1-64_direct", 1, 28, 64, 0, 1, 1, 0, 1},
    {"cifar_16x16_16-32", 16, 16, 32, 1, 1, 0, 1, 0},
    {"vgg_32x32_3-32_relu", 3, 32, 32, 0, 0, 1, 0, 1},
    {"vgg_32x32_32-32", 32, 32, 32, 1, 1, 1, 1, 1},
    {"vgg_16x16_32-64_relu", 32, 16, 64, 1, 0, 1, 1, 1},
    {"vgg_16x16_64-64", 64, 16, 64, 1, 1, 1, 1, 1},
    {"vgg_8x8_64-128", 64, 8, 128, 1, 1, 0, 1, 0},
    {"wide-28_14x14_64-128", 64, 14, 128, 1, 1, 0, 1, 0},
};

/* A first layer of DAHL's CNN (4 filters, no padding, pooled), on bytes. */
typedef struct bytes_case {
    const char *name;
    int c, h, w;
} bytes_case;

static const bytes_case first_layers[] = {
    {"dahl_62x84x3_bytes", 3, 62, 84},
    {"dahl_116x158x3_bytes", 3, 116, 158},
};

enum { SAMPLES = 16, SWEEP_BYTES = 4 << 20, DATA_SET_BYTES = 64 << 20 };

/* Holds the library lib to the instruction set named by the environment variable var, if
 * set. */
static int hold_isa(void *lib, const char *var, const char *path)
{
    const char *name = getenv(var);
    if (!name || !*name)
        return 0;
    int (*set)(ops_isa) = NULL;
    *(void **)&set = dlsym(lib, "ops_isa_set");
    static const char *const names[] = {"portable", "avx2", "avx512"};   /* by ops_isa */
    ops_isa isa = OPS_ISA_PORTABLE;
    while (isa <= OPS_ISA_AVX512 && strcmp(name, names[isa]))
        isa++;
    if (!set || isa > OPS_ISA_AVX512 || set(isa)) {
        fprintf(stderr, "ab_harness: %s=%s: not an instruction set %s can run here\n", var, name,
                path);
        return -1;
    }
    printf("bench ab %s=%s\n", var, name);
    return 0;
}

/* other: the library loaded before, or NULL. One file loaded twice is one library to dlopen,
 * whose instruction set the second hold_isa would set for both: refused. */
static int load(kernels *k, const char *path, const char *isa_var, void **lib_out, void *other)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "ab_harness: %s\n", dlerror());
        return -1;
    }
    if (lib == other) {
        fprintf(stderr, "ab_harness: %s is the base library again (dlopen shares it): give a copy\n",
                path);
        return -1;
    }
    *lib_out = lib;
    k->path = path;
    *(void **)&k->geom_init = dlsym(lib, "conv_geom_init");
    *(void **)&k->pool_init = dlsym(lib, "pool_geom_init");
    *(void **)&k->forward = dlsym(lib, "ops_conv2d_forward_maxpool");
    *(void **)&k->backward = dlsym(lib, "ops_conv2d_backward_maxpool");
    *(void **)&k->relu_forward = dlsym(lib, "ops_conv2d_forward_relu");
    *(void **)&k->relu_backward = dlsym(lib, "ops_conv2d_backward_relu");
    *(void **)&k->lanes_layout = dlsym(lib, "conv_lanes_layout");
    if (!k->geom_init || !k->pool_init || !k->forward || !k->backward || !k->relu_forward ||
        !k->relu_backward) {
        fprintf(stderr, "ab_harness: %s lacks the fused convolution's functions\n", path);
        return -1;
    }
    return hold_isa(lib, isa_var, path);
}

static float *random_floats(size_t n)
{
    float *p = malloc(sizeof(float) * n);
    for (size_t i = 0; p && i < n; i++)
        p[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    return p;
}

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* g with the case's layouts, where library k takes them. */
static conv_geom layout_of(const layer_case *lc, const kernels *k, const conv_geom *g)
{
    conv_geom l = *g;
    l.in_lanes = lc->in_lanes && k->lanes_layout &&
                 k->lanes_layout(g, NULL, CONV_LANES_INPUT, lc->dx);
    l.out_lanes = lc->out_lanes && k->lanes_layout &&
                  k->lanes_layout(g, NULL, CONV_LANES_OUTPUT, lc->dx);
    return l;
}

/* One pass of a case with library k: forward, or backward. */
static int run_pass(const layer_case *lc, const kernels *k, int pass, const conv_geom *nchw,
                    const pool_geom *p, conv_input in, const float *w, const float *b, float *y,
                    int32_t *argmax, const float *dy, float *dw, float *dx)
{
    conv_geom layout = layout_of(lc, k, nchw);
    const conv_geom *g = &layout;
    size_t nw = (size_t)lc->f * lc->c * 9;
    const float *relu_y = lc->next_gates ? NULL : y;
    if (pass == 0)
        return lc->pool ? k->forward(g, in, w, b, p, 1, y, argmax, 0, SAMPLES)
                        : k->relu_forward(g, in, w, b, y, 0, SAMPLES);
    if (lc->pool)
        return k->backward(g, in, p, relu_y, dy, argmax, w, dw, dw + nw, lc->dx ? dx : NULL, 0,
                           SAMPLES, 0);
    return k->relu_backward(g, in, relu_y, dy, w, dw, dw + nw, lc->dx ? dx : NULL, 0, SAMPLES);
}

/* The fastest forward and backward call of each library, alternating. */
static int time_case(const layer_case *lc, const kernels k[2], int calls, char *sweep,
                     double best[2][2])
{
    conv_geom g;
    pool_geom p;
    if (k[0].geom_init(&g, lc->c, lc->h, lc->h, lc->f, 3, 3, 1, 1) ||
        k[0].pool_init(&p, lc->f, g.oh, g.ow, 2, 2))
        return -1;
    size_t out = lc->pool ? (size_t)p.oh * p.ow : (size_t)g.oh * g.ow;
    size_t nx = (size_t)SAMPLES * lc->c * lc->h * lc->h, ny = (size_t)SAMPLES * lc->f * out;
    size_t nw = (size_t)lc->f * lc->c * 9;
    float *x = random_floats(nx), *w = random_floats(nw), *b = random_floats(lc->f);
    float *y = random_floats(ny), *dy = random_floats(ny), *dx = random_floats(nx);
    float *dw = random_floats(nw + lc->f);
    int32_t *argmax = malloc(sizeof(int32_t) * ny);
    int rc = x && w && b && y && dy && dx && dw && argmax ? 0 : -1;
    conv_input in = {x, NULL, 0, lc->dx};   /* with dx, the input is a relu's output */
    for (int i = 0; i < 2; i++)
        best[i][0] = best[i][1] = 1e30;
    for (int call = 0; call < calls && !rc; call++)
        for (int i = 0; i < 2 && !rc; i++)
            for (int pass = 0; pass < 2 && !rc; pass++) {
                memset(sweep, call + pass, SWEEP_BYTES);
                double t0 = seconds();
                rc = run_pass(lc, &k[i], pass, &g, &p, in, w, b, y, argmax, dy, dw, dx);
                double t = seconds() - t0;
                best[i][pass] = t < best[i][pass] ? t : best[i][pass];
            }
    free(x), free(w), free(b), free(y), free(dy), free(dx), free(dw), free(argmax);
    return rc;
}

/* The same for a first layer on bytes: each call's samples drawn anew from the data set. */
static int time_bytes_case(const bytes_case *bc, const kernels k[2], int calls,
                           const uint8_t *data, double best[2][2])
{
    conv_geom g;
    pool_geom p;
    if (k[0].geom_init(&g, bc->c, bc->h, bc->w, 4, 3, 3, 1, 0) ||
        k[0].pool_init(&p, 4, g.oh, g.ow, 2, 2))
        return -1;
    size_t per = (size_t)bc->c * bc->h * bc->w, ny = (size_t)SAMPLES * 4 * p.oh * p.ow;
    size_t nw = (size_t)4 * bc->c * 9;
    float *w = random_floats(nw), *b = random_floats(4), *y = random_floats(ny);
    float *dy = random_floats(ny), *dw = random_floats(nw + 4);
    int32_t *argmax = malloc(sizeof(int32_t) * ny);
    const uint8_t *samples[SAMPLES];
    conv_input in = {NULL, samples, 1.0f / 255.0f, 0};
    int rc = w && b && y && dy && dw && argmax ? 0 : -1;
    for (int i = 0; i < 2; i++)
        best[i][0] = best[i][1] = 1e30;
    for (int call = 0; call < calls && !rc; call++)
        for (int i = 0; i < 2 && !rc; i++) {
            for (int s = 0; s < SAMPLES; s++)
                samples[s] = data + (size_t)rand() % (DATA_SET_BYTES / per) * per;
            for (int pass = 0; pass < 2 && !rc; pass++) {
                double t0 = seconds();
                rc = pass == 0 ? k[i].forward(&g, in, w, b, &p, 1, y, argmax, 0, SAMPLES)
                               : k[i].backward(&g, in, &p, y, dy, argmax, w, dw, dw + nw, NULL,
                                               0, SAMPLES, 0);
                double t = seconds() - t0;
                best[i][pass] = t < best[i][pass] ? t : best[i][pass];
            }
        }
    free(w), free(b), free(y), free(dy), free(dw), free(argmax);
    return rc;
}

static void report(const char *name, double best[2][2])
{
    for (int pass = 0; pass < 2; pass++)
        printf("bench ab %s %s base_us=%.0f new_us=%.0f speedup=%.3f\n", name,
               pass ? "backward" : "forward", 1e6 * best[0][pass], 1e6 * best[1][pass],
               best[0][pass] / best[1][pass]);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    kernels k[2];
    int calls = argc == 4 ? atoi(argv[1]) : 0;
    char *sweep = malloc(SWEEP_BYTES);
    uint8_t *data = malloc(DATA_SET_BYTES);
    if (calls < 1 || !sweep || !data) {
        fprintf(stderr, "usage: ab_harness CALLS BASE.so NEW.so\n");
        return 2;
    }
    void *base = NULL, *new = NULL;
    if (load(&k[0], argv[2], "AB_BASE_ISA", &base, NULL) ||
        load(&k[1], argv[3], "AB_NEW_ISA", &new, base))
        return 1;
    for (size_t i = 0; i < DATA_SET_BYTES; i++)
        data[i] = (uint8_t)rand();
    double best[2][2];
    const char *name = NULL, *only = getenv("AB_ONLY");
    int timed = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        name = cases[c].name;
        if (only && !strstr(name, only))
            continue;
        if (time_case(&cases[c], k, calls, sweep, best))
            goto failed;
        report(name, best);
        timed++;
    }
    for (size_t c = 0; c < sizeof first_layers / sizeof first_layers[0]; c++) {
        name = first_layers[c].name;
        if (only && !strstr(name, only))
            continue;
        if (time_bytes_case(&first_layers[c], k, calls, data, best))
            goto failed;
        report(name, best);
        timed++;
    }
    if (!timed) {
        fprintf(stderr, "ab_harness: no case's name contains AB_ONLY=%s\n", only);
        return 1;
    }
    free(sweep), free(data);
    return 0;
failed:
    fprintf(stderr, "ab_harness: %s failed (out of memory, or a kernel refused it)\n", name);
    return 1;
}
