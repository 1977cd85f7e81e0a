#include "engine/cluster/proto.h"
#include "common/env_switches.h"

#include "engine/job/config.h"
#include "netio/wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RESULT_HEAD (8 + 5 * 4 + 7 * 8)

int proto_cipher_from_env(netio_config *nc, char *err, size_t errlen)
{
    const char *v = env_switch_value(ENV_NET_CIPHER);
    nc->no_aes = v && !strcmp(v, "xchacha20poly1305");
    if (v && !nc->no_aes && strcmp(v, "auto")) {
        snprintf(err, errlen, "FRUGAL_NET_CIPHER=%s: expected auto or xchacha20poly1305", v);
        return -1;
    }
    return 0;
}

void proto_limits(frame_limits *l, int coordinator, long nparams, long largest)
{
    memset(l, 0, sizeof *l);
    l->ntypes = MSG_TYPES;
    uint32_t floats = nparams > 0 ? (uint32_t)(4 * nparams) : 0;
    if (coordinator) {
        l->max_payload[MSG_JOIN] = 12 + 64 + PROTO_TEXT + 4 + NETIO_ID_PUBLIC_BYTES + NETIO_ID_SIG_BYTES;
        l->max_payload[MSG_FETCH] = 40;
        l->max_payload[MSG_READY] = 8 + PROTO_TEXT;
        l->max_payload[MSG_RESULT] = floats ? RESULT_HEAD : 0;
        l->max_payload[MSG_FIGURES] = floats ? RESULT_HEAD : 0;
        l->max_payload[MSG_MODEL] = floats ? RESULT_HEAD + floats + 4 * CONFIG_MAX_LAYERS : 0;
        l->max_payload[MSG_GRAD] = floats && largest > 0 ? PROTO_LAYER_HEAD + 4 * (uint32_t)largest : 0;
        l->max_payload[MSG_RECALLED] = 16;
    } else {
        l->max_payload[MSG_JOB] = 12 + CONFIG_MAX_BYTES + PROTO_MAX_FILES * (512 + 8 + 32 + 4);
        l->max_payload[MSG_FILE] = 48 + PROTO_FILE_PIECE;
        l->max_payload[MSG_PARAMS] = floats ? PROTO_PARAMS_HEAD + floats : 0;
        l->max_payload[MSG_LAYER] = floats && largest > 0 ? PROTO_LAYER_HEAD + 4 * (uint32_t)largest : 0;
        l->max_payload[MSG_WORK] = 28;
        l->max_payload[MSG_ROUND] = 36;
        l->max_payload[MSG_DELTA] = floats ? PROTO_DELTA_HEAD + floats + 4 * CONFIG_MAX_LAYERS : 0;
        l->max_payload[MSG_AVERAGE] = floats ? PROTO_PARAMS_HEAD + floats + 4 * CONFIG_MAX_LAYERS : 0;
        l->max_payload[MSG_RECALL] = 16;
        l->max_payload[MSG_DONE] = PROTO_TEXT;
        l->max_payload[MSG_REFUSED] = PROTO_TEXT;
        l->max_payload[MSG_PAUSED] = PROTO_TEXT;
    }
}

/* ---- encoders ---- */

static void put_text(wire_writer *w, const char *s, size_t n)
{
    wire_u32(w, (uint32_t)n);
    wire_put(w, s, n);
}

