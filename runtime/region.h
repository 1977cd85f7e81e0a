/* The memory regions handles name, and the index of registered allocations that keeps unrelated
 * handles from overlapping.
 *
 * A region is `rows` runs of `row_bytes` bytes, `stride` bytes apart, from `start`: one run for
 * a plain buffer, several for a slice of a strided array (the filters [f0, f1) of every sample
 * of a chunk). Two handles over the same bytes would let two tasks write them at once without
 * a dependency between them, so an allocation (a root handle) may not overlap another, and the
 * parts of one allocation may not overlap each other. */
#ifndef FRUGAL_RUNTIME_REGION_H
#define FRUGAL_RUNTIME_REGION_H

#include <stddef.h>
#include <stdint.h>

typedef struct region {
    uintptr_t start;
    size_t row_bytes, stride;   /* stride >= row_bytes when rows > 1 */
    uint32_t rows;
} region;

/* One past the last byte. */
static inline uintptr_t region_end(const region *r)
{
    return r->rows ? r->start + (size_t)(r->rows - 1) * r->stride + r->row_bytes : r->start;
}

static inline size_t region_extent(const region *r) { return region_end(r) - r->start; }

/* Whether some byte lies in both. Empty regions overlap nothing. */
int region_overlap(const region *a, const region *b);

/* Allocations sorted by start address; removal leaves a tombstone that the next compaction
 * drops, so registering and unregistering thousands of handles stays cheap. */
typedef struct region_index {
    struct region_entry { uintptr_t start, end; void *owner; } *items;   /* owner NULL: removed */
    size_t n, cap, dead;
} region_index;

/* Adds [start, end) for owner; returns NULL, or the owner of a region it overlaps (nothing is
 * added then). -1 cast to a pointer means out of memory. */
void *region_index_add(region_index *x, uintptr_t start, uintptr_t end, void *owner);
void region_index_remove(region_index *x, uintptr_t start, void *owner);
void region_index_free(region_index *x);

#endif
