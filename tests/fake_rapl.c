#include "fake_rapl.h"

#include "common/clock.h"
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void fake_rapl_tree(const char *root)
{
    char path[760];
    const char *files[][2] = {{"name", "package-0"}, {"energy_uj", "1000000"},
                              {"max_energy_range_uj", "262143328850"}};
    mkdir(root, 0755);
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/sys/class/powercap/intel-rapl:0/%s", root, files[i][0]);
        for (char *p = path + strlen(root) + 1; *p; p++)
            if (*p == '/') {
                *p = 0;
                mkdir(path, 0755);
                *p = '/';
            }
        FILE *f = fopen(path, "w");
        CHECKF(f && fprintf(f, "%s\n", files[i][1]) > 0 && fclose(f) == 0, "%s", path);
    }
}

/* The CPU seconds process pid has used (user and system), or -1 once it is gone. */
static double cpu_seconds(pid_t pid)
{
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    int ok = f && fgets(line, sizeof line, f);
    if (f)
        fclose(f);
    const char *after = ok ? strrchr(line, ')') : NULL;
    unsigned long long utime, stime;
    if (!after || sscanf(after + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                         &utime, &stime) != 2)
        return -1;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

int fake_rapl_drive(const char *root, pid_t pid)
{
    char zone[700], counter[760], tmp[780];   /* root is at most 600 bytes */
    snprintf(zone, sizeof zone, "%s/sys/class/powercap/intel-rapl:0", root);
    snprintf(counter, sizeof counter, "%s/energy_uj", zone);
    snprintf(tmp, sizeof tmp, "%s/energy_uj.tmp", zone);
    double uj = 1e6, last_cpu = 0, last_t = clock_now_s();
    for (;;) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        usleep(10 * 1000);
        double t = clock_now_s(), cpu = cpu_seconds(pid);
        if (cpu < 0)
            continue;
        double busy = (cpu - last_cpu) / (t - last_t);
        double watts = 10 + 10 * fmin(busy, 1) + 80 * fmax(busy - 1, 0);
        uj += watts * (t - last_t) * 1e6;
        last_cpu = cpu, last_t = t;
        FILE *f = fopen(tmp, "w");   /* whole files only: the meter may read at any time */
        if (f) {
            fprintf(f, "%.0f\n", uj);
            fclose(f);
            rename(tmp, counter);
        }
    }
}
