#include "engine/cluster/chunk_engine.h"

#include "engine/cluster/model_delta.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int chunk_engine_open(chunk_engine *e, const job_config *cfg, const dataset *train,
                      const rt_config *rc, char *err, size_t errlen)
{
    memset(e, 0, sizeof *e);
    e->cfg = cfg;
    e->seq = e->loading = e->start_seq = UINT64_MAX;
    if (model_build(&e->m, cfg->path, cfg->layers, cfg->nlayers, train->c, train->h, train->w, train->classes, 1, err, errlen))
        return -1;
    e->have_model = 1;
    e->nlayers = e->m.nlayers;
    for (int l = 0; l < e->nlayers; l++) {
        e->layer_params[l] = e->m.layers[l].nparams;
        e->param_layers += e->layer_params[l] > 0;
        e->largest = e->layer_params[l] > e->largest ? e->layer_params[l] : e->largest;
    }
    model_init(&e->m, cfg->seed);
    rt_config cpu_only = {.workers = cfg->workers, .slowdown = cfg->slowdown};
    if (!(e->rt = rt_create(rc ? rc : &cpu_only))) {
        snprintf(err, errlen, "cannot start the runtime's %d workers", cfg->workers);
        return -1;
    }
    if (!(e->t = trainer_create(cfg, &e->m, e->rt, train, NULL, err, errlen)))
        return -1;
    e->delta_len = model_delta_bytes(e->layer_params, e->nlayers);
    size_t bytes = sizeof(float) * (size_t)e->m.nparams;
    int averaging = cfg->sync_every > 0, late = averaging && cfg->overlap;
    if (!(e->grads = malloc(bytes)) ||
        (averaging && cfg->compress && !late && !(e->round_start = malloc(bytes))) ||
        (averaging && cfg->compress && !(e->delta = malloc(e->delta_len))) ||
        (late && (!(e->late = malloc(sizeof *e->late)) || late_open(e->late, e->m.nparams) ||
                  !(e->mean = malloc(bytes))))) {
        snprintf(err, errlen, "out of memory for a gradient of %ld parameters", e->m.nparams);
        return -1;
    }
    return 0;
}

void chunk_engine_close(chunk_engine *e)
{
    trainer_destroy(e->t);
    rt_destroy(e->rt);
    if (e->have_model)
        model_free(&e->m);
    free(e->grads);
    free(e->round_start);
    free(e->delta);
    if (e->late)
        late_close(e->late);
    free(e->late);
    free(e->mean);
    memset(e, 0, sizeof *e);
}

long chunk_engine_nparams(const chunk_engine *e) { return e->m.nparams; }

int chunk_engine_params(chunk_engine *e, uint64_t seq, const void *packed, char *err,
                        size_t errlen)
{
    if (trainer_set_params(e->t, packed, err, errlen))
        return -1;
    e->seq = seq, e->loading = UINT64_MAX;
    if (e->round_start)
        memcpy(e->round_start, packed, sizeof(float) * (size_t)e->m.nparams), e->start_seq = seq;
    if (e->late)
        late_reset(e->late, packed, seq);
    return 0;
}

int chunk_engine_delta(chunk_engine *e, uint64_t seq, uint64_t base, const uint8_t *delta,
                       char *err, size_t errlen)
{
    if (!e->round_start || base != e->start_seq) {
        snprintf(err, errlen, "a DELTA from round %llu's parameters, which it does not hold",
                 (unsigned long long)base);
        return -1;
    }
    if (model_delta_apply(e->round_start, delta, e->layer_params, e->nlayers, e->round_start)) {
        snprintf(err, errlen, "a DELTA with a negative or infinite scale");
        return -1;
    }
    if (trainer_set_params(e->t, e->round_start, err, errlen))
        return -1;
    e->seq = e->start_seq = seq, e->loading = UINT64_MAX;
    return 0;
}

int chunk_engine_layer(chunk_engine *e, uint64_t seq, int layer, const void *values, char *err,
                       size_t errlen)
{
    if (seq != e->loading) {
        e->loading = seq, e->layers_in = 0;
        memset(e->layer_in, 0, sizeof e->layer_in);
    }
    if (trainer_set_layer_params(e->t, layer, values, err, errlen))
        return -1;
    if (!e->layer_in[layer])
        e->layer_in[layer] = 1, e->layers_in++;
    if (e->layers_in == e->param_layers)
        e->seq = seq;
    else if (e->seq != seq)
        e->seq = UINT64_MAX;   /* partly the batch before's: no chunk can run */
    return 0;
}

