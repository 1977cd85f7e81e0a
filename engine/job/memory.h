/* Memory budgets: a large allocation (resized images, a batch's activations) is checked against
 * what this machine can give before it is made, so that a job too big for the machine stops at
 * once with the figures rather than after minutes of swapping or an OOM kill. */
#ifndef FRUGAL_MEMORY_H
#define FRUGAL_MEMORY_H

#include <stddef.h>

/* Bytes this process can still use: MemAvailable (/proc/meminfo), or less if RLIMIT_AS says
 * so. 0 when unknown. */
double memory_available(void);
/* 0 if `bytes` fits, else -1 with a message: "<what> needs X GB; Y GB available". */
int memory_check(double bytes, const char *what, char *err, size_t errlen);

#endif
