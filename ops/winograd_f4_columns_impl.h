/* F(4x4)'s four transforms without tile arrays, for the builds that take 8 tiles' columns
 * straight out of rows and put them back (winograd_f4_avx2.c by in-lane transposes,
 * winograd_f4_avx512.c by two-register permutes), where winograd_f4_impl.h's go through tile
 * arrays. The input transform: the row half as winograd_f4_impl.h's, then 8 tiles at a time
 * the 6 columns of their windows, B, and the 36 points stored straight into V. The adjoint: 8
 * tiles' windows computed in registers, then each window row's columns put into the rows they
 * cover. The gradient's: 8 tiles' 4x4 blocks taken out of the gradient rows (unpooled through
 * the argmax, through the relu), A, and the 36 points into D. The output transform: 8 tiles'
 * 4x4 outputs in registers, put into their rows (pooled or not). Same arithmetic as
 * winograd_f4_impl.h's transforms, same bits. Rows of 1 tile go to those.
 *
 * Included after winograd_f4_impl.h by a file that has defined:
 *   v8sf, 8 floats; INLINE;
 *   window_index and window_index_make(): what window_columns needs, built once per call;
 *   window_columns(ix, s, rows, x, c): c[m] = column m of 8 tiles' windows of one window row:
 *     8 tiles of one tile row from column x of s[0] (rows 1), or whole tile rows of 4 or 2
 *     tiles, s[j] of tile row j (rows 2 or 4; x 0); it may read 32 floats past a row;
 *   store_tiles8(p, v, n): the first n values of v to p;
 * and for the input adjoint the other way round (input_adjoint_permuted):
 *   line_index and line_index_make(per_row, stride): built once per call, for groups of
 *     tile rows of per_row tiles (8: part of a longer row), their lines stride apart;
 *   window_lines_store(li, o, n, rows, line, at, join): see window_lines;
 * and for the output gradient's transform (gradient_transform_permuted):
 *   gradient_tiles(ix, gg, a, pooled, per_row, e): e[k] lane l = column k of row a of tile l
 *     of the group gg (winograd_tiling.h), as load_gradient_row gives it;
 * and for the output transform (output_transform_permuted):
 *   load_tiles8(p, n): the first n of 8 values, zeros after;
 *   store_output_row(ix, og, o, a, per_row): row a of the group's outputs o[a][k] (lane l:
 *     tile l) + og->b, through the relu if asked, into output row a of each tile row;
 *   store_pooled_rows(ix, og, o, per_row): the outputs + og->b pooled by the 2x2 windows
 *     inside each tile as pooled_output, the pooled rows and argmaxes stored. */

/* 8 tiles into V at v (n <= 8 of them stored), from window row i's transformed rows s (as
 * window_columns reads them): B on their 6 window columns, the 6 points stored. */
INLINE void column_half(const window_index *ix, const float *const s[4], int rows, int x,
                        float *v, size_t plane, int n)
{
    v8sf c[6], o[6];
    window_columns(ix, s, rows, x, c);
    BT6(c, o);
#pragma GCC unroll 6
    for (int k = 0; k < 6; k++)
        store_tiles8(v + k * plane, o[k], n);
}

/* V[p][c][col] = (B^T d B)[p] for every channel and tile of the block: per group of tile rows
 * (one, or 2 of 4 tiles, or 4 of 2) the row half (row_transform) into row buffers, then the
 * column half 8 tiles at a time. Rows of 1 tile as winograd_f4_impl.h does. rows: 13 row
 * buffers, then the other groups' in the tile arrays' place. */
