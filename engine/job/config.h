/* Job files: INI-style sections, read strictly. Every error names the file, the line and the key,
 * and nothing is trained until the whole file (and every --set override) is valid.
 *
 *   [job]        epochs, batch, seed, output, log_every (batches between the points of
 *                steps.csv and TensorBoard; 0, the default: about 25 an epoch), deadline (a
 *                date in trace time, or a duration from the start: 36h), postpone (off | on:
 *                wait for greener energy while the deadline allows, docs/green.md)
 *   [data]       format (idx | cifar10), train_images, train_labels, test_images, test_labels,
 *                train_files, test_file (cifar10), limit, test_limit, resize (HxW), channels,
 *                classes (the labels kept, e.g. 0,3,7: a peer's own data in a federated run),
 *                shard (I/N: every N-th training sample from the I-th; auto under gossip)
 *   [conv] [relu] [maxpool] [flatten] [dense] [softmax_xent]
 *                layers, in order; their keys are in their files (engine/model/layer_*.c)
 *   [optimizer]  type (sgd), lr, momentum, weight_decay
 *   [execution]  workers, grain (auto | N samples per task),
 *                filter_groups (auto | N convolution tasks per chunk, split by filters),
 *                fuse (auto | on | off: a convolution, the max-pool after it and a relu after
 *                that as one task, or a convolution and the relu after it; on a device, any
 *                layer and the relu after it),
 *                devices (auto | cpu | opencl | cpu+opencl), device (which OpenCL devices: their
 *                indexes in `frugal info`, comma-separated, or a part of their name),
 *                deterministic (on | off: the same placement, and so the same weights, every run),
 *                slowdown (1 to 100: every CPU task takes this many times as long, to emulate
 *                slower hardware in tests and benchmarks)
 *   [energy]     rate_hz, carbon_g_per_kwh, carbon_file (a file holding the figure, re-read
 *                while training), carbon_trace, renewable_trace (time series replayed while
 *                training, energy/grid_trace.h), trace_start, trace_speed, baseline_seconds, baseline_watts,
 *                model_idle_watts, model_core_watts, power_profile (IDLE, ONE, ALL: watts idle,
 *                with one core busy and with all busy; the fallback model and the prior)
 *   [placement]  policy (time | energy | edp | carbon: the worker count is then learned while
 *                training), power_budget_watts (the whole job: every machine together),
 *                node_power_budget_watts (each machine on its own; `frugal join
 *                --power-budget` sets one node's), all_nodes (on: every node of a cluster takes
 *                work, the machines pinned by hand), max_slowdown (energy policies: at most this
 *                much slower than the fastest count measured, 0.1 = 10%), window_seconds (how
 *                long each measurement lasts), participation (always | random | green |
 *                budget | backup: which machines take part in each round, docs/green.md),
 *                green_g_per_kwh, budget_g, random_share, operating_point (off | auto | WATTS
 *                | PART=..., the power caps and clock limits set or searched, op_setting.h,
 *                docs/operating-points.md)
 *   [cluster]    sync_every (0, the default: every batch's gradients are summed over the
 *                machines, the weights those of one machine; K: periodic averaging, each machine
 *                takes K steps of its own on its share of the batches, then the models are
 *                averaged, for slow links), compress (on: under periodic averaging, models
 *                travel as their change since the round's start in half precision,
 *                engine/cluster/model_delta.h: half the bytes each way), overlap (on: under periodic
 *                averaging, a round's average travels while the machines train the next
 *                round, and is applied after it, engine/cluster/late_model.h: no machine waits for
 *                the network, each round starts one average late), centered_clip (on: under
 *                periodic averaging, the models are combined by CenteredClip instead of their
 *                mean, engine/cluster/aggregate.h: a machine far off moves the result little),
 *                mode (sync | average | gossip; default: average when sync_every is set, else sync)
 *   [gossip]     (mode = gossip, engine/cluster/gossip.h) topology (ring | exponential | random |
 *                full), neighbours (peers sent to per round), every (local steps between
 *                exchanges), participation (the fraction of rounds a peer exchanges in), peers
 *                (how many to wait for at the start; shard = auto needs it)
 *
 * A value runs to the end of its line; '#' or ';' starts a comment at the start of a line or
 * after white space (so "a#b.gz" is a path), and a value in double quotes is taken as it is. */
