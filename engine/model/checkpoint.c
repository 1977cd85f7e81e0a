#include "engine/model/checkpoint.h"

#include "common/input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static const char MAGIC[8] = {'F', 'R', 'U', 'G', 'A', 'L', 'C', 'K'};
enum { VERSION = 3 };

/* Little-endian as on x86-64: header, a record per layer, each layer's parameters then velocity
 * (float32), the log's length and bytes, then the CRC32 of everything before it. */
typedef struct header {
    char magic[8];
    uint32_t version, epoch, batch, nlayers, c, h, w, classes;
    uint64_t bytes;   /* the whole file's: a short file is truncated, not merely corrupt */
} header;

/* A layer's configuration, the same for every type (the fields its keys do not name are 0),
 * and its parameter count as a check. */
typedef struct layer_record {
    int32_t type, filters, size, stride, padding, outputs;
    uint64_t nparams;
} layer_record;

#define FIELD(f) offsetof(layer_config, f)
static const size_t numeric_fields[] = {FIELD(filters), FIELD(size), FIELD(stride),
                                        FIELD(padding), FIELD(outputs)};

static layer_record record_of(const layer *l)
{
    layer_record r = {.type = l->cfg.type, .nparams = (uint64_t)l->nparams};
    int32_t *dst[] = {&r.filters, &r.size, &r.stride, &r.padding, &r.outputs};
    for (const key_spec *k = l->cls->keys; k->name; k++)
        for (int i = 0; i < 5; i++)
            if (k->offset == numeric_fields[i])
                *dst[i] = *(const int *)((const char *)&l->cfg + k->offset);
    return r;
}

/* ---- writing ---- */

static int write_all(int fd, const void *buf, size_t n, uLong *crc)
{
    for (size_t done = 0; done < n;) {   /* crc32 takes at most 4 GB at a time */
        uInt piece = n - done > (1u << 30) ? 1u << 30 : (uInt)(n - done);
        *crc = crc32(*crc, (const Bytef *)buf + done, piece);
        done += piece;
    }
    for (const char *p = buf; n;) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = ENOSPC;
            return -1;
        }
        p += w, n -= (size_t)w;
    }
    return 0;
}

static int write_body(int fd, const model *m, const checkpoint_state *st, uLong *crc)
{
    header h = {.version = VERSION, .epoch = (uint32_t)st->epoch, .batch = (uint32_t)st->batch,
                .nlayers = (uint32_t)m->nlayers, .c = (uint32_t)m->layers[0].in_c,
                .h = (uint32_t)m->layers[0].in_h, .w = (uint32_t)m->layers[0].in_w,
                .classes = (uint32_t)m->classes};
    h.bytes = sizeof h + (uint64_t)m->nlayers * sizeof(layer_record) + sizeof(uint32_t) +
              st->log_len + sizeof(uint32_t);
    for (int l = 0; l < m->nlayers; l++)
        h.bytes += 2 * sizeof(float) * (uint64_t)m->layers[l].nparams;
    memcpy(h.magic, MAGIC, sizeof MAGIC);
    if (write_all(fd, &h, sizeof h, crc))
        return -1;
    for (int l = 0; l < m->nlayers; l++) {
        layer_record rec = record_of(&m->layers[l]);
        if (write_all(fd, &rec, sizeof rec, crc))
            return -1;
    }
    for (int l = 0; l < m->nlayers; l++) {
        const layer *ly = &m->layers[l];
        size_t bytes = sizeof(float) * (size_t)ly->nparams;
        if (bytes && (write_all(fd, ly->params, bytes, crc) || write_all(fd, ly->velocity, bytes, crc)))
            return -1;
    }
    uint32_t log_len = (uint32_t)st->log_len;
    return write_all(fd, &log_len, sizeof log_len, crc) ||
           (log_len && write_all(fd, st->log, log_len, crc));
}

