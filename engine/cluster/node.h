/* frugal join HOST:PORT --key KEYFILE [--workers N] [--devices D] [--slowdown F] [--power-profile I,O,A]
 * [--carbon G | --carbon-file F | --carbon-trace F] [--renewable-trace F] [--power-budget W]: a machine that computes chunks of a
 * coordinator's batches (engine/cluster/coordinator.h) until the coordinator says training is over or
 * is lost. Under a power budget of its own (--power-budget, else the job's
 * node_power_budget_watts) it parks workers to stay under it (engine/placement/worker_control.h) and tells
 * the coordinator how many run. It needs only the binary and the key: the job and the training files come from the
 * coordinator (files cached by content hash in $FRUGAL_CACHE_DIR, else
 * $XDG_CACHE_HOME/frugal/data, else ~/.cache/frugal/data). */
#ifndef FRUGAL_NODE_H
#define FRUGAL_NODE_H

#include <stdio.h>

typedef struct node_options {
    const char *coordinator;     /* HOST:PORT */
    const char *key_path;
    const char *identity_path;   /* this machine's identity (netio/key.h); NULL: none */
    int workers;
    int workers_pinned;          /* --workers given: a power budget does not park any */
    const char *devices;         /* this machine's OpenCL devices (auto, cpu, opencl, cpu+opencl);
                                    NULL: the job's [execution] devices */
    double power_budget_w;       /* this machine's own (else the job's node_power_budget_watts) */
    const char *operating_point; /* this machine's ([placement] operating_point's form); NULL:
                                    the job's */
    double timeout_s;
    double linger_s;             /* how long it tries to join a coordinator not up yet, or to
                                    rejoin one lost or paused (at least timeout_s) */
    double slowdown;             /* 1, or > 1 to emulate slower hardware (runtime.h) */
    double profile_w[3];         /* this machine's power profile (energy/power_model.h); 0: none */
    double carbon_g_per_kwh;     /* its grid's intensity, or a file re-read for it: */
    const char *carbon_file;     /*   NULL: none */
    const char *carbon_trace;    /* or traces replayed on the job's clock ([energy] trace_start, */
    const char *renewable_trace; /*   trace_speed): NULL, none */
    FILE *out;
    const _Atomic int *stop;     /* nonzero (a signal's number): leave now; NULL: never */
} node_options;

/* 0 when the coordinator ended training, 1 on an error (named on stderr) or when told to stop
 * (o->stop: it closes its connection, and its chunks go back to the coordinator). */
int node_run(const node_options *o);

#endif
