/* Large buffers on huge pages: see large_alloc.h. */
#include "common/large_alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { HUGE_PAGE = 2 << 20 };

void *large_alloc(size_t bytes)
{
    if (bytes < HUGE_PAGE) {
        void *p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
        return p ? memset(p, 0, bytes) : NULL;
    }
    size_t rounded = (bytes + HUGE_PAGE - 1) & ~(size_t)(HUGE_PAGE - 1);
    void *p = aligned_alloc(HUGE_PAGE, rounded);
    if (!p)
        return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, rounded, MADV_HUGEPAGE);   /* a hint: refused, the buffer still works */
#endif
    return memset(p, 0, rounded);   /* touched after the advice, so faulted in as huge pages */
}

const char *large_alloc_huge_pages(void)
{
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    char line[128] = "";
    if (f) {
        if (!fgets(line, sizeof line, f))
            line[0] = '\0';
        fclose(f);
    }
    if (strstr(line, "[always]"))
        return "always";
    if (strstr(line, "[madvise]"))
        return "madvise";
    if (strstr(line, "[never]"))
        return "off: the kernel's transparent huge pages are set to never";
    return "off: no transparent huge pages in this kernel";
}
