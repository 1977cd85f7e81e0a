#include "targets.h"

#include "common/json_parse.h"
#include "engine/model/checkpoint.h"
#include "engine/cluster/gossip_proto.h"
#include "engine/cluster/proto.h"
#include "engine/job/config.h"
#include "engine/job/dataset.h"
#include "energy/carbon.h"
#include "energy/grid_trace.h"
#include "energy/limit_state.h"
#include "engine/cli/hostlist.h"
#include "engine/cli/launch.h"
#include "engine/sim/profile.h"
#include "energy/power_model.h"
#include "engine/cluster/allow_list.h"
#include "engine/cluster/model_delta.h"
#include "engine/job/run_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

const fuzz_target fuzz_targets[] = {
    {"job_file", fuzz_job_file, "job files (config_parse)"},
    {"idx", fuzz_idx, "IDX images and labels, raw and gzip"},
    {"cifar", fuzz_cifar, "CIFAR-10 batches"},
    {"pnm", fuzz_pnm, "PGM and PPM images"},
    {"checkpoint", fuzz_checkpoint, "checkpoints as they come"},
    {"checkpoint_crc", fuzz_checkpoint_crc, "checkpoints with their CRC repaired"},
    {"run_log", fuzz_run_log, "the run log inside a checkpoint"},
    {"cluster_message", fuzz_cluster_message, "a cluster peer's opened frame and its message"},
    {"gossip_message", fuzz_gossip_message, "a gossip peer's opened frame and its message"},
    {"summary_json", fuzz_summary_json, "summary.json as frugal report reads it"},
    {"carbon_file", fuzz_carbon_file, "a carbon-intensity file as it is re-read"},
    {"grid_trace", fuzz_grid_trace, "a grid time series: carbon intensity (and forecast) or renewable watts"},
    {"limit_state", fuzz_limit_state, "the operating points' state file, read at the next start"},
    {"launch_files", fuzz_launch_files, "a launcher's host list (Slurm), node file (OAR), rank 0's address"},
    {"machine_profile", fuzz_machine_profile, "a machine profile (frugal simulate --calibrate writes them)"},
    {"node_job", fuzz_node_job, "the JOB message, parsed as a node parses the job"},
    {"power_profile", fuzz_power_profile, "a power profile (job file, frugal join)"},
    {"allow_file", fuzz_allow_file, "the coordinator's allow file of identities"},
    {"hello", fuzz_hello, "a handshake's hello and stream header, either side"},
    {"hub_stream", fuzz_hub_stream, "a peer's stream after a real handshake, cut anywhere"},
};
const int fuzz_ntargets = sizeof fuzz_targets / sizeof fuzz_targets[0];

/* The input as a file, for decoders that read files: a memfd named by its /proc path. */
typedef struct memfile { int fd; char path[64]; } memfile;

static int memfile_open(memfile *m, const uint8_t *data, size_t size)
{
    m->fd = memfd_create("fuzz", MFD_CLOEXEC);
    if (m->fd < 0)
        return -1;
    for (size_t done = 0; done < size;) {
        ssize_t w = write(m->fd, data + done, size - done);
        if (w <= 0) {
            close(m->fd);
            return -1;
        }
        done += (size_t)w;
    }
    snprintf(m->path, sizeof m->path, "/proc/self/fd/%d", m->fd);
    return 0;
}

static void memfile_close(memfile *m) { close(m->fd); }

int fuzz_job_file(const uint8_t *data, size_t size)
{
    static job_config cfg;
    char err[1024];
    static const char *const sets[] = {"layer1.filters=3", "execution.grain=auto", NULL};
    config_parse(&cfg, "fuzz.cfg", (const char *)data, size, size & 1 ? sets : NULL, err, sizeof err);
    return 0;
}

