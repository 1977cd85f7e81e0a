#include "engine/train/plan.h"
#include "common/env_switches.h"

#include "common/json.h"
#include "common/large_alloc.h"
#include "engine/job/policy_name.h"
#include "ops/cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What a chunk costs per parameter beyond its flops, counted in parameters: writing and summing
 * its partial gradient (one), and on the Winograd paths transforming the weights in each task,
 * forward and backward, and the gradient back: three matrices of (m + 2)^2 / 9 times the
 * weights. */
static double per_chunk_params(const model *m)
{
    double params = 0;
    for (int l = 0; l < m->nlayers; l++) {
        const layer *ly = &m->layers[l];
        conv_strategy s = ly->cls->kernel_path ? ly->cls->kernel_path(ly, CONV_FORWARD) : CONV_AUTO;
        double points = s == CONV_WINOGRAD4 ? 36 : s == CONV_WINOGRAD ? 16 : 0;
        params += (1 + 3 * points / 9) * (double)ly->nparams;
    }
    return params;
}

int plan_grain(const job_config *cfg, const model *m)
{
    if (cfg->grain > 0)
        return cfg->grain < cfg->batch ? cfg->grain : cfg->batch;
    /* Enough samples for ~1 MFLOP per task (tens of microseconds, far above the runtime's per-task
     * cost), and enough that a chunk's compute outweighs writing and summing its partial
     * gradients, which are memory-bound: ~2000 flops per parameter (measured on DAHL's CNN from
     * 28x28 to 270x360, where 4 samples per task ran 20-30% slower than 16; counted as
     * per_chunk_params does, cifar-shaped and vgg-small take 16 samples, which trained 9% and
     * 3-8% faster than their 4 and 8 before). At most half a
     * batch, so that a batch has two chunks to run side by side and the next batch's chunks
     * overlap its tail. */
    double per = m->flops_per_sample > 0 ? m->flops_per_sample : 1;
    double g = 1e6 / per, for_grads = 2000.0 * per_chunk_params(m) / per;
    long need = (long)ceil(g > for_grads ? g : for_grads);
    /* A power-of-two number of chunks shares evenly among 2, 4, 8... workers (3 chunks on 2
     * workers leave one idle a third of the time): the one nearest (by ratio) to the batch
     * over `need`. Rounded up to more chunks of fewer samples, vgg-small (need 27, batch 64)
     * took 16 samples where 32 train 5% faster; rounded down, a deeper CNN (need 11, batch
     * 32) took 16 where 8 are 3% faster. */
    double want = (double)cfg->batch / (double)need;
    long chunks = 2;
    while ((double)chunks * 2 <= want * M_SQRT2)
        chunks *= 2;
    return (int)((cfg->batch + chunks - 1) / chunks);
}

/* On devices alone (JOB_GRAIN_PER_DEVICE), a batch per device: a device runs a chunk's kernels
 * one after the other anyway, and each task costs its launches and its completion (25-40 us on
 * an H200's OpenCL), so two chunks a batch only doubled a batch's chain of tasks: DAHL 28x28x1
 * trained at 68,614 img/s against 40,240 there. */
static void choose_grain(exec_plan *p, const job_config *cfg, const model *m)
{
    if (cfg->grain == JOB_GRAIN_PER_DEVICE && p->pinned) {
        p->grain = (cfg->batch + p->devices - 1) / p->devices;
        snprintf(p->grain_why, sizeof p->grain_why, "auto: a batch per device (devices = opencl)");
        return;
    }
    p->grain = plan_grain(cfg, m);
    snprintf(p->grain_why, sizeof p->grain_why, "%s", cfg->grain > 0 ? "job"
             : "auto: ~1 MFLOP and 2000 flops per parameter a task, 2 or more chunks a batch");
}

