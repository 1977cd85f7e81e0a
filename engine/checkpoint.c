#include "engine/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static const char MAGIC[8] = {'F', 'R', 'U', 'G', 'A', 'L', 'C', 'K'};
enum { VERSION = 2 };

/* Header, then per layer with parameters: params then velocity (float32, little-endian as on
 * x86-64), then the CRC32 of everything before it. */
typedef struct header {
    char magic[8];
    uint32_t version, epoch, nlayers, c, h, w, classes, reserved;
} header;

/* What a layer is, enough to rebuild the model without the job file. */
typedef struct layer_record {
    int32_t type, filters, size, stride, padding, outputs;
    uint64_t nparams;
} layer_record;

static layer_record record_of(const layer *l)
{
    layer_record r = {.type = l->type, .nparams = (uint64_t)l->nparams};
    if (l->type == LAYER_CONV)
        r.filters = l->conv.f, r.size = l->conv.kh, r.stride = l->conv.stride, r.padding = l->conv.pad;
    else if (l->type == LAYER_MAXPOOL)
        r.size = l->pool.size, r.stride = l->pool.stride;
    else if (l->type == LAYER_DENSE)
        r.outputs = l->out_c;
    return r;
}

static int write_all(int fd, const void *buf, size_t n, uLong *crc)
{
    *crc = crc32(*crc, buf, (uInt)n);
    for (const char *p = buf; n;) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w, n -= (size_t)w;
    }
    return 0;
}