int fuzz_idx(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    /* first byte: gzip or raw, images or labels-and-images; the rest is the file */
    int gz = data[0] & 1, labelled = data[0] & 2;
    data++, size--;
    uint8_t *packed = NULL;
    uLongf plen = compressBound(size) + 32;
    if (gz) {   /* a real gzip stream of the input, then bit flips from the fuzzer reach zlib */
        packed = malloc(plen);
        gzFile g = NULL;
        memfile tmp;
        if (!packed || memfile_open(&tmp, NULL, 0)) {
            free(packed);
            return 0;
        }
        g = gzdopen(dup(tmp.fd), "wb");
        gzwrite(g, data, (unsigned)size);
        gzclose(g);
        plen = (uLongf)lseek(tmp.fd, 0, SEEK_END);
        lseek(tmp.fd, 0, SEEK_SET);
        if (read(tmp.fd, packed, plen) != (ssize_t)plen)
            plen = 0;
        memfile_close(&tmp);
        data = packed, size = plen;
    }
    memfile img, lbl;
    if (memfile_open(&img, data, size) == 0) {
        static const uint8_t labels[] = {0, 0, 8, 1, 0, 0, 0, 3, 1, 2, 3};
        int have_lbl = labelled && memfile_open(&lbl, labels, sizeof labels) == 0;
        dataset d;
        char err[1024];
        if (dataset_load_idx(&d, img.path, have_lbl ? lbl.path : NULL, size & 4 ? 2 : 0, err,
                             sizeof err) == 0)
            dataset_free(&d);
        if (have_lbl)
            memfile_close(&lbl);
        memfile_close(&img);
    }
    free(packed);
    return 0;
}

int fuzz_cifar(const uint8_t *data, size_t size)
{
    memfile f;
    if (memfile_open(&f, data, size))
        return 0;
    dataset d;
    char err[1024];
    if (dataset_load_cifar10(&d, f.path, size & 1 ? 3 : 0, err, sizeof err) == 0 &&
        dataset_reshape(&d, 7, 5, 3, err, sizeof err) == 0)
        dataset_free(&d);
    else
        dataset_free(&d);
    memfile_close(&f);
    return 0;
}

int fuzz_pnm(const uint8_t *data, size_t size)
{
    memfile f;
    if (memfile_open(&f, data, size))
        return 0;
    const char *paths[] = {f.path};
    dataset d;
    char err[1024];
    if (dataset_load_pnm(&d, paths, 1, size & 1 ? 3 : 1, 6, 4, 10, err, sizeof err) == 0)
        dataset_free(&d);
    memfile_close(&f);
    return 0;
}

static void decode_checkpoint(const uint8_t *data, size_t size)
{
    model m;
    checkpoint_state st;
    char err[1024];
    if (checkpoint_decode(data, size, "fuzz.bin", &m, 1, &st, err, sizeof err) == 0) {
        run_log log;
        if (run_log_decode(&log, st.log, st.log_len, err, sizeof err) == 0)
            run_log_free(&log);
        free(st.log);
        model_free(&m);
    }
}

int fuzz_checkpoint(const uint8_t *data, size_t size)
{
    decode_checkpoint(data, size);
    return 0;
}

int fuzz_checkpoint_crc(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    uint8_t *copy = malloc(size);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    uLong crc = crc32(crc32(0, NULL, 0), copy, (uInt)(size - 4));
    uint32_t c32 = (uint32_t)crc;
    memcpy(copy + size - 4, &c32, 4);
    decode_checkpoint(copy, size);
    free(copy);
    return 0;
}

int fuzz_run_log(const uint8_t *data, size_t size)
{
    run_log log;
    char err[1024];
    if (run_log_decode(&log, (const char *)data, size, err, sizeof err) == 0) {
        size_t len;
        free(run_log_encode(&log, &len));
        for (int i = 0; i < log.nepochs; i++)   /* what a resumed run reads of each row */
            run_log_figures(&log.epochs[i]);
        run_log_free(&log);
    }
    return 0;
}

/* What a peer's frame holds once its encryption is opened: the frame check, then the message's
 * decoder, as a coordinator (first byte odd) or a node receives them. */
