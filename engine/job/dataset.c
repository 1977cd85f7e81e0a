#include "engine/job/dataset.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "common/input_file.h"
#include "engine/job/memory.h"

enum { IDX_UBYTE = 0x08, CIFAR_CLASSES = 10, CIFAR_SIDE = 32, FASHION_CLASSES = 10 };

static int err_out(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int err_out(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* Reads up to n bytes; gzread also reads uncompressed files as they are. */
static size_t read_some(gzFile f, void *buf, size_t n)
{
    size_t done = 0;
    while (done < n) {
        unsigned chunk = n - done > (1u << 30) ? 1u << 30 : (unsigned)(n - done);
        int r = gzread(f, (char *)buf + done, chunk);
        if (r <= 0)
            break;
        done += (size_t)r;
    }
    return done;
}

/* Why `what` came up short: zlib's complaint about a corrupt stream, or the file's end. */
/* ": a PNG image" and the like, when the first bytes are a common format's; else "". */
static const char *known_format(const uint8_t head[4])
{
    static const struct { uint8_t magic[4]; int len; const char *what; } formats[] = {
        {{0x89, 'P', 'N', 'G'}, 4, ": a PNG image"}, {{0xff, 0xd8, 0xff}, 3, ": a JPEG image"},
        {{'G', 'I', 'F', '8'}, 4, ": a GIF image"}, {{'B', 'M'}, 2, ": a BMP image"},
        {{'R', 'I', 'F', 'F'}, 4, ": a RIFF file (WebP?)"}, {{'P', 'K', 3, 4}, 4, ": a ZIP archive"},
        {{0x93, 'N', 'U', 'M'}, 4, ": a NumPy array"}, {{'P', '5'}, 2, ": a PGM image (use predict)"},
        {{'P', '6'}, 2, ": a PPM image (use predict)"},
    };
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (!memcmp(head, formats[i].magic, (size_t)formats[i].len))
            return formats[i].what;
    return "";
}

static int short_read(gzFile f, const char *path, const char *what, size_t want, size_t got,
                      char *err, size_t errlen)
{
    int code;
    const char *msg = gzerror(f, &code);
    if (code != Z_OK && code != Z_STREAM_END)
        return err_out(err, errlen, "%s: corrupt gzip data in %s (zlib: %s)", path, what, msg);
    return err_out(err, errlen, "%s: truncated %s: expected %zu bytes, the file has %zu", path,
                   what, want, got);
}

/* A file's data, `claim` bytes as its header says, read in growing steps: a small file that
 * claims gigabytes costs what it holds, not what it claims. */
static uint8_t *read_claimed(gzFile f, const char *path, const char *what, size_t claim,
                             char *err, size_t errlen)
{
    size_t cap = claim < (16u << 20) ? claim : 16u << 20, got = 0;
    uint8_t *buf = malloc(cap ? cap : 1);
    while (buf && got < claim) {
        if (got == cap) {
            cap = cap > claim / 2 ? claim : 2 * cap;
            uint8_t *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                err_out(err, errlen, "%s: out of memory reading %zu bytes of %s", path, claim, what);
                return NULL;
            }
            buf = grown;
        }
        size_t r = read_some(f, buf + got, cap - got);
        got += r;
        if (got < cap) {
            free(buf);
            short_read(f, path, what, claim, got, err, errlen);
            return NULL;
        }
    }
    if (!buf)
        err_out(err, errlen, "%s: out of memory reading %s", path, what);
    return buf;
}

static uint32_t be32(const uint8_t *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* An IDX file open past its header (unsigned bytes, `dims` dimensions), with the bytes it has
 * after the header when that is known (an uncompressed file), else -1. */
typedef struct idx_file {
    gzFile f;
    uint32_t shape[3];
    long long data_bytes;
} idx_file;

static int idx_open(idx_file *x, const char *path, int dims, char *err, size_t errlen)
{
    long long size;
    FILE *file = input_open(path, dims == 1 ? "IDX label file" : "IDX image file", &size, err,
                            errlen);
    if (!file)
        return -1;
    int fd = dup(fileno(file));
    fclose(file);
    x->f = fd >= 0 ? gzdopen(fd, "rb") : NULL;
    if (!x->f) {
        if (fd >= 0)
            close(fd);
        return err_out(err, errlen, "%s: cannot open: %s", path, strerror(errno ? errno : ENOMEM));
    }
    uint8_t head[4 + 4 * 3];
    size_t need = 4 + 4 * (size_t)dims, got = read_some(x->f, head, need);
    if (got < need) {
        short_read(x->f, path, "IDX header", need, got, err, errlen);
        gzclose(x->f);
        return -1;
    }
    if (head[0] || head[1] || head[2] != IDX_UBYTE || head[3] != dims) {
        err_out(err, errlen, "%s: not an IDX file of unsigned bytes with %d dimension%s "
                "(magic %02x %02x %02x %02x%s; frugal reads IDX, raw or gzip, CIFAR-10 batches, "
                "and PGM or PPM images)", path, dims, dims == 1 ? "" : "s", head[0],
                head[1], head[2], head[3], known_format(head));
        gzclose(x->f);
        return -1;
    }
    for (int i = 0; i < dims; i++)
        x->shape[i] = be32(head + 4 + 4 * i);
    x->data_bytes = gzdirect(x->f) ? size - (long long)need : -1;
    return 0;
}

/* The first `n` records of `per` bytes, checked against the file's size where it is known. */
static uint8_t *idx_read(idx_file *x, const char *path, const char *what, size_t n, size_t per,
                         char *err, size_t errlen)
{
    size_t claim = n * per;   /* n < 2^32 and per < 2^28: no overflow in 64 bits */
    if (x->data_bytes >= 0 && (unsigned long long)x->data_bytes < claim) {
        err_out(err, errlen, "%s: truncated %s: expected %zu bytes for %zu of them, the file has "
                "%lld", path, what, claim, n, x->data_bytes);
        return NULL;
    }
    return read_claimed(x->f, path, what, claim, err, errlen);
}

/* After the last record: a gzip stream's checksum is verified only at its end. */
static int idx_finish(idx_file *x, const char *path, char *err, size_t errlen)
{
    int code;
    if (gzgetc(x->f) == -1) {
        const char *msg = gzerror(x->f, &code);
        if (code != Z_OK && code != Z_STREAM_END)
            return err_out(err, errlen, "%s: corrupt gzip data (zlib: %s)", path, msg);
    }
    return 0;
}

int dataset_load_idx(dataset *d, const char *images, const char *labels, long limit, char *err,
                     size_t errlen)
{
    memset(d, 0, sizeof *d);
    idx_file xi = {0}, xl = {0};
    if (idx_open(&xi, images, 3, err, errlen))
        return -1;
    if (labels && idx_open(&xl, labels, 1, err, errlen)) {
        gzclose(xi.f);
        return -1;
    }
    uint32_t n = xi.shape[0], h = xi.shape[1], w = xi.shape[2];
    int rc = -1;
    if (labels && n != xl.shape[0]) {
        err_out(err, errlen, "%s has %u images but %s has %u labels", images, n, labels,
                xl.shape[0]);
        goto out;
    }
    if (!n) {
        err_out(err, errlen, "%s: has no images", images);
        goto out;
    }
    if (!h || !w || h > 16384 || w > 16384) {
        err_out(err, errlen, "%s: implausible image size %ux%u (1 to 16384 a side)", images, h, w);
        goto out;
    }
    d->n = limit > 0 && (unsigned long)limit < n ? limit : (long)n;
    d->c = 1, d->h = (int)h, d->w = (int)w, d->classes = FASHION_CLASSES;
    int whole = d->n == (long)n;
    if (!(d->pixels = idx_read(&xi, images, "images", (size_t)d->n, (size_t)h * w, err, errlen)) ||
        (whole && idx_finish(&xi, images, err, errlen)))
        goto out;
    if (!labels) {
        d->labels = calloc((size_t)d->n, 1);
        if (!d->labels) {
            err_out(err, errlen, "%s: out of memory for %ld labels", images, d->n);
            goto out;
        }
    } else if (!(d->labels = idx_read(&xl, labels, "labels", (size_t)d->n, 1, err, errlen)) ||
               (whole && idx_finish(&xl, labels, err, errlen))) {
        goto out;
    }
    for (long i = 0; i < d->n; i++)
        if (d->labels[i] >= d->classes) {
            err_out(err, errlen, "%s: label %u at index %ld is outside 0..%d", labels,
                    d->labels[i], i, d->classes - 1);
            goto out;
        }
    rc = 0;
out:
    gzclose(xi.f);
    if (xl.f)
        gzclose(xl.f);
    if (rc)
        dataset_free(d);
    return rc;
}

/* Appends path's CIFAR-10 records to d, up to limit in all (0: no limit): 0, or -1 with err
 * (d is left for the caller to free). */
static int cifar10_append(dataset *d, const char *path, long limit, char *err, size_t errlen)
{
    const size_t record = 1 + 3 * CIFAR_SIDE * CIFAR_SIDE, pix = record - 1;
    long long size;
    FILE *f = input_open(path, "CIFAR-10 batch", &size, err, errlen);
    if (!f)
        return -1;
    int rc = -1;
    long count = (long)(size / (long long)record);
    if (limit > 0 && d->n + count > limit)
        count = limit - d->n;
    uint8_t *p = NULL, *l = NULL;
    if (size <= 0 || size % (long long)record) {
        err_out(err, errlen, "%s: %lld bytes is not a whole number of %zu-byte CIFAR-10 records "
                "(truncated or not a CIFAR-10 batch)", path, size, record);
        goto out;
    }
    p = realloc(d->pixels, (size_t)(d->n + count) * pix);
    d->pixels = p ? p : d->pixels;
    l = realloc(d->labels, (size_t)(d->n + count));
    d->labels = l ? l : d->labels;
    if (!p || !l) {
        err_out(err, errlen, "%s: out of memory", path);
        goto out;
    }
    uint8_t buf[1 + 3 * CIFAR_SIDE * CIFAR_SIDE];
    for (long i = 0; i < count; i++, d->n++) {
        if (fread(buf, 1, record, f) != record) {
            err_out(err, errlen, "%s: read error at record %ld", path, i);
            goto out;
        }
        if (buf[0] >= CIFAR_CLASSES) {
            err_out(err, errlen, "%s: record %ld has label %u, outside 0..9", path, i, buf[0]);
            goto out;
        }
        d->labels[d->n] = buf[0];
        memcpy(d->pixels + (size_t)d->n * pix, buf + 1, pix);
    }
    rc = 0;
out:
    fclose(f);
    return rc;
}

int dataset_load_cifar10(dataset *d, const char *files, long limit, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    d->c = 3, d->h = d->w = CIFAR_SIDE, d->classes = CIFAR_CLASSES;
    char list[2048];
    snprintf(list, sizeof list, "%s", files);
    for (char *save = NULL, *path = strtok_r(list, ",", &save); path;
         path = strtok_r(NULL, ",", &save)) {
        while (*path == ' ')
            path++;
        if (cifar10_append(d, path, limit, err, errlen)) {
            dataset_free(d);
            return -1;
        }
        if (limit > 0 && d->n >= limit)
            break;
    }
    if (!d->n)
        return err_out(err, errlen, "no CIFAR-10 records in '%s'", files);
    return 0;
}

int dataset_looks_idx(const char *path)
{
    gzFile f = gzopen(path, "rb");
    uint8_t head[4];
    int n = f ? gzread(f, head, sizeof head) : 0;
    if (f)
        gzclose(f);
    return n == 4 && !head[0] && !head[1] && head[2] == IDX_UBYTE && head[3] >= 1 && head[3] <= 3;
}

void dataset_free(dataset *d)
{
    free(d->pixels);
    free(d->labels);
    d->pixels = d->labels = NULL;
    d->n = 0;
}

/* Reads the next header number of a PNM file, skipping white space and # comments. */
static int pnm_number(FILE *f, int *out)
{
    int ch;
    for (;;) {
        ch = fgetc(f);
        if (ch == '#')
            while ((ch = fgetc(f)) != '\n' && ch != EOF) {
            }
        else if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r')
            break;
    }
    long v = 0;
    int digits = 0;
    while (ch >= '0' && ch <= '9' && v < 1000000) {
        v = v * 10 + (ch - '0');
        digits++;
        ch = fgetc(f);
    }
    *out = (int)v;
    return digits ? 0 : -1;   /* the single white space after the number is consumed */
}

/* One sample value: an ASCII number (P2, P3) or a 1- or 2-byte big-endian binary one (P5, P6). */
static int pnm_sample(FILE *f, int ascii, int maxval, int *out)
{
    if (ascii)
        return pnm_number(f, out) || *out > maxval ? -1 : 0;
    int hi = fgetc(f), lo = maxval > 255 ? fgetc(f) : 0;
    if (hi == EOF || lo == EOF)
        return -1;
    *out = maxval > 255 ? hi << 8 | lo : hi;
    return *out > maxval ? -1 : 0;
}

/* PGM and PPM, ASCII (P2, P3) or binary (P5, P6), 8 or 16 bits per sample. */
static int load_one_pnm(const char *path, dataset *one, char *err, size_t errlen)
{
    long long size;
    FILE *f = input_open(path, "PGM or PPM image", &size, err, errlen);
    if (!f)
        return -1;
    char magic[2] = {0};
    int w, h, maxval;
    if (fread(magic, 1, 2, f) != 2 || magic[0] != 'P' || magic[1] < '2' || magic[1] > '6' ||
        magic[1] == '4' || pnm_number(f, &w) || pnm_number(f, &h) || pnm_number(f, &maxval) ||
        w < 1 || h < 1 || w > 16384 || h > 16384 || maxval < 1 || maxval > 65535) {
        fclose(f);
        return err_out(err, errlen, "%s: not a PGM or PPM image (P2, P3, P5 or P6, 1 to 16384 "
                       "pixels a side, maxval at most 65535)", path);
    }
    int ascii = magic[1] <= '3', c = magic[1] == '3' || magic[1] == '6' ? 3 : 1;
    size_t hw = (size_t)w * h;
    /* Each sample takes at least 2 bytes as text ("0 ") and 1 or 2 in binary: a header that
     * claims a large image the file cannot hold is refused before anything is allocated (a small
     * one is read, to say which sample is missing). */
    long long left = size - ftell(f), least = (long long)(hw * (size_t)c) *
                                              (ascii ? 2 : maxval > 255 ? 2 : 1) - (ascii ? 1 : 0);
    if (left < least && hw * (size_t)c > 65536) {
        fclose(f);
        return err_out(err, errlen, "%s: truncated: %dx%d pixels need at least %lld bytes, the "
                       "file has %lld after its header", path, w, h, least, left);
    }
    *one = (dataset){.n = 1, .c = c, .h = h, .w = w, .classes = 1};
    one->pixels = malloc(hw * (size_t)c);
    one->labels = calloc(1, 1);
    if (!one->pixels || !one->labels) {
        fclose(f);
        dataset_free(one);
        return err_out(err, errlen, "%s: out of memory", path);
    }
    for (size_t p = 0; p < hw; p++)   /* RGBRGB... -> planes, scaled to 0..255 */
        for (int k = 0; k < c; k++) {
            int v;
            if (pnm_sample(f, ascii, maxval, &v)) {
                fclose(f);
                dataset_free(one);
                return err_out(err, errlen, "%s: truncated or bad pixel data: sample %zu of %zu "
                               "is missing or above maxval %d", path, p * c + k + 1, hw * c, maxval);
            }
            one->pixels[k * hw + p] = (uint8_t)((long)v * 255 / maxval);
        }
    fclose(f);
    return 0;
}

int dataset_load_pnm(dataset *d, const char *const *paths, int n, int c, int h, int w,
                     int classes, char *err, size_t errlen)
{
    *d = (dataset){.n = n, .c = c, .h = h, .w = w, .classes = classes};
    size_t per = (size_t)c * h * w;
    d->pixels = malloc(per * (size_t)(n ? n : 1));
    d->labels = calloc((size_t)(n ? n : 1), 1);
    if (!d->pixels || !d->labels) {
        dataset_free(d);
        return err_out(err, errlen, "out of memory for %d images", n);
    }
    for (int i = 0; i < n; i++) {
        dataset one;
        if (load_one_pnm(paths[i], &one, err, errlen)) {
            dataset_free(d);
            return -1;
        }
        if (one.c == 3 && c == 1) {   /* colour to grey: ITU-R BT.601 luminance */
            size_t hw = (size_t)one.h * one.w;
            for (size_t p = 0; p < hw; p++)
                one.pixels[p] = (uint8_t)((299 * one.pixels[p] + 587 * one.pixels[hw + p] +
                                           114 * one.pixels[2 * hw + p] + 500) / 1000);
            one.c = 1;
        }
        if (dataset_reshape(&one, h, w, c, err, errlen)) {
            dataset_free(&one);
            dataset_free(d);
            return -1;
        }
        memcpy(d->pixels + per * (size_t)i, one.pixels, per);
        dataset_free(&one);
    }
    return 0;
}
