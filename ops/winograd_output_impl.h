/* The output transform, the same for every tile size: included by winograd_f2_impl.h and
 * winograd_f4_impl.h after they define TILE_M, the outputs per tile side, and
 * TILE_OUTPUTS(m, plane, q, o), tile q's TILE_M x TILE_M outputs A^T m A into o from its
 * points m[q], plane apart. A tile's arithmetic runs over all of a block's tiles at once. */

/* The outputs plus the bias, pooled by the 2x2 windows inside each tile (winograd_pooled),
 * through the relu if asked: only the pooled values and their argmax are stored. */
static void pooled_output(const tiling *t, const float *M, const float *bias,
                          const winograd_out *o, int f0, int f1, float *rows)
{
    enum { HALF = TILE_M / 2 };   /* windows per tile side */
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)(f1 - f0) * t->cols);
    winograd_pooled w = winograd_pooled_init(t, rows);
    int ow = g->ow;
    for (int f = f0; f < f1; f++) {
        const float *m = M + (size_t)(f - f0) * t->cols;
        float b = bias ? bias[f] : 0.0f;
        int32_t plane0 = (int32_t)((size_t)f * g->oh * g->ow);
#pragma omp simd
        for (int q = 0; q < t->tiles; q++) {
            float v[TILE_M][TILE_M];
            TILE_OUTPUTS(m, plane, q, v);
#pragma GCC unroll 4
            for (int a = 0; a < TILE_M; a++)
#pragma GCC unroll 4
                for (int k = 0; k < TILE_M; k++)
                    v[a][k] += b;
            int32_t c = plane0 + w.corner[q];
#pragma GCC unroll 2
            for (int i = 0; i < HALF; i++)
#pragma GCC unroll 2
                for (int j = 0; j < HALF; j++)
                    maxpool2_window(v[2 * i][2 * j], v[2 * i][2 * j + 1], v[2 * i + 1][2 * j],
                                    v[2 * i + 1][2 * j + 1], c + 2 * i * ow + 2 * j, ow, o->relu,
                                    w.v[HALF * i + j] + q, w.a[HALF * i + j] + q);
        }
        winograd_store_pooled(t, o, &w, f);
    }
}

/* The outputs A^T m A + bias for filters [f0, f1) from M[p][f - f0][col] into o (pooled:
 * pooled_output). A filter's outputs of all the block's tiles go to out[a][k][col] (row a,
 * column TILE_M q + k of tile col), then each tile row's are interleaved into TILE_M rows
 * (whole tiles: a row buffer holds them), then stored. */
static void output_transform(const tiling *t, const float *M, const float *bias,
                             const winograd_out *o, int f0, int f1, float *rows)
{
    if (o->pool) {
        pooled_output(t, M, bias, o, f0, f1, rows);
        return;
    }
    size_t plane = plane_of((size_t)(f1 - f0) * t->cols);
    float *out[TILE_M][TILE_M], *line[TILE_M];
    for (int a = 0; a < TILE_M; a++) {
        for (int k = 0; k < TILE_M; k++)
            out[a][k] = tile_array(t, rows, TILE_M * a + k);
        line[a] = rows + (size_t)a * t->row_len;
    }
    for (int f = f0; f < f1; f++) {
        const float *m = M + (size_t)(f - f0) * t->cols;
#pragma omp simd
        for (int q = 0; q < t->tiles; q++) {
            float v[TILE_M][TILE_M];
            TILE_OUTPUTS(m, plane, q, v);
#pragma GCC unroll 4
            for (int a = 0; a < TILE_M; a++)
#pragma GCC unroll 4
                for (int k = 0; k < TILE_M; k++)
                    out[a][k][q] = v[a][k];
        }
        for (int r = t->r0; r < t->r1; r++) {
            size_t at = (size_t)(r - t->r0) * t->tw;
            for (int a = 0; a < TILE_M; a++) {
                float *row = line[a];
#pragma omp simd
                for (int q = 0; q < t->tw; q++)
#pragma GCC unroll 4
                    for (int k = 0; k < TILE_M; k++)
                        row[TILE_M * q + k] = out[a][k][at + q];
            }
            winograd_store_rows(t, o, r / t->th, f, TILE_M * (r % t->th), line, TILE_M,
                                bias ? bias[f] : 0.0f);
        }
    }
}
