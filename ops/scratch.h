/* Per-thread scratch memory for kernels (packing buffers, im2col columns): grown on demand, kept
 * for the thread's life, freed when the thread exits. */
#ifndef FRUGAL_SCRATCH_H
#define FRUGAL_SCRATCH_H

#include <stddef.h>

enum {
    SCRATCH_PACK_A, SCRATCH_PACK_B, SCRATCH_COLUMNS, SCRATCH_PARTIALS, SCRATCH_INPUT,
    SCRATCH_SLOTS
};

/* At least n floats, 64-byte aligned; valid until the same thread asks for the same slot again.
 * NULL only if memory ran out. */
float *ops_scratch(int slot, size_t n);
/* Refuse buffers above `bytes` (0: no limit), as if memory ran out: tests make kernels fail
 * with it. */
void ops_scratch_limit(size_t bytes);

#endif