static void input_transform_permuted(const tiling *t, conv_input x, float *V, float *rows)
{
    int tw = t->tw, group = tw == 4 ? 2 : tw == 2 ? 4 : 1;
    if (tw == 1) {
        input_transform(t, x, V, rows);
        return;
    }
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)g->c * t->cols);   /* from one point to the next */
    const window_index ix = window_index_make();
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
                    column_half(&ix, si, 2, 0, vi, plane, left);
                else if (group == 4)
                    column_half(&ix, si, 4, 0, vi, plane, left);
                else
                    for (int q = 0; q < tw; q += 8)
                        column_half(&ix, si, 1, 4 * q, vi + q, plane, tw - q < 8 ? tw - q : 8);
            }
        }
}

/* The windows of n <= 8 tiles from z (their 36 points plane apart) into the lines of window
 * rows 0 to 5, from line[i] + at: B z B^T in registers, in input_adjoint's order, then each
 * window row's 6 columns put into its lines with the overlaps summed (window_lines_store:
 * tiles as window_columns reads them, rows 1, 2 or 4). With join, the group before (in the
 * same tile row) stored its last tile's columns 4 and 5 at line[i] + at, which this group's
 * first tile's 0 and 1 overlap. (Kept in registers between calls instead, they went through
 * the stack, and rows of 8 tiles took 50% longer than the tile arrays' way.) */
INLINE void window_lines(const line_index *li, const float *z, size_t plane, int n, int rows,
                         float *const line[6], int at, int join)
{
    v8sf h[6][6];
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++) {   /* z B^T: each row's columns */
        v8sf in[6];
#pragma GCC unroll 6
        for (int k = 0; k < 6; k++)
            memcpy(&in[k], z + (size_t)(6 * i + k) * plane, sizeof in[k]);
        B6(in, h[i]);
    }
    v8sf o[6][6];   /* [window row][column] */
#pragma GCC unroll 6
    for (int k = 0; k < 6; k++) {   /* B (z B^T): the rows combined */
        v8sf in[6] = {h[0][k], h[1][k], h[2][k], h[3][k], h[4][k], h[5][k]}, out[6];
        B6(in, out);
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++)
            o[i][k] = out[i];
    }
    window_lines_store(li, o, n, rows, line, at, join);
}

/* dx from the windows of Z[p][c][col], as input_adjoint: per group of tile rows (one, or 2 of
 * 4 tiles, or 4 of 2) the lines of their window rows, 8 tiles at a time (window_lines), then
 * each tile row's stored in order. Rows of 1 tile, or too little scratch for the lines, as
 * winograd_f4_impl.h does. rows: the lines, in the row buffers' and tile arrays' place. */
static void input_adjoint_permuted(const tiling *t, const float *Z, float *dx, float *rows)
{
    int tw = t->tw, group = tw == 4 ? 2 : tw == 2 ? 4 : 1;
    size_t stride = (size_t)group * t->row_len + 48;   /* a window row's lines; 48: the stores
                                                          * past the last tile */
    size_t room = ROW_BUFFERS * (size_t)t->row_len + TILE_ARRAYS * (size_t)t->array_len;
    if (tw == 1 || 6 * stride > room) {
        input_adjoint(t, Z, dx, rows);
        return;
    }
    const conv_geom *g = t->g;
    size_t plane = plane_of((size_t)g->c * t->cols);
    const line_index li = line_index_make(group > 1 ? tw : 8, t->row_len);
    float *const line[6] = {rows, rows + stride, rows + 2 * stride, rows + 3 * stride,
                            rows + 4 * stride, rows + 5 * stride};
    for (int c = 0; c < g->c; c++)
        for (int r = t->r0; r < t->r1; r += group) {
            const float *z = Z + (size_t)c * t->cols + (size_t)(r - t->r0) * tw;
            int nrows = t->r1 - r < group ? t->r1 - r : group;
            if (group == 2)   /* constants, so that each gets code of its own */
                window_lines(&li, z, plane, nrows * tw, 2, line, 0, 0);
            else if (group == 4)
                window_lines(&li, z, plane, nrows * tw, 4, line, 0, 0);
            else
                for (int q = 0; q < tw; q += 8)
                    window_lines(&li, z + q, plane, tw - q < 8 ? tw - q : 8, 1, line, 4 * q,
                                 q > 0);
            for (int j = 0; j < nrows; j++)
                for (int i = 0, y; i < 6; i++)
                    if (winograd_window_row(t, r + j, i, &y))
                        winograd_store_input_row(t, dx, c, r + j, i, y,
                                                 line[i] + (size_t)j * t->row_len);
        }
}

