/* Large zeroed buffers (activations, gradients, kernels' scratch) on transparent huge pages
 * where the kernel offers them: a batch's activations span thousands of 4 KB pages, which the
 * kernels read in short runs (a 32x32 channel is one page); vgg-small trains 4% faster on huge
 * pages (docs/kernels.md). */
#ifndef FRUGAL_LARGE_ALLOC_H
#define FRUGAL_LARGE_ALLOC_H

#include <stddef.h>

/* bytes of zeros, 64-byte aligned; from 2 MB up, 2 MB aligned and advised as huge pages
 * (madvise MADV_HUGEPAGE). NULL when out of memory. Freed with free(). */
void *large_alloc(size_t bytes);

/* What large_alloc gets from this kernel, for summary.json: "madvise" (huge pages where
 * advised), "always" (the kernel's own), or why not ("off: the kernel's transparent huge
 * pages are set to never", "off: no transparent huge pages in this kernel"). */
const char *large_alloc_huge_pages(void);

#endif