int checkpoint_save(const model *m, int epoch, const char *path, char *err, size_t errlen)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        return -1;
    }
    uLong crc = crc32(0, NULL, 0);
    header h = {.version = VERSION, .epoch = (uint32_t)epoch, .nlayers = (uint32_t)m->nlayers,
                .c = (uint32_t)m->layers[0].in_c, .h = (uint32_t)m->layers[0].in_h,
                .w = (uint32_t)m->layers[0].in_w, .classes = (uint32_t)m->classes};
    memcpy(h.magic, MAGIC, sizeof MAGIC);
    int rc = write_all(fd, &h, sizeof h, &crc);
    for (int l = 0; !rc && l < m->nlayers; l++) {
        const layer *ly = &m->layers[l];
        layer_record rec = record_of(ly);
        rc = write_all(fd, &rec, sizeof rec, &crc);
        if (!rc && ly->nparams)
            rc = write_all(fd, ly->params, sizeof(float) * (size_t)ly->nparams, &crc) ||
                 write_all(fd, ly->velocity, sizeof(float) * (size_t)ly->nparams, &crc);
    }
    uint32_t c32 = (uint32_t)crc;
    uLong ignored = 0;
    if (!rc)
        rc = write_all(fd, &c32, sizeof c32, &ignored);
    if (!rc)
        rc = fsync(fd);
    if (close(fd))
        rc = -1;
    if (rc || rename(tmp, path)) {
        snprintf(err, errlen, "%s: cannot write the checkpoint: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {   /* make the rename itself durable */
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

static int read_all(FILE *f, void *buf, size_t n, uLong *crc)
{
    if (fread(buf, 1, n, f) != n)
        return -1;
    *crc = crc32(*crc, buf, (uInt)n);
    return 0;
}

/* Reads a checkpoint. With build set, m is made from the stored layers; otherwise m must already
 * have the same layers, and is only filled. A bad file leaves m as it was. */
static int read_checkpoint(model *m, int build, int *epoch, const char *path, char *err,
                           size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    uLong crc = crc32(0, NULL, 0);
    header h;
    layer_record rec[CONFIG_MAX_LAYERS];
    float **saved = NULL;
    int rc = -1;
    if (read_all(f, &h, sizeof h, &crc) || memcmp(h.magic, MAGIC, sizeof MAGIC) ||
        h.version != VERSION) {
        snprintf(err, errlen, "%s: not a frugal checkpoint (version %d)", path, VERSION);
        goto out;
    }
    if (h.nlayers < 1 || h.nlayers > CONFIG_MAX_LAYERS || (!build && (int)h.nlayers != m->nlayers)) {
        snprintf(err, errlen, "%s: has %u layers%s", path, h.nlayers,
                 build ? ", which is not possible" : ", not as many as the job");
        goto out;
    }
    if (build) {   /* rebuild the model the checkpoint describes */
        static job_config cfg;
        memset(&cfg, 0, sizeof cfg);
        snprintf(cfg.path, sizeof cfg.path, "%s", path);
        cfg.nlayers = (int)h.nlayers;
        for (int l = 0; l < cfg.nlayers; l++) {
            long at = ftell(f);
            if (read_all(f, &rec[l], sizeof rec[l], &crc)) {
                snprintf(err, errlen, "%s: truncated at layer %d", path, l + 1);
                goto out;
            }
            cfg.layers[l] = (layer_config){.type = (layer_type)rec[l].type, .line = l + 1,
                                           .filters = rec[l].filters, .size = rec[l].size,
                                           .stride = rec[l].stride, .padding = rec[l].padding,
                                           .outputs = rec[l].outputs};
            /* skip this layer's numbers for now: shapes first */
            if (fseek(f, at + (long)sizeof rec[l] + 2L * 4 * (long)rec[l].nparams, SEEK_SET)) {
                snprintf(err, errlen, "%s: truncated at layer %d", path, l + 1);
                goto out;
            }
        }
        if (rec[0].type > LAYER_SOFTMAX_XENT ||
            config_check_shapes(&cfg, (int)h.c, (int)h.h, (int)h.w, (int)h.classes, err, errlen) ||
            model_build(m, &cfg, (int)h.c, (int)h.h, (int)h.w, (int)h.classes, err, errlen))
            goto out;
        fseek(f, (long)sizeof h, SEEK_SET);
        crc = crc32(crc32(0, NULL, 0), (const Bytef *)&h, sizeof h);
    }
    saved = calloc((size_t)m->nlayers * 2, sizeof(float *));
    if (!saved)
        goto out;
    for (int l = 0; l < m->nlayers; l++) {
        layer *ly = &m->layers[l];
        layer_record r, want = record_of(ly);
        if (read_all(f, &r, sizeof r, &crc)) {
            snprintf(err, errlen, "%s: truncated at layer %d", path, l + 1);
            goto out;
        }
        if (memcmp(&r, &want, sizeof r)) {
            snprintf(err, errlen, "%s: layer %d is a %s with %llu parameters in the checkpoint, "
                     "a %s with %ld in the job", path, l + 1, layer_name((layer_type)r.type),
                     (unsigned long long)r.nparams, layer_name(ly->type), ly->nparams);
            goto out;
        }
        if (!ly->nparams)
            continue;
        size_t bytes = sizeof(float) * (size_t)ly->nparams;
        saved[2 * l] = malloc(bytes), saved[2 * l + 1] = malloc(bytes);
        if (!saved[2 * l] || !saved[2 * l + 1] || read_all(f, saved[2 * l], bytes, &crc) ||
            read_all(f, saved[2 * l + 1], bytes, &crc)) {
            snprintf(err, errlen, "%s: truncated at layer %d", path, l + 1);
            goto out;
        }
    }
    uint32_t stored;
    if (fread(&stored, 1, sizeof stored, f) != sizeof stored || stored != (uint32_t)crc ||
        fgetc(f) != EOF) {
        snprintf(err, errlen, "%s: corrupt (checksum mismatch or trailing bytes)", path);
        goto out;
    }
    for (int l = 0; l < m->nlayers; l++)
        if (m->layers[l].nparams) {
            memcpy(m->layers[l].params, saved[2 * l], sizeof(float) * (size_t)m->layers[l].nparams);
            memcpy(m->layers[l].velocity, saved[2 * l + 1], sizeof(float) * (size_t)m->layers[l].nparams);
        }
    *epoch = (int)h.epoch;
    rc = 0;
out:
    for (int i = 0; saved && i < 2 * m->nlayers; i++)
        free(saved[i]);
    free(saved);
    if (rc && build)
        model_free(m);
    fclose(f);
    return rc;
}

int checkpoint_load(model *m, int *epoch, const char *path, char *err, size_t errlen)
{
    return read_checkpoint(m, 0, epoch, path, err, errlen);
}

int checkpoint_open_model(model *m, int *epoch, const char *path, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    return read_checkpoint(m, 1, epoch, path, err, errlen);
}
