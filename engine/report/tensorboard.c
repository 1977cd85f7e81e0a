#include "engine/report/tensorboard.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

uint32_t tensorboard_crc32c(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint32_t crc = 0xffffffffu;
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++)
            crc = crc >> 1 ^ (0x82f63b78u & -(crc & 1));
    }
    return ~crc;
}

static uint32_t masked_crc(const void *data, size_t n)
{
    uint32_t c = tensorboard_crc32c(data, n);
    return (c >> 15 | c << 17) + 0xa282ead8u;
}

/* ---- the protocol-buffer fields an Event with a scalar summary needs ---- */

typedef struct pb {
    unsigned char b[1024];
    size_t n;
} pb;

static void put_varint(pb *o, uint64_t v)
{
    while (v >= 0x80 && o->n < sizeof o->b) {
        o->b[o->n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    if (o->n < sizeof o->b)
        o->b[o->n++] = (unsigned char)v;
}

static void put_fixed(pb *o, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes && o->n < sizeof o->b; i++)
        o->b[o->n++] = (unsigned char)(v >> 8 * i);
}

/* Field `field` of wire type 2 (length-delimited). */
static void put_bytes(pb *o, int field, const void *data, size_t n)
{
    put_varint(o, (uint64_t)field << 3 | 2);
    put_varint(o, n);
    if (n <= sizeof o->b - o->n) {
        memcpy(o->b + o->n, data, n);
        o->n += n;
    }
}

static void put_double(pb *o, int field, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_varint(o, (uint64_t)field << 3 | 1);
    put_fixed(o, bits, 8);
}

static void put_float(pb *o, int field, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_varint(o, (uint64_t)field << 3 | 5);
    put_fixed(o, bits, 4);
}

/* Event {1: wall_time, 2: step, 3: file_version | 5: summary | 7: session_log}. */
static void event_head(pb *o, double wall_time, long step)
{
    o->n = 0;
    put_double(o, 1, wall_time);
    put_varint(o, 2 << 3);
    put_varint(o, (uint64_t)step);
}

/* One TFRecord: length, its masked CRC, the data, the data's masked CRC. */
static int write_record(tb_writer *w, const pb *o)
{
    unsigned char head[12];
    uint64_t len = o->n;
    for (int i = 0; i < 8; i++)
        head[i] = (unsigned char)(len >> 8 * i);
    uint32_t c = masked_crc(head, 8), d = masked_crc(o->b, o->n);
    for (int i = 0; i < 4; i++)
        head[8 + i] = (unsigned char)(c >> 8 * i);
    unsigned char tail[4] = {(unsigned char)d, (unsigned char)(d >> 8), (unsigned char)(d >> 16),
                             (unsigned char)(d >> 24)};
    return fwrite(head, 1, 12, w->f) == 12 && fwrite(o->b, 1, o->n, w->f) == o->n &&
                   fwrite(tail, 1, 4, w->f) == 4 ? 0 : -1;
}

int tensorboard_scalar(tb_writer *w, const char *tag, double value, long step, double wall_time)
{
    if (!w->f || !isfinite(value))
        return 0;   /* a missing figure (no test set) is no point */
    size_t tlen = strnlen(tag, 256);
    pb v = {.n = 0}, summary = {.n = 0}, ev;
    put_bytes(&v, 1, tag, tlen);               /* Summary.Value.tag */
    put_float(&v, 2, (float)value);            /* Summary.Value.simple_value */
    put_bytes(&summary, 1, v.b, v.n);          /* Summary.value */
    event_head(&ev, wall_time, step);
    put_bytes(&ev, 5, summary.b, summary.n);   /* Event.summary */
    return write_record(w, &ev);
}

int tensorboard_restart(tb_writer *w, long step, double wall_time)
{
    pb status = {.n = 0}, ev;
    put_varint(&status, 1 << 3);               /* SessionLog.status */
    put_varint(&status, 1);                    /* START */
    event_head(&ev, wall_time, step);
    put_bytes(&ev, 7, status.b, status.n);     /* Event.session_log */
    return w->f ? write_record(w, &ev) : 0;
}

/* A fresh run's folder loses the event files of the run it replaces. */
static void remove_old_events(const char *tbdir)
{
    DIR *d = opendir(tbdir);
    struct dirent *e;
    char path[1024];
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, "tfevents")) {
            snprintf(path, sizeof path, "%s/%s", tbdir, e->d_name);
            unlink(path);
        }
    if (d)
        closedir(d);
}

int tensorboard_open(tb_writer *w, const char *dir, int resumed, char *err, size_t errlen)
{
    char tbdir[640], host[64] = "host";
    memset(w, 0, sizeof *w);
    snprintf(tbdir, sizeof tbdir, "%s/tb", dir);
    if (mkdir(tbdir, 0777) && errno != EEXIST) {
        snprintf(err, errlen, "%s: cannot create: %s", tbdir, strerror(errno));
        return -1;
    }
    if (!resumed)
        remove_old_events(tbdir);
    gethostname(host, sizeof host - 1);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    /* TensorBoard reads a folder's files in the order of their names: to the nanosecond, so
     * that a resumed run's sorts after the runs before it even within the same second (by
     * seconds and pid alone, pid 100002 sorted before 99998, and the restart was read first) */
    snprintf(w->path, sizeof w->path, "%s/events.out.tfevents.%lld.%09ld.%s.%d.frugal", tbdir,
             (long long)now.tv_sec, (long)now.tv_nsec, host, (int)getpid());
    if (!(w->f = fopen(w->path, "wb"))) {
        snprintf(err, errlen, "%s: cannot create: %s", w->path, strerror(errno));
        return -1;
    }
    pb ev;
    event_head(&ev, (double)now.tv_sec + 1e-9 * (double)now.tv_nsec, 0);
    put_bytes(&ev, 3, "brain.Event:2", 13);   /* Event.file_version */
    if (write_record(w, &ev))
        return snprintf(err, errlen, "%s: cannot write", w->path), -1;
    return tensorboard_flush(w, err, errlen);
}

int tensorboard_flush(tb_writer *w, char *err, size_t errlen)
{
    if (w->f && (fflush(w->f) || fsync(fileno(w->f)))) {
        snprintf(err, errlen, "%s: cannot write: %s", w->path, strerror(errno));
        return -1;
    }
    return 0;
}

void tensorboard_close(tb_writer *w)
{
    if (w->f)
        fclose(w->f);
    w->f = NULL;
}