#ifndef FRUGAL_CONFIG_H
#define FRUGAL_CONFIG_H

#include "engine/job/op_setting.h"
#include "engine/model/layer_config.h"

#include <stddef.h>
#include <stdint.h>

#define CONFIG_PATH 512
#define CONFIG_MAX_BYTES (1 << 20)   /* a job file larger than this is not a job file */
#define CONFIG_MAX_WORKERS 1024      /* [execution] workers, and frugal join --workers */
#define CONFIG_MAX_PEERS 64          /* machines of a gossip run ([gossip] peers, neighbours) */

typedef enum data_format { DATA_IDX, DATA_CIFAR10 } data_format;
/* [job] postpone: off, on (wait idle for greener energy while the deadline allows). */
typedef enum postpone_mode { POSTPONE_OFF, POSTPONE_WAIT } postpone_mode;

/* [cluster] mode: how machines train together (engine/cluster/). */
typedef enum cluster_mode { CLUSTER_SYNC, CLUSTER_AVERAGE, CLUSTER_GOSSIP } cluster_mode;
/* [gossip] topology: who a peer sends its model to in a round (engine/cluster/gossip_topology.h). */
typedef enum gossip_topology {
    GOSSIP_RING, GOSSIP_EXPONENTIAL, GOSSIP_RANDOM, GOSSIP_FULL, GOSSIP_TOPOLOGIES
} gossip_topology;

/* grain as a run alone on its devices resolves auto (engine/cli/run.c): a batch per device. */
#define JOB_GRAIN_PER_DEVICE (-1)

/* Where tasks may run: auto is the CPU and every OpenCL GPU or accelerator (an OpenCL CPU device
 * such as PoCL shares the cores frugal already uses: name it to use it). */
typedef enum devices_choice { DEVICES_AUTO, DEVICES_CPU, DEVICES_OPENCL, DEVICES_CPU_OPENCL } devices_choice;