const char *proto_msg_name(unsigned type)
{
    static const char *const names[MSG_TYPES] = {
        [MSG_JOIN] = "JOIN", [MSG_JOB] = "JOB", [MSG_FETCH] = "FETCH", [MSG_FILE] = "FILE",
        [MSG_READY] = "READY", [MSG_PARAMS] = "PARAMS", [MSG_WORK] = "WORK",
        [MSG_RESULT] = "RESULT", [MSG_FIGURES] = "FIGURES", [MSG_DONE] = "DONE", [MSG_ROUND] = "ROUND", [MSG_MODEL] = "MODEL",
        [MSG_GRAD] = "GRAD", [MSG_LAYER] = "LAYER", [MSG_RECALL] = "RECALL",
        [MSG_RECALLED] = "RECALLED", [MSG_DELTA] = "DELTA", [MSG_AVERAGE] = "AVERAGE",
        [MSG_REFUSED] = "REFUSED", [MSG_PAUSED] = "PAUSED"};
    return type < MSG_TYPES && names[type] ? names[type] : "?";
}

size_t proto_join_encode(const msg_join *m, uint8_t *out, size_t cap)
{
    wire_writer w = {out, 0, cap};
    wire_u32(&w, m->version);
    wire_u32(&w, m->workers);
    wire_u32(&w, m->isa);
    wire_put(&w, m->host, sizeof m->host);
    wire_put(&w, m->energy, sizeof m->energy);
    wire_u32(&w, m->has_identity);
    wire_put(&w, m->identity, sizeof m->identity);
    wire_put(&w, m->signature, sizeof m->signature);
    return wire_length(&w);
}

size_t proto_ready_encode(const msg_ready *m, uint8_t *out, size_t cap)
{
    wire_writer w = {out, 0, cap};
    wire_u64(&w, (uint64_t)m->nparams);
    wire_put(&w, m->devices, sizeof m->devices);
    return wire_length(&w);
}

size_t proto_job_encode(const msg_job *m, uint8_t *out, size_t cap)
{
    wire_writer w = {out, 0, cap};
    wire_u32(&w, m->isa);
    wire_u32(&w, m->nfiles);
    for (uint32_t i = 0; i < m->nfiles; i++) {
        put_text(&w, m->files[i].name, strlen(m->files[i].name));
        wire_u64(&w, m->files[i].size);
        wire_put(&w, m->files[i].hash, 32);
    }
    put_text(&w, m->text, m->text_len);
    put_text(&w, m->overrides, m->overrides_len);
    return wire_length(&w);
}

size_t proto_fetch_encode(const msg_fetch *m, uint8_t *out, size_t cap)
{
    wire_writer w = {out, 0, cap};
    wire_put(&w, m->hash, 32);
    wire_u64(&w, m->offset);
    return wire_length(&w);
}

size_t proto_file_head(const msg_file *m, uint8_t *out, size_t cap)
{
    wire_writer w = {out, 0, cap};
    wire_put(&w, m->hash, 32);
    wire_u64(&w, m->offset);
    wire_u64(&w, m->total);
    return wire_length(&w);
}

size_t proto_work_encode(const msg_work *m, uint8_t *out, size_t cap)
{
    wire_writer w = {out, 0, cap};
    wire_u64(&w, m->seq);
    wire_u32(&w, m->epoch);
    wire_u32(&w, m->batch);
    wire_u32(&w, m->chunk);
    wire_u32(&w, m->size);
    wire_u32(&w, m->alone);
    return wire_length(&w);
}

size_t proto_recall_encode(const msg_recall *m, uint8_t *out, size_t cap)
{
    wire_writer w = {out, 0, cap};
    wire_u64(&w, m->seq);
    wire_u32(&w, m->chunk);
    wire_u32(&w, m->given);
    return wire_length(&w);
}

size_t proto_round_encode(const msg_round *m, uint8_t *out, size_t cap)
{
    wire_writer w = {out, 0, cap};
    wire_u64(&w, m->seq);
    wire_u32(&w, m->epoch);
    wire_u32(&w, m->first_batch);
    wire_u32(&w, m->batches);
    wire_u32(&w, m->chunk0);
    wire_u32(&w, m->chunk1);
    wire_u32(&w, m->chunk0_after);
    wire_u32(&w, m->chunk1_until);
    return wire_length(&w);
}