int chunk_engine_run(chunk_engine *e, const msg_work *w, _Atomic int *const *claims, int n,
                     char *err, size_t errlen)
{
    rt_stats st;
    rt_stats_reset(e->rt);
    node_chunk c[MAX_GROUP];
    if (n > MAX_GROUP) {
        snprintf(err, errlen, "%d chunks computed at once (at most %d)", n, MAX_GROUP);
        return -1;
    }
    for (int i = 0; i < n; i++)
        c[i] = (node_chunk){(int)w[i].epoch, w[i].batch, (int)w[i].chunk, (int)w[i].size,
                            claims ? claims[i] : NULL, (int)w[i].alone};
    if (trainer_node_chunks(e->t, c, n, err, errlen))
        return -1;
    if (rt_wait_all(e->rt)) {
        snprintf(err, errlen, "%s", rt_error(e->rt));
        return -1;
    }
    int ran = 0;   /* the chunks taken back cost nothing */
    for (int i = 0; i < n; i++)
        ran += !claims || atomic_load(claims[i]) != RT_CLAIM_ELSEWHERE;
    rt_stats_get(e->rt, &st);
    e->busy_per_chunk = ran ? st.busy_s / ran : 0;
    return 0;
}

void chunk_engine_stream(chunk_engine *e, const trainer_gradient_sink *s)
{
    trainer_stream_gradients(e->t, s);
    e->streams = 1;
}

void chunk_engine_result(chunk_engine *e, const msg_work *w, msg_result *r)
{
    double loss;
    int correct, samples;
    float *grads = e->streams ? NULL : e->grads;
    trainer_node_result(e->t, (int)w->chunk, &loss, &correct, &samples, grads);
    *r = (msg_result){.seq = w->seq, .chunk = w->chunk, .correct = (uint32_t)correct,
                      .samples = (uint32_t)samples, .loss = loss,
                      .compute_s = e->busy_per_chunk, .grads = grads,
                      .nparams = grads ? (size_t)e->m.nparams : 0};
}

int chunk_engine_round(chunk_engine *e, const msg_round *w, msg_result *r, char *err,
                       size_t errlen)
{
    pass_result pr;
    rt_stats st;
    rt_stats_reset(e->rt);
    round_share s = {(int)w->chunk0, (int)w->chunk1, w->chunk0_after, w->chunk1_until};
    if (e->late && (trainer_get_params(e->t, e->grads, err, errlen) ||
                    late_round_begin(e->late, e->grads, w->seq, err, errlen)))
        return -1;
    if (trainer_train_share(e->t, (int)w->epoch, w->first_batch, w->batches, &s, &pr, err, errlen) ||
        trainer_get_params(e->t, e->grads, err, errlen))
        return -1;
    rt_stats_get(e->rt, &st);
    *r = (msg_result){.seq = w->seq, .chunk = w->chunk0, .correct = (uint32_t)pr.correct,
                      .samples = (uint32_t)pr.samples, .loss = pr.loss, .compute_s = st.busy_s,
                      .body = (const uint8_t *)e->grads, .grads = e->grads,
                      .nparams = (size_t)e->m.nparams};
    const float *start = e->late ? e->late->start : e->round_start;
    if (e->delta) {
        model_delta_encode(start, e->grads, e->layer_params, e->nlayers, e->delta);
        r->body = e->delta, r->grads = NULL, r->nparams = 0;
    } else if (e->late) {
        late_change(e->late, e->grads, e->grads);
    }
    return 0;
}

int chunk_engine_average(chunk_engine *e, uint64_t seq, const uint8_t *body, char *err,
                         size_t errlen)
{
    if (!e->late || e->seq == UINT64_MAX) {
        snprintf(err, errlen, "an AVERAGE %s", e->late ? "before any PARAMS"
                                                      : "while averages are not overlapped");
        return -1;
    }
    if (e->delta && model_delta_apply(NULL, body, e->layer_params, e->nlayers, e->mean)) {
        snprintf(err, errlen, "an AVERAGE with a negative or infinite scale");
        return -1;
    }
    if (!e->delta)
        memcpy(e->mean, body, sizeof(float) * (size_t)e->m.nparams);
    return trainer_get_params(e->t, e->grads, err, errlen) ||
                   late_apply(e->late, seq, e->mean, e->grads, err, errlen) ||
                   trainer_set_params(e->t, e->grads, err, errlen)
               ? -1 : 0;
}