/* A first convolution reads the data set's bytes when a chunk's inputs as floats would not stay
 * in cache between the load and the convolution: then the bytes cost a quarter of the traffic.
 * Beyond 0.5 MB: DAHL 62x84x3's chunks (1.00 MB) train 11% faster on bytes; vgg-small's (0.20
 * MB) and DAHL 28x28x1's (0.10 MB) as fast either way. */
static void choose_input(exec_plan *p, const model *m)
{
    if (p->pinned) {
        snprintf(p->input_why, sizeof p->input_why, "floats: devices = opencl (bytes are read on "
                 "the CPU only)");
        return;
    }
    const char *forced = env_switch_value(ENV_INPUT);   /* floats | bytes */
    int first_conv = m->nlayers > 0 && m->layers[0].cls->reads_bytes;
    double bytes = (double)p->grain * (double)m->layers[0].in_size * sizeof(float);
    if (forced && (!strcmp(forced, "bytes") || !strcmp(forced, "floats"))) {
        p->bytes_input = first_conv && !strcmp(forced, "bytes");
        snprintf(p->input_why, sizeof p->input_why, "FRUGAL_INPUT=%s", forced);
    } else {
        p->bytes_input = first_conv && bytes > 0.5e6;
        snprintf(p->input_why, sizeof p->input_why, "auto: a chunk's input is %.2f MB as floats%s",
                 bytes / 1e6, forced ? " (FRUGAL_INPUT ignored: not floats or bytes)" : "");
    }
}

/* On a device every layer type with relu-fused kinds for it takes the relu after it (a kernel
 * more in the same task): the relu's tasks, each a round trip to the device, are saved. */
static int device_fuses_relu(const layer_class *c)
{
    return c->relu_fused_forward && c->relu_fused_forward->opencl && c->relu_fused_backward &&
           c->relu_fused_backward->opencl;
}

/* A relu fused into the layer before it goes back through the input gradient of the layer
 * after it where that layer's fused backward can take it: as it writes each sample's input
 * gradient, whose input (the relu's output) is still in cache from its own transforms. The
 * relu's layer then no longer reads that output again, nor copies it or its gradient masked
 * (the same values, bit for bit). CPU only: the device kernels gate in the relu's layer. */
static void gate_in_next_layer(exec_plan *p, const model *m)
{
    if (p->devices)
        return;
    for (int l = 1; l < m->nlayers; l++) {
        const layer *ly = &m->layers[l];
        p->dx_through_relu[l] = plan_fused_into(p, l - 1) >= 0 &&
                                ly[-1].cls->gates_by_output && ly->cls->gates_input_gradient &&
                                p->fused[l] && p->need_dx[l] && p->groups[l] == 1;
    }
}

/* A layer's output goes to the next in channel lanes, 16 channels of a pixel side by side
 * (ops/conv.h), where both take them: between the Winograd convolutions of AVX-512 machines,
 * whose transforms work on 16 channels a register and in NCHW spent much of their time turning
 * 16 planes' rows into lanes and back (docs/kernels.md). The same values, bit for bit. CPU
 * only: the device kernels read NCHW. */
static void choose_layouts(exec_plan *p, const model *m)
{
    const char *forced = env_switch_value(ENV_LAYOUT);   /* nchw | auto */
    int nchw = forced && !strcmp(forced, "nchw");
    int ignored = forced && !nchw && strcmp(forced, "auto");
    snprintf(p->layout_why, sizeof p->layout_why, "%s%s",
             nchw ? "FRUGAL_LAYOUT=nchw"
             : p->devices ? "nchw: device workers (their kernels read NCHW)"
                          : "auto: channel lanes between layers that take them",
             ignored ? " (FRUGAL_LAYOUT ignored: not nchw or auto)" : "");
    if (nchw || p->devices)
        return;
    for (int l = 0; l < m->nlayers; l++) {
        int next = l + 1 + p->fused[l];
        if (plan_fused_into(p, l) >= 0 || next >= m->nlayers)
            continue;
        const layer *a = &m->layers[l], *b = &m->layers[next];
        const layer *a_pool = p->fused_pool[l] ? a + 1 : NULL;
        const layer *b_pool = next + 1 < m->nlayers && p->fused_pool[next] ? b + 1 : NULL;
        int lanes = a->cls->lanes_layout && b->cls->lanes_layout &&
                    a->cls->lanes_layout(a, CONV_LANES_OUTPUT, p->need_dx[l], p->groups[l],
                                         a_pool) &&
                    b->cls->lanes_layout(b, CONV_LANES_INPUT, p->need_dx[next], p->groups[next],
                                         b_pool);
        p->out_lanes[l] = p->in_lanes[next] = lanes;
    }
}