size_t proto_result_head(const msg_result *m, uint8_t *out, size_t cap)
{
    wire_writer w = {out, 0, cap};
    wire_u64(&w, m->seq);
    wire_u32(&w, m->chunk);
    wire_u32(&w, m->correct);
    wire_u32(&w, m->samples);
    wire_u32(&w, m->estimated);
    wire_u32(&w, m->workers);
    wire_f64(&w, m->loss);
    wire_f64(&w, m->compute_s);
    wire_f64(&w, m->joules);
    wire_f64(&w, m->watts);
    wire_f64(&w, m->carbon_g_per_kwh);
    wire_f64(&w, m->renewable_w);
    wire_f64(&w, m->grams);
    return wire_length(&w);
}

size_t proto_delta_head(const msg_delta *m, uint8_t *out, size_t cap)
{
    wire_writer w = {out, 0, cap};
    wire_u64(&w, m->seq);
    wire_u64(&w, m->base);
    return wire_length(&w);
}

size_t proto_layer_head(const msg_layer *m, uint8_t *out, size_t cap)
{
    wire_writer w = {out, 0, cap};
    wire_u64(&w, m->seq);
    wire_u32(&w, m->chunk);
    wire_u32(&w, m->layer);
    wire_u32(&w, m->chunks);
    return wire_length(&w);
}

/* ---- decoders ---- */

static int bad(char *why, size_t whylen, const char *what)
{
    snprintf(why, whylen, "%s", what);
    return -1;
}

static int done(const wire_reader *r, char *why, size_t whylen, const char *msg)
{
    if (r->bad)
        return snprintf(why, whylen, "a %s message cut short", msg), -1;
    if (r->at != r->len)
        return snprintf(why, whylen, "a %s message with %zu bytes too many", msg, r->len - r->at), -1;
    return 0;
}

/* Printable text (tabs and newlines allowed when multiline), no NUL. */
static int printable(const uint8_t *s, size_t n, int multiline)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x20 ? !(multiline && (s[i] == '\n' || s[i] == '\t' || s[i] == '\r'))
                        : s[i] == 0x7f)
            return 0;
    return 1;
}

/* Lines of printable text, '\n' between them: no other control character. */
static int printable_lines(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((s[i] < 0x20 && s[i] != '\n' && s[i] != '\t') || s[i] == 0x7f)
            return 0;
    return 1;
}

/* n bytes as a NUL-ended string (malloc'd), or NULL. */
static char *copy_text(const uint8_t *s, size_t n)
{
    char *t = malloc(n + 1);
    if (t) {
        memcpy(t, s, n);
        t[n] = 0;
    }
    return t;
}

/* A fixed field of n bytes holding a NUL-terminated printable string. */
static int fixed_text(wire_reader *r, char *out, size_t n)
{
    const uint8_t *b = wire_take(r, n);
    if (!b)
        return 0;
    size_t len = strnlen((const char *)b, n);
    if (len == n || !printable(b, len, 0))
        return -1;
    memcpy(out, b, len + 1);
    return 0;
}

int proto_join_decode(msg_join *m, const uint8_t *p, size_t len, char *why, size_t whylen)
{
    wire_reader r = {p, len, 0, 0};
    memset(m, 0, sizeof *m);
    m->version = wire_get_u32(&r);
    if (len >= 4 && m->version != PROTO_VERSION)   /* the rest may be laid out otherwise */
        return snprintf(why, whylen, "a node speaking version %u (this frugal speaks %d)",
                        m->version, PROTO_VERSION), -1;
    m->workers = wire_get_u32(&r);
    m->isa = wire_get_u32(&r);
    if (fixed_text(&r, m->host, sizeof m->host) || fixed_text(&r, m->energy, sizeof m->energy))
        return bad(why, whylen, "a JOIN message with a malformed name");
    m->has_identity = wire_get_u32(&r);
    const uint8_t *id = wire_take(&r, sizeof m->identity), *sig = wire_take(&r, sizeof m->signature);
    if (id && sig)
        memcpy(m->identity, id, sizeof m->identity), memcpy(m->signature, sig, sizeof m->signature);
    if (done(&r, why, whylen, "JOIN"))
        return -1;
    if (m->workers < 1 || m->workers > 4096 || m->isa > 16 || m->has_identity > 1)
        return bad(why, whylen, "a JOIN message with impossible workers, kernel path or identity flag");
    return 0;
}

