#include "engine/job/memory.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

double memory_available(void)
{
    double avail = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long kb;
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
            avail = 1024.0 * (double)kb;
            break;
        }
    }
    if (f)
        fclose(f);
    if (avail <= 0) {
        long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
        avail = pages > 0 && size > 0 ? (double)pages * (double)size : 0;
    }
    struct rlimit rl;
    if (!getrlimit(RLIMIT_AS, &rl) && rl.rlim_cur != RLIM_INFINITY &&
        (avail <= 0 || (double)rl.rlim_cur < avail))
        avail = (double)rl.rlim_cur;
    return avail;
}

int memory_check(double bytes, const char *what, char *err, size_t errlen)
{
    double avail = memory_available();
    if (avail <= 0 || bytes <= avail)
        return 0;
    snprintf(err, errlen, "%s needs %.2f GB; this machine has %.2f GB available", what,
             bytes / 1e9, avail / 1e9);
    return -1;
}