/* A group's n tiles into D at d + at and their sums into sums + at (gradient_transform's
 * arithmetic, the same order). */
INLINE void gradient_group_transform(const window_index *ix, const gradient_group *gg,
                                     int pooled, int per_row, float *d, size_t plane,
                                     float *sums, int at, int n)
{
    v8sf e[4][4], A[6][4];
#pragma GCC unroll 4
    for (int a = 0; a < 4; a++)
        gradient_tiles(ix, gg, a, pooled, per_row, e[a]);
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {   /* A e: rows */
        v8sf in[4] = {e[0][k], e[1][k], e[2][k], e[3][k]}, o[6];
        A6(in, o);
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++)
            A[i][k] = o[i];
    }
    store_tiles8(sums + at, (A[1][0] + A[1][1]) + (A[1][2] + A[1][3]), n);
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++) {   /* (A e) A^T: columns */
        v8sf o[6];
        A6(A[i], o);
#pragma GCC unroll 6
        for (int k = 0; k < 6; k++)
            store_tiles8(d + (6 * i + k) * plane + at, o[k], n);
    }
}

/* Filter f's tiles of the block, groups of one tile row (per_row 8) or of 8 / per_row. */
INLINE void gradient_filter(const window_index *ix, const tiling *t, const winograd_grad *dy,
                            int f, int pooled, int per_row, float *d, size_t plane, float *sums)
{
    int tw = t->tw, group = group_tile_rows(per_row);
    for (int r = t->r0; r < t->r1; r += group)
        for (int q = 0; q < (group > 1 ? 1 : tw); q += 8) {
            int nrows = t->r1 - r < group ? t->r1 - r : group;
            gradient_group gg = {t, dy, f, r, q, nrows};
            int n = group > 1 ? nrows * tw : tw - q < 8 ? tw - q : 8;
            gradient_group_transform(ix, &gg, pooled, per_row, d, plane, sums,
                                     (r - t->r0) * tw + q, n);
        }
}

/* D[p][f - f0][col] = (A e A^T)[p] as gradient_transform, 8 tiles at a time straight from the
 * gradient rows (gradient_tiles) instead of through 16 tile arrays; the same bits, the bias
 * sums kept per tile and summed in tile_sum's order. Rows of 1 tile as winograd_f4_impl.h does. */
static void gradient_transform_permuted(const tiling *t, const winograd_grad *dy, int f0, int f1,
                                        float *D, float *dbias, float *rows)
{
    int tw = t->tw, pooled = dy->pool != NULL;
    if (tw == 1) {
        gradient_transform(t, dy, f0, f1, D, dbias, rows);
        return;
    }
    size_t plane = plane_of((size_t)(f1 - f0) * t->cols);
    const window_index ix = window_index_make();
    float *sums = tile_array(t, rows, 16);
    for (int f = f0; f < f1; f++) {
        float *d = D + (size_t)(f - f0) * t->cols;
        if (tw == 4)   /* constants, so that each case gets code of its own */
            pooled ? gradient_filter(&ix, t, dy, f, 1, 4, d, plane, sums)
                   : gradient_filter(&ix, t, dy, f, 0, 4, d, plane, sums);
        else if (tw == 2)
            pooled ? gradient_filter(&ix, t, dy, f, 1, 2, d, plane, sums)
                   : gradient_filter(&ix, t, dy, f, 0, 2, d, plane, sums);
        else
            pooled ? gradient_filter(&ix, t, dy, f, 1, 8, d, plane, sums)
                   : gradient_filter(&ix, t, dy, f, 0, 8, d, plane, sums);
        if (dbias)
            dbias[f - f0] += tile_sum(sums, t->tiles);
    }
}