int proto_job_config(const msg_job *job, const char *const *mine, job_config *cfg, char *err,
                     size_t errlen)
{
    const char *overrides[PROTO_MAX_OVERRIDES + 4];
    char *lines = malloc(job->overrides_len + 1);
    if (!lines) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(lines, job->overrides, job->overrides_len);
    lines[job->overrides_len] = 0;
    int no = 0;
    for (char *line = lines; job->overrides_len && line && no < PROTO_MAX_OVERRIDES; no++) {
        overrides[no] = line;
        if ((line = strchr(line, '\n')))
            *line++ = 0;
    }
    for (int i = 0; mine && mine[i] && i < 3; i++)
        overrides[no++] = mine[i];
    overrides[no] = NULL;
    int rc = config_parse(cfg, "the coordinator's job", job->text, job->text_len, overrides, err,
                          errlen);
    free(lines);
    return rc;
}

int proto_job_decode(msg_job *m, const uint8_t *p, size_t len, char *why, size_t whylen)
{
    wire_reader r = {p, len, 0, 0};
    memset(m, 0, sizeof *m);
    m->isa = wire_get_u32(&r);
    m->nfiles = wire_get_u32(&r);
    if (m->nfiles > PROTO_MAX_FILES)
        return snprintf(why, whylen, "a JOB message naming %u files", m->nfiles), -1;
    for (uint32_t i = 0; i < m->nfiles && !r.bad; i++) {
        proto_file *f = &m->files[i];
        uint32_t n = wire_get_u32(&r);
        const uint8_t *name = n < sizeof f->name ? wire_take(&r, n) : NULL;
        if (!name || !n || !printable(name, n, 0))
            return bad(why, whylen, "a JOB message with a malformed file name");
        memcpy(f->name, name, n);
        f->size = wire_get_u64(&r);
        const uint8_t *h = wire_take(&r, 32);
        if (h)
            memcpy(f->hash, h, 32);
    }
    uint32_t n = wire_get_u32(&r);
    const uint8_t *text = n <= CONFIG_MAX_BYTES ? wire_take(&r, n) : NULL;
    if (!text || !printable(text, n, 1))
        return bad(why, whylen, "a JOB message whose job text is malformed");
    uint32_t no = wire_get_u32(&r), lines = 1;
    const uint8_t *over = no <= PROTO_OVERRIDES_BYTES ? wire_take(&r, no) : NULL;
    for (uint32_t i = 0; over && i < no; i++)
        lines += over[i] == '\n';
    if (!over || (no && !printable_lines(over, no)) || lines > PROTO_MAX_OVERRIDES)
        return bad(why, whylen, "a JOB message whose overrides are malformed");
    if (done(&r, why, whylen, "JOB"))
        return -1;
    if (m->isa != PROTO_ANY_ISA && m->isa > 16)
        return bad(why, whylen, "a JOB message with an impossible kernel path");
    if (!(m->text = copy_text(text, n)) || !(m->overrides = copy_text(over, no))) {
        proto_job_free(m);
        return bad(why, whylen, "out of memory for the job");
    }
    m->text_len = n, m->overrides_len = no;
    return 0;
}

void proto_job_free(msg_job *m)
{
    free(m->text);
    free(m->overrides);
    m->text = m->overrides = NULL;
}