int fuzz_cluster_message(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    enum { NPARAMS = 16 };
    static const long layer_params[3] = {10, 0, 6};   /* NPARAMS over a model's layers */
    int coordinator = data[0] & 1;
    frame_limits l;
    proto_limits(&l, coordinator, NPARAMS, 10);
    uint16_t type;
    const uint8_t *p;
    size_t n;
    char why[256];
    if (frame_check(data + 1, size - 1, &l, &type, &p, &n, why, sizeof why))
        return 0;
    union {
        msg_join join;
        msg_job job;
        msg_fetch fetch;
        msg_file file;
        msg_work work;
        msg_recall recall;
        msg_round round;
        msg_result result;
        msg_layer layer;
        msg_delta delta;
        msg_ready ready;
        char text[PROTO_TEXT + 1];
    } m;
    static float rebuilt[NPARAMS];
    uint64_t seq;
    const float *values;
    switch (type) {
    case MSG_JOIN: proto_join_decode(&m.join, p, n, why, sizeof why); break;
    case MSG_JOB:
        if (proto_job_decode(&m.job, p, n, why, sizeof why) == 0)
            proto_job_free(&m.job);
        break;
    case MSG_FETCH: proto_fetch_decode(&m.fetch, p, n, why, sizeof why); break;
    case MSG_FILE: proto_file_decode(&m.file, p, n, why, sizeof why); break;
    case MSG_READY: proto_ready_decode(&m.ready, p, n, why, sizeof why); break;
    case MSG_PARAMS: proto_params_decode(&seq, &values, p, n, NPARAMS, why, sizeof why); break;
    case MSG_WORK: proto_work_decode(&m.work, p, n, why, sizeof why); break;
    case MSG_RECALL:
    case MSG_RECALLED: proto_recall_decode(type, &m.recall, p, n, why, sizeof why); break;
    case MSG_RESULT: proto_result_decode(&m.result, p, n, 64, why, sizeof why); break;
    case MSG_FIGURES: proto_figures_decode(&m.result, p, n, why, sizeof why); break;
    case MSG_GRAD:
    case MSG_LAYER: proto_layer_decode(type, &m.layer, p, n, layer_params, 3, why, sizeof why); break;
    case MSG_DONE: proto_text_decode(m.text, sizeof m.text, p, n, why, sizeof why); break;
    case MSG_ROUND: proto_round_decode(&m.round, p, n, why, sizeof why); break;
    case MSG_MODEL:   /* its parameters as floats, and as a delta (compress = on) rebuilt */
        proto_model_decode(&m.result, p, n, 4 * NPARAMS, 1 << 20, why, sizeof why);
        if (proto_model_decode(&m.result, p, n, model_delta_bytes(layer_params, 3), 1 << 20, why,
                               sizeof why) == 0)
            model_delta_apply(rebuilt, m.result.body, layer_params, 3, rebuilt);
        break;
    case MSG_DELTA:
        if (proto_delta_decode(&m.delta, p, n, model_delta_bytes(layer_params, 3), why, sizeof why) == 0)
            model_delta_apply(rebuilt, m.delta.body, layer_params, 3, rebuilt);
        break;
    case MSG_AVERAGE: {   /* a mean change as floats, and as a delta from zeros rebuilt */
        const uint8_t *body;
        proto_average_decode(&seq, &body, p, n, 4 * NPARAMS, why, sizeof why);
        if (proto_average_decode(&seq, &body, p, n, model_delta_bytes(layer_params, 3), why, sizeof why) == 0)
            model_delta_apply(NULL, body, layer_params, 3, rebuilt);
        break;
    }
    default: break;
    }
    return 0;
}

/* The JSON reader, and the lookups the report makes in what it returns. */
static void walk(const json_value *v, int depth)
{
    for (int i = 0; v && i < v->n && depth < JSON_MAX_DEPTH + 1; i++)
        walk(&v->items[i], depth + 1);
}

int fuzz_summary_json(const uint8_t *data, size_t size)
{
    char err[256];
    json_value *v = json_parse((const char *)data, size, err, sizeof err);
    walk(v, 0);
    json_num(json_get(v, "energy.idle_baseline_watts"), 0);
    json_str(json_get(v, "energy.source"), "");
    json_member(json_get(v, "epochs"), "x.y");
    json_free(v);
    return 0;
}

/* Read at start, and again after its re-read interval. */
int fuzz_carbon_file(const uint8_t *data, size_t size)
{
    memfile m;
    if (memfile_open(&m, data, size))
        return 0;
    carbon_source cs;
    char why[600];
    carbon_init(&cs, 100, m.path);
    carbon_update(&cs, 0, 0, why, sizeof why);
    carbon_update(&cs, 2 * CARBON_REREAD_S, 1000, why, sizeof why);
    carbon_grams(&cs, 2000);
    memfile_close(&m);
    return 0;
}

int fuzz_grid_trace(const uint8_t *data, size_t size)
{
    memfile m;
    if (memfile_open(&m, data, size))
        return 0;
    grid_trace tr;
    char why[600];
    if (grid_trace_load(&tr, m.path, size && data[0] & 1 ? GRID_RENEWABLE_WATTS : GRID_CARBON, why, sizeof why) == 0) {
        grid_trace_at(&tr, tr.t[0] - 1);
        grid_trace_at(&tr, tr.t[tr.n / 2]);
        grid_trace_mean_ahead(&tr, tr.t[0] - 1, tr.t[tr.n - 1] + 1);
        grid_trace_next_at_most(&tr, tr.t[0], grid_trace_ahead(&tr, tr.t[tr.n - 1]), tr.t[tr.n - 1]);
        grid_trace_free(&tr);
    }
    memfile_close(&m);
    return 0;
}

