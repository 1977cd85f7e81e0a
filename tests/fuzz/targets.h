/* The fuzz targets: every decoder of untrusted input, each as a function of one input. The same
 * functions run under libFuzzer (./build.sh fuzz: tests/fuzz/driver.c) and, on every seed and
 * every input that ever crashed (tests/fuzz/<target>/), as ordinary tests (test_fuzz_inputs.c).
 * A target returns 0 whatever the input does; a crash, a leak or undefined behaviour is the
 * finding. */
#ifndef FRUGAL_FUZZ_TARGETS_H
#define FRUGAL_FUZZ_TARGETS_H

#include <stddef.h>
#include <stdint.h>

typedef int (*fuzz_fn)(const uint8_t *data, size_t size);

typedef struct fuzz_target {
    const char *name;      /* its folder under tests/fuzz */
    fuzz_fn fn;
    const char *what;
} fuzz_target;

extern const fuzz_target fuzz_targets[];
extern const int fuzz_ntargets;

int fuzz_job_file(const uint8_t *data, size_t size);
int fuzz_idx(const uint8_t *data, size_t size);         /* raw or gzip: the input's first byte picks */
int fuzz_cifar(const uint8_t *data, size_t size);
int fuzz_pnm(const uint8_t *data, size_t size);
int fuzz_checkpoint(const uint8_t *data, size_t size);  /* as it comes: the CRC check stops most */
int fuzz_checkpoint_crc(const uint8_t *data, size_t size);   /* CRC repaired: the structure checks */
int fuzz_run_log(const uint8_t *data, size_t size);
int fuzz_gossip_message(const uint8_t *data, size_t size);    /* a frame, then its message */
int fuzz_cluster_message(const uint8_t *data, size_t size);   /* first byte: coordinator or node */
int fuzz_summary_json(const uint8_t *data, size_t size);
int fuzz_carbon_file(const uint8_t *data, size_t size);
int fuzz_grid_trace(const uint8_t *data, size_t size);
int fuzz_limit_state(const uint8_t *data, size_t size);
int fuzz_launch_files(const uint8_t *data, size_t size);
int fuzz_machine_profile(const uint8_t *data, size_t size);
int fuzz_node_job(const uint8_t *data, size_t size);      /* a JOB message, parsed as a node does */
int fuzz_power_profile(const uint8_t *data, size_t size);
int fuzz_allow_file(const uint8_t *data, size_t size);
int fuzz_hello(const uint8_t *data, size_t size);         /* first byte: server or client */
int fuzz_hub_stream(const uint8_t *data, size_t size);    /* after a real handshake, into a hub */

#endif
