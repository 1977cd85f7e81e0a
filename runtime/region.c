#include "region.h"

#include <stdlib.h>
#include <string.h>

/* Whether row band [s, s + w) meets any row of b. */
static int row_meets(intptr_t s, intptr_t w, const region *b)
{
    intptr_t b0 = (intptr_t)b->start, bw = (intptr_t)b->row_bytes;
    if (b->rows == 1)
        return b0 < s + w && b0 + bw > s;
    intptr_t sb = (intptr_t)b->stride;
    /* rows j with b0 + j*sb + bw > s and b0 + j*sb < s + w */
    intptr_t lo = s - bw - b0 < 0 ? 0 : (s - bw - b0) / sb + 1;
    intptr_t hi = s + w - 1 - b0 < 0 ? -1 : (s + w - 1 - b0) / sb;
    if (hi > (intptr_t)b->rows - 1)
        hi = (intptr_t)b->rows - 1;
    return lo <= hi;
}

int region_overlap(const region *a, const region *b)
{
    if (!a->rows || !a->row_bytes || !b->rows || !b->row_bytes)
        return 0;
    if (region_end(a) <= b->start || region_end(b) <= a->start)
        return 0;
    if (a->rows > b->rows) {   /* walk the one with fewer rows */
        const region *t = a;
        a = b, b = t;
    }
    for (size_t i = 0; i < a->rows; i++)
        if (row_meets((intptr_t)(a->start + i * a->stride), (intptr_t)a->row_bytes, b))
            return 1;
    return 0;
}

/* First entry whose start is >= start (tombstones included: they keep their place). */
static size_t lower_bound(const region_index *x, uintptr_t start)
{
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (x->items[mid].start < start)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void compact(region_index *x)
{
    size_t kept = 0;
    for (size_t i = 0; i < x->n; i++)
        if (x->items[i].owner)
            x->items[kept++] = x->items[i];
    x->n = kept;
    x->dead = 0;
}

void *region_index_add(region_index *x, uintptr_t start, uintptr_t end, void *owner)
{
    if (x->dead > 16 && x->dead * 2 > x->n)
        compact(x);
    size_t at = lower_bound(x, start);
    /* Neighbours that could overlap: the live one before, and those starting before end. */
    for (size_t i = at; i-- > 0;)
        if (x->items[i].owner) {
            if (x->items[i].end > start)
                return x->items[i].owner;
            break;
        }
    for (size_t i = at; i < x->n && x->items[i].start < end; i++)
        if (x->items[i].owner)
            return x->items[i].owner;
    if (x->n == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 64;
        struct region_entry *items = realloc(x->items, cap * sizeof *items);
        if (!items)
            return (void *)-1;
        x->items = items;
        x->cap = cap;
    }
    memmove(&x->items[at + 1], &x->items[at], (x->n - at) * sizeof x->items[0]);
    x->items[at] = (struct region_entry){start, end, owner};
    x->n++;
    return NULL;
}

void region_index_remove(region_index *x, uintptr_t start, void *owner)
{
    for (size_t i = lower_bound(x, start); i < x->n && x->items[i].start == start; i++)
        if (x->items[i].owner == owner) {
            x->items[i].owner = NULL;
            x->dead++;
            return;
        }
}

void region_index_free(region_index *x)
{
    free(x->items);
    memset(x, 0, sizeof *x);
}