int proto_fetch_decode(msg_fetch *m, const uint8_t *p, size_t len, char *why, size_t whylen)
{
    wire_reader r = {p, len, 0, 0};
    const uint8_t *h = wire_take(&r, 32);
    if (h)
        memcpy(m->hash, h, 32);
    m->offset = wire_get_u64(&r);
    return done(&r, why, whylen, "FETCH");
}

int proto_file_decode(msg_file *m, const uint8_t *p, size_t len, char *why, size_t whylen)
{
    wire_reader r = {p, len, 0, 0};
    const uint8_t *h = wire_take(&r, 32);
    if (h)
        memcpy(m->hash, h, 32);
    m->offset = wire_get_u64(&r);
    m->total = wire_get_u64(&r);
    if (r.bad)
        return bad(why, whylen, "a FILE message cut short");
    m->bytes = p + r.at;
    m->len = len - r.at;
    if (m->offset > m->total || m->len > m->total - m->offset || m->len > PROTO_FILE_PIECE)
        return bad(why, whylen, "a FILE message whose part lies outside its file");
    return 0;
}

int proto_work_decode(msg_work *m, const uint8_t *p, size_t len, char *why, size_t whylen)
{
    wire_reader r = {p, len, 0, 0};
    m->seq = wire_get_u64(&r);
    m->epoch = wire_get_u32(&r);
    m->batch = wire_get_u32(&r);
    m->chunk = wire_get_u32(&r);
    m->size = wire_get_u32(&r);
    m->alone = wire_get_u32(&r);
    if (done(&r, why, whylen, "WORK"))
        return -1;
    return m->alone > 1 ? bad(why, whylen, "a WORK whose gradients neither go alone nor not") : 0;
}

int proto_recall_decode(unsigned type, msg_recall *m, const uint8_t *p, size_t len, char *why,
                        size_t whylen)
{
    wire_reader r = {p, len, 0, 0};
    m->seq = wire_get_u64(&r);
    m->chunk = wire_get_u32(&r);
    m->given = wire_get_u32(&r);
    if (done(&r, why, whylen, proto_msg_name(type)))
        return -1;
    if (m->given > (type == MSG_RECALLED))
        return bad(why, whylen, type == MSG_RECALL ? "a RECALL message with an answer"
                                                   : "a RECALLED message neither yes nor no");
    return 0;
}

int proto_params_decode(uint64_t *seq, const float **values, const uint8_t *p, size_t len,
                        long nparams, char *why, size_t whylen)
{
    if (len != PROTO_PARAMS_HEAD + 4 * (size_t)nparams)
        return snprintf(why, whylen, "a PARAMS message of %zu bytes for %ld parameters", len,
                        nparams), -1;
    wire_reader r = {p, len, 0, 0};
    *seq = wire_get_u64(&r);
    *values = (const float *)(p + PROTO_PARAMS_HEAD);
    return 0;
}

int proto_round_decode(msg_round *m, const uint8_t *p, size_t len, char *why, size_t whylen)
{
    wire_reader r = {p, len, 0, 0};
    m->seq = wire_get_u64(&r);
    m->epoch = wire_get_u32(&r);
    m->first_batch = wire_get_u32(&r);
    m->batches = wire_get_u32(&r);
    m->chunk0 = wire_get_u32(&r);
    m->chunk1 = wire_get_u32(&r);
    m->chunk0_after = wire_get_u32(&r);
    m->chunk1_until = wire_get_u32(&r);
    if (done(&r, why, whylen, "ROUND"))
        return -1;
    uint64_t units = (uint64_t)(m->chunk1 - m->chunk0) * m->batches + m->chunk1_until;
    if (m->epoch < 1 || m->batches < 1 || m->chunk0 > m->chunk1 || m->chunk0_after >= m->batches ||
        m->chunk1_until >= m->batches || units <= m->chunk0_after)
        return bad(why, whylen, "a ROUND message with no batch or no chunk, or a chunk shared "
                                "in more batches than it has");
    return 0;
}

