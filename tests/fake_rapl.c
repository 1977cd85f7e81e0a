#include "fake_rapl.h"

#include "common/clock.h"
#include "test.h"

#include <dirent.h>
#include <math.h>
#include <signal.h>
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

/* The seconds pid's threads have wanted a core: run on one or waited in a run queue for one
 * (schedstat), summed over its threads; -1 once it is gone. Unlike CPU time, this does not
 * shrink when other load on the machine takes the cores: two busy workers draw two cores'
 * power whether or not a neighbour delays them. */
static double demand_seconds(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *tasks = opendir(path);
    if (!tasks)
        return -1;
    double ns = 0;
    for (struct dirent *e; (e = readdir(tasks));) {
        char stat[300];
        unsigned long long run, wait;
        snprintf(stat, sizeof stat, "/proc/%d/task/%.200s/schedstat", (int)pid, e->d_name);
        FILE *f = e->d_name[0] != '.' ? fopen(stat, "r") : NULL;
        if (f && fscanf(f, "%llu %llu", &run, &wait) == 2)
            ns += (double)run + (double)wait;
        if (f)
            fclose(f);
    }
    closedir(tasks);
    return ns * 1e-9;
}

/* Whether the file at path holds pattern at least times times. */
static int file_has(const char *path, const char *pattern, int times)
{
    static char text[1 << 18];
    const char *at = test_read_text(path, text, sizeof text);
    for (; times > 0 && (at = strstr(at, pattern)); times--)
        at += strlen(pattern);
    return times <= 0;
}

int fake_rapl_drive(const char *root, pid_t pid)
{
    return fake_rapl_drive_until(root, pid, NULL, NULL, 0, 0);
}

int fake_rapl_drive_until(const char *root, pid_t pid, const char *log, const char *pattern,
                          int times, double seconds)
{
    double deadline = clock_now_s() + seconds;
    int signalled = !pattern;
    char zone[700], counter[760], tmp[780], limit[760];   /* root is at most 600 bytes */
    snprintf(zone, sizeof zone, "%s/sys/class/powercap/intel-rapl:0", root);
    snprintf(limit, sizeof limit, "%s/constraint_0_power_limit_uw", zone);
    snprintf(counter, sizeof counter, "%s/energy_uj", zone);
    snprintf(tmp, sizeof tmp, "%s/energy_uj.tmp", zone);
    double uj = 1e6, last_demand = 0, last_t = clock_now_s();
    double cores = (double)sysconf(_SC_NPROCESSORS_ONLN);
    for (;;) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        usleep(10 * 1000);
        double t = clock_now_s(), demand = demand_seconds(pid);
        if (!signalled && (t > deadline || file_has(log, pattern, times)))
            signalled = kill(pid, SIGINT) == 0;
        if (demand < 0)
            continue;
        /* a thread gone: 0; more threads than cores would not run at once, even alone */
        double busy = fmin(fmax(demand - last_demand, 0) / (t - last_t), cores);
        double watts = 10 + 10 * fmin(busy, 1) + 80 * fmax(busy - 1, 0);
        unsigned long long cap_uw;   /* a package limit, when the tree has one, holds it */
        FILE *cap = fopen(limit, "r");
        if (cap && fscanf(cap, "%llu", &cap_uw) == 1)
            watts = fmin(watts, cap_uw * 1e-6);
        if (cap)
            fclose(cap);
        uj += watts * (t - last_t) * 1e6;
        last_demand = demand, last_t = t;
        FILE *f = fopen(tmp, "w");   /* whole files only: the meter may read at any time */
        if (f) {
            fprintf(f, "%.0f\n", uj);
            fclose(f);
            rename(tmp, counter);
        }
    }
}