typedef struct job_config {
    char path[CONFIG_PATH];
    /* [job] */
    int epochs, batch;
    int batch_asked;               /* 0, or the job's batch when it is more than the data set
                                      (job_load_train makes the batch the whole set) */
    unsigned long long seed;
    char output[CONFIG_PATH];
    int log_every;                 /* batches between step points; 0: about 25 an epoch */
    char deadline_text[128];       /* "", a date (trace time) or a duration from the start */
    double deadline_at, deadline_s;   /* -1 or the date (seconds since the epoch); -1 or seconds */
    char postpone_text[16];
    int postpone;                  /* postpone_mode */
    /* [data] */
    data_format format;
    char train_images[CONFIG_PATH], train_labels[CONFIG_PATH];
    char test_images[CONFIG_PATH], test_labels[CONFIG_PATH];
    char train_files[CONFIG_PATH * 2], test_file[CONFIG_PATH];   /* cifar10: comma-separated */
    long limit, test_limit;        /* 0: all samples */
    int resize_h, resize_w;        /* 0: keep */
    int channels;                  /* 0: keep; else replicate to this many */
    char data_classes[128];        /* "": every class; else the labels kept, "0,3,7" */
    char data_shard[128];          /* "", "I/N" or "auto" */
    int shard_index, shard_count;  /* the training samples i with i % count == index; count 0:
                                      all; index -1: auto (the peer's place, engine/cluster/) */
    /* layers */
    int nlayers;
    layer_config layers[CONFIG_MAX_LAYERS];
    /* [optimizer] */
    float lr, momentum, weight_decay;
    /* [execution] */
    int workers;                   /* 0: all CPUs */
    int grain;                     /* 0: auto; else samples per task; or JOB_GRAIN_PER_DEVICE */
    int filter_groups;             /* 0: auto; else tasks per chunk for each convolution */
    int fuse;                      /* 0: auto, 1: on where possible, -1: off */
    int devices;                   /* DEVICES_AUTO, ... */
    char device_filter[128];       /* "" (all), "0,2", or a part of a name */
    int deterministic;
    float slowdown;                /* 1; > 1 emulates slower hardware (runtime.h) */
    /* [energy] */
    float energy_rate_hz;          /* sampler rate */
    float carbon_g_per_kwh;
    char carbon_file[CONFIG_PATH]; /* "" or a file re-read for the current figure (energy/carbon.h) */
    char carbon_trace[CONFIG_PATH], renewable_trace[CONFIG_PATH];   /* "" or replayed traces */
    char trace_start_text[64];
    double trace_start;            /* -1: now (the traces read live); else seconds since the epoch */
    float trace_speed;             /* trace seconds a second; default 1 */
    float baseline_seconds;        /* idle power measured this long before training; 0: none */
    float baseline_watts;          /* configured idle power instead; < 0: measure */
    float model_idle_watts, model_core_watts;   /* the fallback model (energy/power_model.h) */
    float power_profile[3];        /* idle, one core busy, all busy (W); all 0: none */
    /* [placement] */
    int policy;                    /* -1: none (all workers), else a placement_policy */
    float power_budget_watts;      /* 0: none */
    float node_power_budget_watts; /* 0: none */
    int all_nodes;                 /* every node takes work, whatever the policy */
    int sync_every;                /* 0: gradients every batch; K: models averaged every K */
    int compress;                  /* averaging: models travel as half-precision deltas */
    int overlap;                   /* averaging: a round's average applied one round late */
    int centered_clip;             /* averaging: models combined by CenteredClip, not the mean */
    char cluster_mode_name[128];   /* "" (from sync_every), sync, average or gossip */
    int cluster_mode;              /* cluster_mode */
    /* [gossip] */
    char gossip_topology_name[128];
    int gossip_topology;           /* gossip_topology; default exponential */
    int gossip_neighbours;         /* peers sent to per round; 0: the topology's (ring 2, else 1) */
    int gossip_every;              /* local steps between exchanges; default 10 */
    float gossip_participation;    /* the fraction of rounds a peer exchanges in; default 1 */
    int gossip_peers;              /* peers waited for at the start (0: none) */
    char participation_name[32];
    int participation;             /* participation_policy: who takes part in a round */
    float green_g_per_kwh;         /* green: the intensity a machine must be at or under */
    float budget_g;                /* budget: grams of CO2e for the whole job */
    float random_share;            /* random: the share of machines drawn each round */
    float max_slowdown;            /* < 0: none */
    float window_seconds;
    char operating_point_text[128];
    op_setting operating_point;    /* the hardware limits set or searched (op_setting.h) */
} job_config;

/* The names of [cluster] mode and [gossip] topology: the enum, or -1; and back. */
int config_cluster_mode(const char *name);
int config_gossip_topology(const char *name);
const char *config_gossip_topology_name(int topology);
/* [data] classes: the count of labels listed (keep[label] set for each, unless keep is NULL),
 * or -1 when the list is not labels 0-255 separated by commas. */
int config_classes(const char *list, uint8_t keep[256]);
/* [execution] devices: DEVICES_AUTO... for its name, or -1 (names: CONFIG_DEVICES). */
#define CONFIG_DEVICES "auto, cpu, opencl or cpu+opencl"
int config_devices(const char *name);
/* Reads and checks path; overrides are "section.key=value" strings applied on top (NULL-ended
 * list, may be NULL). Returns 0, or -1 with a message in err. */
int config_load(job_config *cfg, const char *path, const char *const *overrides, char *err,
                size_t errlen);
/* The same from text already in memory (len bytes, need not end with a 0); `path` names it in
 * messages. */
/* Every key the parser accepts, section by section (the sections, then each layer type's, by
 * its section name), for the job-file reference and its test (docs/job-file.md). */
void config_each_key(void (*fn)(void *ctx, const char *section, const char *key), void *ctx);
int config_parse(job_config *cfg, const char *path, const char *text, size_t len,
                 const char *const *overrides, char *err, size_t errlen);

#endif