/* RESULT and MODEL: the same figures, then `body` bytes (a MODEL's parameters). */
/* Every figure a node sends is finite and within what a machine could measure: sums and
 * averages of them stay finite (summary.json writes no inf), counts fit their chunks. */
static int figures_decode(msg_result *m, const uint8_t *p, size_t len, size_t body,
                          uint32_t max_samples, const char *name, char *why, size_t whylen)
{
    if (len != RESULT_HEAD + body)
        return snprintf(why, whylen, "a %s message of %zu bytes where %zu were due", name, len,
                        RESULT_HEAD + body), -1;
    wire_reader r = {p, len, 0, 0};
    m->seq = wire_get_u64(&r);
    m->chunk = wire_get_u32(&r);
    m->correct = wire_get_u32(&r);
    m->samples = wire_get_u32(&r);
    m->estimated = wire_get_u32(&r);
    m->workers = wire_get_u32(&r);
    m->loss = wire_get_f64(&r);
    m->compute_s = wire_get_f64(&r);
    m->joules = wire_get_f64(&r);
    m->watts = wire_get_f64(&r);
    m->carbon_g_per_kwh = wire_get_f64(&r);
    m->renewable_w = wire_get_f64(&r);
    m->grams = wire_get_f64(&r);
    m->body = p + RESULT_HEAD;
    m->grads = (const float *)m->body;
    m->nparams = body / 4;
    if (m->samples > max_samples || m->correct > m->samples)
        return snprintf(why, whylen, "a %s message counting %u samples (%u correct), where at "
                        "most %u were possible", name, m->samples, m->correct, max_samples), -1;
    if (m->estimated > 1 || m->workers < 1 || m->workers > CONFIG_MAX_WORKERS ||
        !(m->loss >= 0 && m->loss <= PROTO_MAX_LOSS) ||
        !(m->compute_s >= 0 && m->compute_s <= PROTO_MAX_SECONDS) ||
        !(m->joules >= 0 && m->joules <= PROTO_MAX_JOULES) || !(m->watts >= 0 && m->watts < 1e7) ||
        !(m->carbon_g_per_kwh >= 0 && m->carbon_g_per_kwh <= 5000) ||
        !(m->renewable_w >= 0 && m->renewable_w <= 1e9) ||
        !(m->grams >= 0 && m->grams <= PROTO_MAX_JOULES))
        return snprintf(why, whylen, "a %s message with impossible figures (loss %g, %g s, %g J, "
                        "%g W, %u workers)", name, m->loss, m->compute_s, m->joules, m->watts,
                        m->workers), -1;
    return 0;
}

int proto_result_decode(msg_result *m, const uint8_t *p, size_t len, uint32_t max_samples,
                        char *why, size_t whylen)
{
    return figures_decode(m, p, len, 0, max_samples, "RESULT", why, whylen);
}

int proto_figures_decode(msg_result *m, const uint8_t *p, size_t len, char *why, size_t whylen)
{
    return figures_decode(m, p, len, 0, 0, "FIGURES", why, whylen);
}