int checkpoint_save(const model *m, const checkpoint_state *st, const char *path, char *err,
                    size_t errlen)
{
    if (st->log_len > CHECKPOINT_MAX_LOG) {
        snprintf(err, errlen, "%s: the run's log (%zu bytes) is too long", path, st->log_len);
        return -1;
    }
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        return -1;
    }
    uLong crc = crc32(0, NULL, 0), ignored = 0;
    int rc = write_body(fd, m, st, &crc);
    uint32_t c32 = (uint32_t)crc;
    if (!rc)
        rc = write_all(fd, &c32, sizeof c32, &ignored);
    if (!rc)
        rc = fsync(fd);
    int saved = errno;
    if (close(fd) && !rc) {
        rc = -1;
        saved = errno;
    }
    if (rc || rename(tmp, path)) {
        snprintf(err, errlen, "%s: cannot write the checkpoint: %s", path,
                 strerror(rc ? saved : errno));
        unlink(tmp);
        return -1;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {   /* make the rename itself durable */
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

/* ---- reading ---- */

typedef struct reader {
    const uint8_t *p;
    size_t left;
    const char *name;
    char *err;
    size_t errlen;
} reader;

static int bad(reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(reader *r, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(r->err, r->errlen, "%s: %s", r->name, msg);
    return -1;
}

static int take(reader *r, void *out, size_t n, const char *what)
{
    if (n > r->left)
        return bad(r, "truncated in %s (%zu bytes needed, %zu left)", what, n, r->left);
    memcpy(out, r->p, n);
    r->p += n, r->left -= n;
    return 0;
}

/* Every field of a record within the range its layer type's key allows, the others 0. */
static int check_record(reader *r, int i, const layer_record *rec, layer_config *out)
{
    const layer_class *c = layer_class_of((layer_type)rec->type);
    if (!c)
        return bad(r, "layer %d has type %d, which is not a layer type (0 to %d)", i + 1,
                   rec->type, LAYER_TYPES - 1);
    *out = (layer_config){.type = c->type, .line = i + 1};
    const int32_t *src[] = {&rec->filters, &rec->size, &rec->stride, &rec->padding, &rec->outputs};
    for (int f = 0; f < 5; f++) {
        const key_spec *k = c->keys;
        while (k->name && k->offset != numeric_fields[f])
            k++;
        int32_t v = *src[f];
        if (!k->name ? v != 0 : v < k->lo || v > k->hi)
            return bad(r, "layer %d ([%s]) has a field out of range (%d)", i + 1, c->name, v);
        *(int *)((char *)out + numeric_fields[f]) = v;
    }
    return 0;
}

/* The stored configuration as a job's layer list, and the header's shape, checked. */
static int read_layers(reader *r, const header *h, layer_config *layers, layer_record *rec)
{
    if (h->nlayers < 1 || h->nlayers > CONFIG_MAX_LAYERS)
        return bad(r, "%u layers (1 to %d)", h->nlayers, CONFIG_MAX_LAYERS);
    if (h->c < 1 || h->h < 1 || h->w < 1 || h->c > 65536 || h->h > 65536 || h->w > 65536 ||
        h->classes < 1 || h->classes > MODEL_MAX_CLASSES)
        return bad(r, "an input of %ux%ux%u with %u classes is not possible", h->c, h->h, h->w,
                   h->classes);
    memset(layers, 0, sizeof(layer_config) * h->nlayers);
    uint64_t values = 0;   /* the parameters and velocities the records claim */
    for (int i = 0; i < (int)h->nlayers; i++) {
        if (take(r, &rec[i], sizeof rec[i], "the layer records") ||
            check_record(r, i, &rec[i], &layers[i]))
            return -1;
        if (rec[i].nparams > (uint64_t)LAYER_MAX_VALUES)
            return bad(r, "layer %d claims %llu parameters", i + 1,
                       (unsigned long long)rec[i].nparams);
        values += 2 * rec[i].nparams;
    }
    /* before anything is allocated for them */
    if (values > r->left / sizeof(float))
        return bad(r, "truncated: its layers claim %llu parameters, %zu bytes are left",
                   (unsigned long long)(values / 2), r->left);
    return 0;
}

/* The file's floats may sit at any alignment: read each through memcpy. */
static int finite_all(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v;
        memcpy(&v, p + i * sizeof v, sizeof v);
        if (!isfinite(v))
            return 0;
    }
    return 1;
}

/* The stored records against the model's layers: the same types, settings and sizes. */
static int same_layers(reader *r, const model *m, const layer_record *rec)
{
    for (int l = 0; l < m->nlayers; l++) {
        layer_record want = record_of(&m->layers[l]);
        if (memcmp(&rec[l], &want, sizeof want))
            return bad(r, "layer %d is a [%s] with %llu parameters in the checkpoint, a [%s] "
                       "with %ld in the job", l + 1, layer_name((layer_type)rec[l].type),
                       (unsigned long long)rec[l].nparams, m->layers[l].cls->name,
                       m->layers[l].nparams);
    }
    return 0;
}

/* Checks and copies every layer's parameters and velocity; m is changed only if all are good. */
static int read_params(reader *r, model *m)
{
    const uint8_t *start = r->p;
    for (int l = 0; l < m->nlayers; l++) {
        size_t bytes = 2 * sizeof(float) * (size_t)m->layers[l].nparams;
        if (bytes > r->left)
            return bad(r, "truncated in the parameters of layer %d", l + 1);
        if (!finite_all(r->p, bytes / sizeof(float)))
            return bad(r, "layer %d has a parameter that is not finite", l + 1);
        r->p += bytes, r->left -= bytes;
    }
    for (int l = 0; l < m->nlayers; l++) {   /* all good: now copy */
        size_t bytes = sizeof(float) * (size_t)m->layers[l].nparams;
        if (!bytes)
            continue;
        memcpy(m->layers[l].params, start, bytes);
        memcpy(m->layers[l].velocity, start + bytes, bytes);
        start += 2 * bytes;
    }
    return 0;
}

static int read_log(reader *r, checkpoint_state *st)
{
    uint32_t len = 0;
    if (take(r, &len, sizeof len, "the run's log"))
        return -1;
    if (len > CHECKPOINT_MAX_LOG || len > r->left)
        return bad(r, "the run's log claims %u bytes, %zu are left", len, r->left);
    st->log = malloc((size_t)len + 1);
    if (!st->log)
        return bad(r, "out of memory for the run's log");
    memcpy(st->log, r->p, len);
    st->log[len] = 0;
    st->log_len = len;
    r->p += len, r->left -= len;
    return r->left ? bad(r, "%zu bytes after the end", r->left) : 0;
}

int checkpoint_decode(const uint8_t *buf, size_t len, const char *name, model *m, int build,
                      checkpoint_state *st, char *err, size_t errlen)
{
    reader r = {buf, len, name, err, errlen};
    memset(st, 0, sizeof *st);
    header h;
    uint32_t stored;
    if (len < sizeof h + sizeof stored || memcmp(buf, MAGIC, sizeof MAGIC))
        return bad(&r, "not a frugal checkpoint");
    memcpy(&h, buf, sizeof h);
    if (h.version != VERSION)
        return bad(&r, "a checkpoint of version %u; this frugal reads version %d", h.version,
                   VERSION);
    if (h.bytes != len)
        return bad(&r, h.bytes > len ? "truncated: %zu bytes of the %llu it should have"
                                     : "%zu bytes, more than the %llu it should have",
                   len, (unsigned long long)h.bytes);
    memcpy(&stored, buf + len - sizeof stored, sizeof stored);
    uLong crc = crc32(0, NULL, 0);
    for (size_t done = 0; done < len - sizeof stored;) {
        uInt piece = len - sizeof stored - done > (1u << 30) ? 1u << 30
                                                             : (uInt)(len - sizeof stored - done);
        crc = crc32(crc, buf + done, piece);
        done += piece;
    }
    if ((uint32_t)crc != stored)
        return bad(&r, "corrupt (checksum mismatch)");
    r.p += sizeof h, r.left -= sizeof h + sizeof stored;
    if (h.epoch > CHECKPOINT_MAX_EPOCHS || h.batch > (1u << 30))
        return bad(&r, "taken after epoch %u, batch %u: not possible", h.epoch, h.batch);
    layer_config layers[CONFIG_MAX_LAYERS];
    layer_record rec[CONFIG_MAX_LAYERS];
    if (read_layers(&r, &h, layers, rec))
        return -1;
    char why[512];
    if (build && model_build(m, r.name, layers, (int)h.nlayers, (int)h.c, (int)h.h, (int)h.w,
                             (int)h.classes, 0, why, sizeof why))
        return bad(&r, "describes a model frugal cannot build: %s", why);
    if (!build && (int)h.nlayers != m->nlayers)
        return bad(&r, "has %u layers, the job %d", h.nlayers, m->nlayers);
    if (same_layers(&r, m, rec) || (build && model_alloc(m, r.err, r.errlen)))
        return -1;   /* nothing allocated from a record that does not match its shape */
    if (read_params(&r, m) || read_log(&r, st)) {
        free(st->log);
        st->log = NULL;
        if (build)
            model_free(m);
        return -1;
    }
    st->epoch = (int)h.epoch;
    st->batch = (int)h.batch;
    return 0;
}

static int read_checkpoint(model *m, int build, checkpoint_state *st, const char *path,
                           char *err, size_t errlen)
{
    size_t len = 0;
    /* Parameters are bounded by what the model may hold (2^31 values a layer, 32 layers). */
    char *buf = input_read_all(path, (size_t)1 << 40, "checkpoint", &len, err, errlen);
    if (!buf)
        return -1;
    int rc = checkpoint_decode((const uint8_t *)buf, len, path, m, build, st, err, errlen);
    free(buf);
    return rc;
}

int checkpoint_load(model *m, checkpoint_state *st, const char *path, char *err, size_t errlen)
{
    return read_checkpoint(m, 0, st, path, err, errlen);
}

int checkpoint_open_model(model *m, checkpoint_state *st, const char *path, char *err,
                          size_t errlen)
{
    memset(m, 0, sizeof *m);
    return read_checkpoint(m, 1, st, path, err, errlen);
}