int plan_relu_left_to_next(const exec_plan *p, int l)
{
    int next = l + 1 + p->fused[l];
    return p->fused[l] > p->fused_pool[l] && next < CONFIG_MAX_LAYERS && p->dx_through_relu[next];
}

void plan_make(exec_plan *p, const job_config *cfg, const model *m, int devices)
{
    memset(p, 0, sizeof *p);
    p->devices = devices;
    p->deterministic = cfg->deterministic && devices;
    p->pinned = cfg->devices == DEVICES_OPENCL && devices;
    p->by_energy = cfg->policy > POLICY_TIME && devices;
    p->batch = cfg->batch;
    choose_grain(p, cfg, m);
    p->nchunks = (p->batch + p->grain - 1) / p->grain;
    choose_input(p, m);
    const char *conv = env_switch_value(ENV_CONV), *isa = env_switch_value(ENV_ISA);
    snprintf(p->conv_path, sizeof p->conv_path, "%s%s", conv ? "FRUGAL_CONV=" : "auto",
             conv ? conv : "");
    snprintf(p->isa_why, sizeof p->isa_why, "%s (best here: %s)%s%s",
             ops_isa_name(ops_isa_active()), ops_isa_name(ops_isa_supported()),
             isa ? ", FRUGAL_ISA=" : "", isa ? isa : "");
    int seen_params = 0;
    for (int l = 0; l < m->nlayers; l++) {
        const layer *ly = &m->layers[l];
        p->need_dx[l] = seen_params;
        seen_params |= ly->nparams > 0;
        /* A layer and the max-pool after it in the same tasks (the layer type says when that is
         * possible: engine/model/layer_conv.c), and a relu after the max-pool (engine/model/
         * model.c puts it there) too: applied to the pooled output still in cache, instead of
         * in tasks of its own. Or the relu right after it, where the layer type can. Neither
         * measured slower anywhere (docs/training.md), so auto takes them whenever it can. */
        int fusable = ly->cls->fuses_pool && l + 1 < m->nlayers && ly[1].cls->max_pool &&
                      ly->cls->fuses_pool(ly, &ly[1], p->need_dx[l]);
        int relu_after = l + 3 < m->nlayers && ly[2].cls->monotone;
        int relu_next = l + 2 < m->nlayers && ly[1].cls->monotone && cfg->fuse >= 0;
        if (fusable && !p->pinned && cfg->fuse >= 0)
            p->fused[l] = 1 + relu_after, p->fused_pool[l] = 1;
        else if (relu_next && (p->pinned ? device_fuses_relu(ly->cls)
                                         : ly->cls->fuses_relu && ly->cls->fuses_relu(ly, p->need_dx[l])))
            p->fused[l] = 1;
        p->groups[l] = !ly->cls->groups || p->fused[l]
                           ? 1 : ly->cls->groups(ly, cfg->filter_groups, p->grain);
    }
    gate_in_next_layer(p, m);
    choose_layouts(p, m);
}

int plan_fused_into(const exec_plan *p, int l)
{
    for (int k = 1; k <= 2 && l - k >= 0; k++)
        if (p->fused[l - k] >= k)
            return l - k;
    return -1;
}