int proto_layer_decode(unsigned type, msg_layer *m, const uint8_t *p, size_t len,
                       const long *layer_params, int nlayers, char *why, size_t whylen)
{
    const char *name = proto_msg_name(type);
    wire_reader r = {p, len, 0, 0};
    m->seq = wire_get_u64(&r);
    m->chunk = wire_get_u32(&r);
    m->layer = wire_get_u32(&r);
    m->chunks = wire_get_u32(&r);
    if (r.bad)
        return snprintf(why, whylen, "a %s message of %zu bytes (shorter than its head)", name, len), -1;
    if (type == MSG_LAYER && (m->chunk || m->chunks != 1))
        return snprintf(why, whylen, "a LAYER message for chunks %u to %u (parameters are no "
                        "chunk's)", m->chunk, m->chunk + m->chunks), -1;
    if (!m->chunks || m->chunks > PROTO_MAX_CHUNKS || m->chunk >= PROTO_MAX_CHUNKS)
        return snprintf(why, whylen, "a GRAD message for %u chunks from chunk %u", m->chunks,
                        m->chunk), -1;
    if (m->layer >= (uint32_t)nlayers || !layer_params[m->layer])
        return snprintf(why, whylen, "a %s message for layer %u, which has no parameters", name,
                        m->layer), -1;
    m->n = (size_t)layer_params[m->layer];
    if (len != PROTO_LAYER_HEAD + 4 * m->n)
        return snprintf(why, whylen, "a %s message of %zu bytes for the %zu parameters of layer %u",
                        name, len, m->n, m->layer), -1;
    m->values = (const float *)(p + PROTO_LAYER_HEAD);
    for (size_t i = 0; type == MSG_GRAD && i < m->n; i++) {   /* maybe unaligned: bytes */
        uint32_t bits;
        memcpy(&bits, p + PROTO_LAYER_HEAD + 4 * i, 4);
        if ((bits & 0x7f800000u) == 0x7f800000u)   /* every exponent bit: inf or nan */
            return snprintf(why, whylen, "a GRAD message with a non-finite value (layer %u, "
                            "parameter %zu)", m->layer, i), -1;
    }
    return 0;
}

int proto_model_decode(msg_result *m, const uint8_t *p, size_t len, size_t body,
                       uint32_t max_samples, char *why, size_t whylen)
{
    return figures_decode(m, p, len, body, max_samples, "MODEL", why, whylen);
}

int proto_delta_decode(msg_delta *m, const uint8_t *p, size_t len, size_t body, char *why,
                       size_t whylen)
{
    wire_reader r = {p, len, 0, 0};
    m->seq = wire_get_u64(&r);
    m->base = wire_get_u64(&r);
    if (len != PROTO_DELTA_HEAD + body)
        return snprintf(why, whylen, "a DELTA message of %zu bytes where %zu were due", len,
                        PROTO_DELTA_HEAD + body), -1;
    if (m->base >= m->seq)
        return bad(why, whylen, "a DELTA message from parameters no older than its own");
    m->body = p + PROTO_DELTA_HEAD;
    return 0;
}

int proto_average_decode(uint64_t *seq, const uint8_t **values, const uint8_t *p, size_t len,
                         size_t body, char *why, size_t whylen)
{
    if (len != PROTO_PARAMS_HEAD + body)
        return snprintf(why, whylen, "an AVERAGE message of %zu bytes where %zu were due", len,
                        PROTO_PARAMS_HEAD + body), -1;
    wire_reader r = {p, len, 0, 0};
    *seq = wire_get_u64(&r);
    if (*seq == 0)
        return bad(why, whylen, "an AVERAGE message of round 0, before any round");
    *values = p + PROTO_PARAMS_HEAD;
    return 0;
}

int proto_ready_decode(msg_ready *m, const uint8_t *p, size_t len, char *why, size_t whylen)
{
    wire_reader r = {p, len, 0, 0};
    memset(m, 0, sizeof *m);
    uint64_t n = wire_get_u64(&r);
    if (fixed_text(&r, m->devices, sizeof m->devices))
        return bad(why, whylen, "a READY message with malformed devices");
    if (done(&r, why, whylen, "READY"))
        return -1;
    if (n == 0 || n > (uint64_t)PROTO_MAX_PARAMS)
        return bad(why, whylen, "a READY message with an impossible parameter count");
    m->nparams = (long)n;
    return 0;
}

int proto_text_decode(char *out, size_t outlen, const uint8_t *p, size_t len, char *why,
                      size_t whylen)
{
    if (len >= outlen || !printable(p, len, 0))
        return bad(why, whylen, "a malformed text message");
    memcpy(out, p, len);
    out[len] = 0;
    return 0;
}