int fuzz_limit_state(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    limit_saved saved[4];
    long pid;
    unsigned long long start;
    int skipped, n = limit_state_parse(text, &pid, &start, saved, 4, &skipped);
    for (int i = 0; i < n; i++)   /* what parse keeps is a limit's file, whole */
        if (!power_limit_path_valid(saved[i].kind, saved[i].path) || !(saved[i].value > 0))
            abort();
    free(text);
    return 0;
}

/* The first byte picks the decoder: a Slurm host list, an OAR node file, rank 0's address. */
int fuzz_launch_files(const uint8_t *data, size_t size)
{
    if (!size)
        return 0;
    char *text = malloc(size), err[300], addr[300];
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    hostlist h;
    int rc = data[0] % 3 == 0   ? hostlist_expand(&h, text, err, sizeof err)
             : data[0] % 3 == 1 ? hostlist_parse_lines(&h, (char *)data + 1, size - 1, err, sizeof err)
                                : launch_address_parse((char *)data + 1, size - 1, addr, sizeof addr,
                                                       err, sizeof err);
    if (data[0] % 3 == 2 && !rc && !strchr(addr, ':'))
        abort();
    for (int i = 0; data[0] % 3 != 2 && !rc && i < h.n; i++)   /* names a host may have, each once */
        if (!hostlist_name_valid(h.name[i]) || h.count[i] < 1 || hostlist_find(&h, h.name[i]) != i)
            abort();
    if (data[0] % 3 != 2 && !rc)
        hostlist_free(&h);
    free(text);
    return 0;
}

int fuzz_machine_profile(const uint8_t *data, size_t size)
{
    memfile m;
    if (memfile_open(&m, data, size))
        return 0;
    sim_profile p;
    char why[600];
    if (profile_load(&p, m.path, why, sizeof why) == 0)
        for (int w = 1; w <= 8; w++)
            profile_img_per_s(&p, w, 1e5);
    memfile_close(&m);
    return 0;
}

int fuzz_node_job(const uint8_t *data, size_t size)
{
    static job_config cfg;
    msg_job job;
    char why[600];
    static const char *const mine[] = {"execution.workers=2", "execution.slowdown=1", NULL};
    if (proto_job_decode(&job, data, size, why, sizeof why))
        return 0;
    proto_job_config(&job, mine, &cfg, why, sizeof why);
    proto_job_free(&job);
    return 0;
}

/* As text: a string the length of the input. */
static char *as_text(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (s)
        memcpy(s, data, size), s[size] = 0;
    return s;
}

int fuzz_power_profile(const uint8_t *data, size_t size)
{
    char *s = as_text(data, size);
    double w[3];
    if (s && power_model_profile_parse(s, 1e5, w) == 0)
        power_model_profile_watts(w, 4, 2.5);
    free(s);
    return 0;
}

int fuzz_allow_file(const uint8_t *data, size_t size)
{
    static allow_entry entries[ALLOW_MAX];
    char why[300];
    allow_list_parse((const char *)data, size, entries, why, sizeof why);
    return 0;
}

int fuzz_gossip_message(const uint8_t *data, size_t size)
{
    enum { NPARAMS = 16 };
    frame_limits l;
    gossip_limits(&l, NPARAMS);
    uint16_t type;
    const uint8_t *p;
    size_t n;
    char why[256], text[GOSSIP_TEXT + 1];
    static gossip_hello hello;
    static gossip_members members;
    gossip_model_msg model;
    if (frame_check(data, size, &l, &type, &p, &n, why, sizeof why))
        return 0;
    switch (type) {
    case GOSSIP_MSG_HELLO:
        gossip_hello_decode(&hello, p, n, why, sizeof why);
        break;
    case GOSSIP_MSG_MEMBERS:
        gossip_members_decode(&members, p, n, why, sizeof why);
        break;
    case GOSSIP_MSG_PUSH:
    case GOSSIP_MSG_STATE:
    case GOSSIP_MSG_FINAL:
        gossip_model_decode(type, &model, p, n, NPARAMS, why, sizeof why);   /* reads every float */
        break;
    case GOSSIP_MSG_LEAVE:
        gossip_text_decode(text, sizeof text, p, n, why, sizeof why);
        break;
    }
    return 0;
}