/* The group's 4x4 outputs o[a][k] (lane l: tile l), A^T m A as TILE_OUTPUTS computes it. */
INLINE void group_outputs(const float *m, size_t plane, int n, v8sf o[4][4])
{
    v8sf s[6][4];
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++) {   /* m A: rows' columns */
        v8sf in[6];
#pragma GCC unroll 6
        for (int k = 0; k < 6; k++)
            in[k] = load_tiles8(m + (size_t)(6 * i + k) * plane, n);
        AT6(in, s[i]);
    }
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {   /* A^T (m A): rows */
        v8sf in[6] = {s[0][k], s[1][k], s[2][k], s[3][k], s[4][k], s[5][k]}, c[4];
        AT6(in, c);
#pragma GCC unroll 4
        for (int a = 0; a < 4; a++)
            o[a][k] = c[a];
    }
}

/* Filter f's outputs of the block from m (its row of M), groups of one tile row (per_row 8)
 * or of 8 / per_row. */
INLINE void output_filter(const tiling *t, const winograd_out *o, int f, float b,
                          const float *m, size_t plane, int pooled, int per_row,
                          const window_index *ix)
{
    int tw = t->tw, group = group_tile_rows(per_row);
    for (int r = t->r0; r < t->r1; r += group)
        for (int q = 0; q < (group > 1 ? 1 : tw); q += 8) {
            int nrows = t->r1 - r < group ? t->r1 - r : group;
            int n = group > 1 ? nrows * tw : tw - q < 8 ? tw - q : 8;
            output_group og = {t, o, f, r, q, nrows, b};
            v8sf out[4][4];
            group_outputs(m + (size_t)(r - t->r0) * tw + q, plane, n, out);
            if (pooled)
                store_pooled_rows(ix, &og, out, per_row);
            else
#pragma GCC unroll 4
                for (int a = 0; a < 4; a++)
                    store_output_row(ix, &og, out, a, per_row);
        }
}

/* The outputs A^T m A + bias for filters [f0, f1) from M[p][f - f0][col] into o, as
 * output_transform (pooled or not, through the relu or not), 8 tiles at a time in registers,
 * put straight into the output rows (store_output_row, store_pooled_rows: the including
 * file's) instead of through tile arrays and row buffers: a
 * row read back as whole registers right after it was stored in pieces stalled on the
 * stores (12% of output_transform's time). Rows of 1 tile as winograd_f4_impl.h does. */
static void output_transform_permuted(const tiling *t, const float *M, const float *bias,
                                      const winograd_out *o, int f0, int f1, float *rows)
{
    int tw = t->tw, pooled = o->pool != NULL;
    if (tw == 1) {
        output_transform(t, M, bias, o, f0, f1, rows);
        return;
    }
    size_t plane = plane_of((size_t)(f1 - f0) * t->cols);
    const window_index ix = window_index_make();
    for (int f = f0; f < f1; f++) {
        const float *m = M + (size_t)(f - f0) * t->cols;
        float b = bias ? bias[f] : 0.0f;
        if (tw == 4)   /* constants, so that each case gets code of its own */
            pooled ? output_filter(t, o, f, b, m, plane, 1, 4, &ix)
                   : output_filter(t, o, f, b, m, plane, 0, 4, &ix);
        else if (tw == 2)
            pooled ? output_filter(t, o, f, b, m, plane, 1, 2, &ix)
                   : output_filter(t, o, f, b, m, plane, 0, 2, &ix);
        else
            pooled ? output_filter(t, o, f, b, m, plane, 1, 8, &ix)
                   : output_filter(t, o, f, b, m, plane, 0, 8, &ix);
    }
}