void plan_chunk(const exec_plan *p, int k, int size, int *s0, int *s1)
{
    *s0 = (int)((long)k * p->batch / p->nchunks);
    *s1 = (int)((long)(k + 1) * p->batch / p->nchunks);
    if (*s1 > size)
        *s1 = size;
    if (*s0 > *s1)
        *s0 = *s1;
}

/* The FLOPs (2 per multiply-add) a sample's training executes: each convolution pass as its
 * kernel computes it (Winograd's products, the transforms' additions not counted), and no
 * input gradient where none is needed (the layers before the first
 * with parameters). A layer's flops are its three passes' (forward, input and weight gradient). */
static double executed_flops(const exec_plan *p, const model *m)
{
    double sum = 0;
    for (int l = 0; l < m->nlayers; l++) {
        const layer *ly = &m->layers[l];
        for (conv_pass pass = CONV_FORWARD; pass <= CONV_BACKWARD_FILTER; pass++)
            if (pass != CONV_BACKWARD_INPUT || p->need_dx[l])
                sum += ly->flops / 3 *
                       (ly->cls->executed_share ? ly->cls->executed_share(ly, pass) : 1);
    }
    return sum;
}

void plan_write_json(const exec_plan *p, const model *m, FILE *f)
{
    /* model FLOPs: 3 x forward (forward, input and weight gradients), as benchmarks count them */
    fprintf(f, "\"grain\": %d, \"chunks_per_batch\": %d", p->grain, p->nchunks);
    fputs(", \"grain_why\": ", f);
    json_string(f, p->grain_why);
    json_fixed_field(f, "model_flops_per_sample", m->flops_per_sample, 0);
    json_fixed_field(f, "executed_flops_per_sample", executed_flops(p, m), 0);
    fputs(", \"input\": ", f);
    json_string(f, p->bytes_input ? "bytes" : "floats");
    fputs(", \"input_why\": ", f);
    json_string(f, p->input_why);
    fputs(", \"convolution\": ", f);
    json_string(f, p->conv_path);
    fputs(", \"kernel_path\": ", f);
    json_string(f, p->isa_why);
    fputs(", \"activation_layout\": ", f);
    json_string(f, p->layout_why);
    fputs(", \"huge_pages\": ", f);   /* for the activations and scratch (large_alloc.h) */
    json_string(f, large_alloc_huge_pages());
    fprintf(f, ", \"device_workers\": %d, \"task_placement\": \"%s\"", p->devices,
            p->pinned ? "pinned: device kinds on the devices"
            : p->deterministic ? "deterministic: by kind and chunk"
            : p->by_energy ? "by expected joules (placement_energy)"
            : p->devices ? "by expected finish time" : "cpu");
    fputs(", \"layers\": [", f);
    for (int l = 0; l < m->nlayers; l++) {
        fprintf(f, "%s{\"type\": ", l ? ", " : "");
        json_string(f, m->layers[l].cls->name);
        int inside = plan_fused_into(p, l) >= 0, next_inside = plan_fused_into(p, l + 1) >= 0;
        int with_next = p->fused[l] || (inside && next_inside);
        fprintf(f, ", \"tasks_per_chunk\": %d, \"fused_with_next\": %s", p->groups[l],
                with_next ? "true" : "false");
        if (p->dx_through_relu[l])
            fputs(", \"input_gradient_through_relu\": true", f);
        if (p->out_lanes[l])   /* the next layer's input in channel lanes */
            fputs(", \"output_in_channel_lanes\": true", f);
        const layer *ly = &m->layers[l];
        if (ly->cls->kernel_path)
            fprintf(f, ", \"kernels\": {\"forward\": \"%s\", \"backward_input\": \"%s\", "
                       "\"backward_filter\": \"%s\"}",
                    conv_path_name(ly->cls->kernel_path(ly, CONV_FORWARD)),
                    conv_path_name(ly->cls->kernel_path(ly, CONV_BACKWARD_INPUT)),
                    conv_path_name(ly->cls->kernel_path(ly, CONV_BACKWARD_FILTER)));
        fputc('}', f);
    }
    fputc(']', f);
}
