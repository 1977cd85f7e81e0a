/* Dataset readers on files the test writes: IDX raw and gzip, CIFAR-10, and broken variants. */
#include "engine/job/dataset.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static char *tmp(const char *name)
{
    static char paths[8][512];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 512, "%s/%s", test_tmpdir(), name);
    return p;
}

/* An IDX file: magic, dims, then data; gz selects gzip. `cut` drops that many trailing bytes. */
static void write_idx(const char *path, int dims, const uint32_t *shape, const uint8_t *data,
                      size_t n, int gz, size_t cut, uint8_t type)
{
    uint8_t head[16] = {0, 0, type, (uint8_t)dims};
    for (int i = 0; i < dims; i++) {
        head[4 + 4 * i] = (uint8_t)(shape[i] >> 24);
        head[5 + 4 * i] = (uint8_t)(shape[i] >> 16);
        head[6 + 4 * i] = (uint8_t)(shape[i] >> 8);
        head[7 + 4 * i] = (uint8_t)shape[i];
    }
    if (gz) {
        gzFile f = gzopen(path, "wb");
        gzwrite(f, head, 4 + 4 * (unsigned)dims);
        gzwrite(f, data, (unsigned)(n - cut));
        gzclose(f);
    } else {
        FILE *f = fopen(path, "wb");
        fwrite(head, 1, 4 + 4 * (size_t)dims, f);
        fwrite(data, 1, n - cut, f);
        fclose(f);
    }
}

enum { N = 7, H = 5, W = 4 };

static void make_set(const char *img, const char *lbl, int gz, uint8_t bad_label)
{
    uint8_t pixels[N * H * W], labels[N];
    for (int i = 0; i < N * H * W; i++)
        pixels[i] = (uint8_t)(i * 7);
    for (int i = 0; i < N; i++)
        labels[i] = (uint8_t)(i % 10);
    if (bad_label)
        labels[3] = bad_label;
    write_idx(img, 3, (uint32_t[]){N, H, W}, pixels, sizeof pixels, gz, 0, 0x08);
    write_idx(lbl, 1, (uint32_t[]){N}, labels, sizeof labels, gz, 0, 0x08);
}

TEST(dataset_idx_raw_and_gzip)
{
    for (int gz = 0; gz < 2; gz++) {
        char *img = tmp("img"), *lbl = tmp("lbl"), err[512] = "";
        make_set(img, lbl, gz, 0);
        dataset d;
        CHECKF(dataset_load_idx(&d, img, lbl, 0, err, sizeof err) == 0, "%s", err);
        CHECK(d.n == N && d.c == 1 && d.h == H && d.w == W && d.classes == 10);
        CHECK(d.pixels[H * W + 3] == (uint8_t)((H * W + 3) * 7) && d.labels[6] == 6);
        dataset_free(&d);
        CHECK(dataset_load_idx(&d, img, lbl, 3, err, sizeof err) == 0 && d.n == 3);
        dataset_free(&d);
    }
}

TEST(dataset_idx_errors_name_the_file)
{
    char *img = tmp("img"), *lbl = tmp("lbl"), err[512];
    dataset d;
    make_set(img, lbl, 1, 12);
    CHECK(dataset_load_idx(&d, img, lbl, 0, err, sizeof err) == -1);
    CHECKF(strstr(err, lbl) && strstr(err, "label 12 at index 3"), "%s", err);

    uint8_t px[N * H * W] = {0}, lb[N] = {0};
    write_idx(img, 3, (uint32_t[]){N, H, W}, px, sizeof px, 1, 10, 0x08);   /* truncated */
    write_idx(lbl, 1, (uint32_t[]){N}, lb, sizeof lb, 1, 0, 0x08);
    CHECK(dataset_load_idx(&d, img, lbl, 0, err, sizeof err) == -1);
    CHECKF(strstr(err, img) && strstr(err, "truncated") && strstr(err, "expected 140 bytes"),
           "%s", err);

    write_idx(img, 3, (uint32_t[]){N, H, W}, px, sizeof px, 0, 0, 0x0D);   /* floats, not bytes */
    CHECK(dataset_load_idx(&d, img, lbl, 0, err, sizeof err) == -1);
    CHECKF(strstr(err, "not an IDX file of unsigned bytes"), "%s", err);
    FILE *png = fopen(img, "wb");   /* a common format: named, and what is read said */
    fwrite("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 1, 16, png);
    fclose(png);
    CHECK(dataset_load_idx(&d, img, lbl, 0, err, sizeof err) == -1);
    CHECKF(strstr(err, "a PNG image; frugal reads IDX, raw or gzip, CIFAR-10 batches, and PGM or "
                       "PPM images"), "%s", err);

    write_idx(img, 3, (uint32_t[]){N, H, W}, px, sizeof px, 0, 0, 0x08);
    write_idx(lbl, 1, (uint32_t[]){N - 1}, lb, N - 1, 0, 0, 0x08);        /* count mismatch */
    CHECK(dataset_load_idx(&d, img, lbl, 0, err, sizeof err) == -1);
    CHECKF(strstr(err, "has 7 images") && strstr(err, "has 6 labels"), "%s", err);

    CHECK(dataset_load_idx(&d, "/nonexistent/images", lbl, 0, err, sizeof err) == -1);
    CHECKF(strstr(err, "/nonexistent/images: cannot open"), "%s", err);

    FILE *f = fopen(img, "wb");   /* shorter than a header */
    fputs("ab", f);
    fclose(f);
    CHECK(dataset_load_idx(&d, img, lbl, 0, err, sizeof err) == -1);
    CHECKF(strstr(err, "truncated IDX header"), "%s", err);
}

static void write_cifar(const char *path, int records, uint8_t first_label, long cut)
{
    FILE *f = fopen(path, "wb");
    for (int r = 0; r < records; r++) {
        uint8_t rec[3073];
        rec[0] = r == 0 ? first_label : (uint8_t)(r % 10);
        for (int i = 1; i < 3073; i++)
            rec[i] = (uint8_t)(r + i);
        fwrite(rec, 1, r == records - 1 ? (size_t)(3073 - cut) : 3073, f);
    }
    fclose(f);
}

TEST(dataset_cifar10_batches_and_errors)
{
    char *a = tmp("data_batch_1.bin"), *b = tmp("data_batch_2.bin"), list[1100], err[512];
    write_cifar(a, 3, 4, 0);
    write_cifar(b, 2, 9, 0);
    snprintf(list, sizeof list, "%s,%s", a, b);
    dataset d;
    CHECKF(dataset_load_cifar10(&d, list, 0, err, sizeof err) == 0, "%s", err);
    CHECK(d.n == 5 && d.c == 3 && d.h == 32 && d.labels[0] == 4 && d.labels[3] == 9);
    CHECK(d.pixels[3072 * 3] == 1);   /* first pixel of the second file's first record */
    dataset_free(&d);
    CHECK(dataset_load_cifar10(&d, list, 4, err, sizeof err) == 0 && d.n == 4);
    dataset_free(&d);
    write_cifar(b, 2, 9, 100);
    CHECK(dataset_load_cifar10(&d, list, 0, err, sizeof err) == -1);
    CHECKF(strstr(err, b) && strstr(err, "not a whole number"), "%s", err);
    write_cifar(b, 2, 11, 0);
    CHECK(dataset_load_cifar10(&d, list, 0, err, sizeof err) == -1);
    CHECKF(strstr(err, "label 11"), "%s", err);
}

TEST(dataset_resize_and_replicate)
{
    char *img = tmp("img"), *lbl = tmp("lbl"), err[512];
    make_set(img, lbl, 0, 0);
    dataset d;
    CHECK(dataset_load_idx(&d, img, lbl, 0, err, sizeof err) == 0);
    uint8_t corner = d.pixels[0];
    CHECKF(dataset_reshape(&d, 10, 8, 3, err, sizeof err) == 0, "%s", err);
    CHECK(d.c == 3 && d.h == 10 && d.w == 8);
    CHECK(d.pixels[0] == corner);                              /* corners keep their value */
    CHECK(!memcmp(d.pixels, d.pixels + 80, 80));              /* channels are copies */
    CHECK(dataset_reshape(&d, 0, 0, 2, err, sizeof err) == -1);   /* 3 -> 2 channels: no */
    dataset_free(&d);
}

/* n random images of c x h x w bytes. */
static dataset random_set(long n, int c, int h, int w, unsigned seed)
{
    dataset d = {n, c, h, w, 10, malloc((size_t)n * c * h * w), calloc((size_t)n, 1)};
    for (size_t i = 0; i < (size_t)n * c * h * w; i++)
        d.pixels[i] = (uint8_t)((seed = seed * 1103515245u + 12345u) >> 16);
    return d;
}

/* Enough images for the resize to split them among threads (one per core): each image's bytes
 * are those it gets resized alone, whichever thread took it. */
TEST(dataset_resize_on_threads_gives_each_image_its_bytes_alone)
{
    char err[256];
    for (int c = 1; c <= 3; c += 2) {
        dataset all = random_set(1000, c, 9, 7, 7u + (unsigned)c);
        dataset one = random_set(1, c, 9, 7, 0);
        uint8_t *before = malloc((size_t)all.n * c * 9 * 7);
        memcpy(before, all.pixels, (size_t)all.n * c * 9 * 7);
        CHECKF(dataset_reshape(&all, 13, 5, 3, err, sizeof err) == 0, "%s", err);
        for (long i = 0; i < all.n; i += 37) {
            memcpy(one.pixels, before + (size_t)i * c * 9 * 7, (size_t)c * 9 * 7);
            one.c = c, one.h = 9, one.w = 7;
            CHECKF(dataset_reshape(&one, 13, 5, 3, err, sizeof err) == 0, "%s", err);
            CHECKF(!memcmp(one.pixels, all.pixels + (size_t)i * 3 * 13 * 5, 3 * 13 * 5),
                   "image %ld of %d channel(s)", i, c);
        }
        free(before);
        dataset_free(&all);
        dataset_free(&one);
    }
}

TEST(dataset_pnm_images_resized_and_converted)
{
    char *grey = tmp("a.pgm"), *colour = tmp("b.ppm"), *bad = tmp("c.pgm"), err[512];
    FILE *f = fopen(grey, "wb");
    fprintf(f, "P5\n# a comment\n4 2\n255\n");
    for (int i = 0; i < 8; i++)
        fputc(i * 30, f);
    fclose(f);
    f = fopen(colour, "wb");
    fprintf(f, "P6 2 2 255\n");
    for (int i = 0; i < 4; i++)
        fputc(255, f), fputc(0, f), fputc(0, f);   /* pure red */
    fclose(f);
    const char *paths[] = {grey, colour};
    dataset d;
    CHECKF(dataset_load_pnm(&d, paths, 2, 1, 2, 4, 10, err, sizeof err) == 0, "%s", err);
    CHECK(d.n == 2 && d.c == 1 && d.h == 2 && d.w == 4);
    CHECK(d.pixels[0] == 0 && d.pixels[7] == 210);   /* same size: unchanged */
    CHECK(d.pixels[8] == 76);                          /* red -> grey: 0.299 * 255 */
    dataset_free(&d);
    f = fopen(bad, "wb");
    fprintf(f, "P5 4 2 255\n");
    fputc(1, f);   /* 7 bytes short */
    fclose(f);
    paths[1] = bad;
    CHECK(dataset_load_pnm(&d, paths, 2, 1, 2, 4, 10, err, sizeof err) == -1);
    CHECKF(strstr(err, bad) && strstr(err, "truncated"), "%s", err);
    f = fopen(bad, "wb");
    fprintf(f, "P7 4 2 255\n");   /* PAM: not supported, said so */
    fclose(f);
    CHECK(dataset_load_pnm(&d, paths, 2, 1, 2, 4, 10, err, sizeof err) == -1);
    CHECKF(strstr(err, "not a PGM or PPM image"), "%s", err);
}

/* ASCII PGM/PPM (P2, P3) and 16-bit binary samples read like their 8-bit binary twins. */
TEST(dataset_pnm_ascii_and_16_bit)
{
    char *ascii = tmp("a.pgm"), *wide = tmp("b.pgm"), *colour = tmp("c.ppm"), err[512];
    FILE *f = fopen(ascii, "w");
    fprintf(f, "P2\n# grey ramp\n4 2\n15\n0 2 4 6\n8 10 12 15\n");
    fclose(f);
    f = fopen(wide, "wb");
    fprintf(f, "P5 4 2 65535\n");
    for (int i = 0; i < 8; i++)
        fputc(i * 2 * 4369 >> 8, f), fputc(i * 2 * 4369 & 255, f);   /* the same ramp, 16-bit */
    fclose(f);
    f = fopen(colour, "w");
    fprintf(f, "P3 2 1 255\n255 0 0   0 0 255\n");
    fclose(f);
    const char *paths[] = {ascii, wide};
    dataset d;
    CHECKF(dataset_load_pnm(&d, paths, 2, 1, 2, 4, 10, err, sizeof err) == 0, "%s", err);
    CHECK(d.pixels[1] == 34 && d.pixels[7] == 255);   /* 2 * 255 / 15, 15 -> 255 */
    CHECK(d.pixels[8 + 1] == 34 && d.pixels[8 + 6] == 204);
    dataset_free(&d);
    const char *one[] = {colour};
    CHECKF(dataset_load_pnm(&d, one, 1, 3, 1, 2, 10, err, sizeof err) == 0, "%s", err);
    CHECK(d.pixels[0] == 255 && d.pixels[1] == 0 && d.pixels[4] == 0 && d.pixels[5] == 255);
    dataset_free(&d);
    f = fopen(ascii, "w");
    fprintf(f, "P2 4 2 15\n0 2 4 16 8 10 12 15\n");   /* above maxval */
    fclose(f);
    CHECK(dataset_load_pnm(&d, paths, 1, 1, 2, 4, 10, err, sizeof err) == -1);
    CHECKF(strstr(err, ascii) && strstr(err, "sample 4 of 8") && strstr(err, "maxval 15"), "%s", err);
    f = fopen(ascii, "w");
    fprintf(f, "P2 4 2 15\n0 2 4\n");   /* short */
    fclose(f);
    CHECK(dataset_load_pnm(&d, paths, 1, 1, 2, 4, 10, err, sizeof err) == -1);
    CHECKF(strstr(err, "sample 4 of 8 is missing"), "%s", err);
}

/* What a user might hand frugal by mistake, or an attacker on purpose: each refused with the
 * file's name and the reason. */
TEST(dataset_bad_files_are_named_and_explained)
{
    char *img = tmp("img"), *lbl = tmp("lbl"), err[512];
    dataset d;
    uint8_t px[N * H * W] = {0};
    write_idx(img, 3, (uint32_t[]){0, H, W}, px, 0, 1, 0, 0x08);   /* no images */
    CHECK(dataset_load_idx(&d, img, NULL, 0, err, sizeof err) == -1);
    CHECKF(strstr(err, img) && strstr(err, "has no images"), "%s", err);

    CHECK(dataset_load_idx(&d, test_tmpdir(), NULL, 0, err, sizeof err) == -1);   /* a folder */
    CHECKF(strstr(err, test_tmpdir()) && strstr(err, "is a directory"), "%s", err);
    CHECK(dataset_load_cifar10(&d, test_tmpdir(), 0, err, sizeof err) == -1);
    CHECKF(strstr(err, "is a directory, not a CIFAR-10 batch"), "%s", err);

    /* a gzip file whose checksum is wrong: zlib says so, not "truncated" */
    make_set(img, lbl, 1, 0);
    FILE *f = fopen(img, "r+b");
    fseek(f, -8, SEEK_END);   /* the gzip trailer: CRC32 then size */
    int c = fgetc(f);
    fseek(f, -8, SEEK_END);
    fputc(c ^ 0xff, f);
    fclose(f);
    CHECK(dataset_load_idx(&d, img, lbl, 0, err, sizeof err) == -1);
    CHECKF(strstr(err, img) && strstr(err, "corrupt gzip data"), "%s", err);
    f = fopen(img, "wb");   /* a gzip header and then garbage */
    fwrite("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage-not-deflate", 1, 29, f);
    fclose(f);
    CHECK(dataset_load_idx(&d, img, lbl, 0, err, sizeof err) == -1);
    CHECKF(strstr(err, "corrupt gzip data"), "%s", err);
}

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* A 3 KB file whose header claims 2^24 images of 28x28 (13 GB) is refused as truncated after
 * reading what it holds, raw or gzip, without allocating what it claims. */
TEST(dataset_header_claims_are_checked_against_the_file)
{
    char *img = tmp("img"), err[512];
    uint8_t px[3000] = {1};
    for (int gz = 0; gz < 2; gz++) {
        write_idx(img, 3, (uint32_t[]){1u << 24, 28, 28}, px, sizeof px, gz, 0, 0x08);
        pid_t pid = fork();
        if (pid == 0) {   /* measured in a fresh process: its peak memory is this load's */
            dataset d;
            int rc = dataset_load_idx(&d, img, NULL, 0, err, sizeof err);
            struct rusage ru;
            getrusage(RUSAGE_SELF, &ru);
            int ok = rc == -1 && strstr(err, "truncated") && ru.ru_maxrss < 200 * 1024;
            if (!ok)
                fprintf(stderr, "    gzip %d: rc %d, peak %ld KB, '%s'\n", gz, rc, ru.ru_maxrss, err);
            _exit(ok ? 0 : 1);
        }
        int status;
        waitpid(pid, &status, 0);
        CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "gzip %d", gz);
    }
    /* and resizing what cannot fit is refused up front with the figures */
    dataset d = {.n = 1000, .c = 1, .h = 28, .w = 28, .classes = 10};
    d.pixels = calloc(1000, 28 * 28);
    d.labels = calloc(1000, 1);
    CHECK(dataset_reshape(&d, 16384, 16384, 3, err, sizeof err) == -1);
    CHECKF(strstr(err, "resizing 1000 images to 16384x16384x3 needs 805.31 GB"), "%s", err);
    dataset_free(&d);
}
