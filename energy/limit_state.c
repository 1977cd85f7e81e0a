#include "energy/limit_state.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define HEADER "frugal operating points"

/* The sysfs limits to write back from a signal handler, prepared beforehand. */
static struct {
    char path[POWER_LIMIT_MAX][SYSFS_PATH];
    char text[POWER_LIMIT_MAX][32];
    _Atomic int n, nvml;
} for_signal;

/* The process's start in clock ticks after boot (/proc/PID/stat, field 22), or 0. */
static unsigned long long process_start(long pid)
{
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    size_t got = f ? fread(line, 1, sizeof line - 1, f) : 0;
    if (f)
        fclose(f);
    line[got] = 0;
    char *p = strrchr(line, ')');   /* the command's name may hold spaces and parentheses */
    unsigned long long start = 0;
    for (int field = 2; p && *p && field < 22; p++)
        if (*p == ' ')
            field++;
    if (p && sscanf(p, "%llu", &start) != 1)
        start = 0;
    return start;
}

static int alive(long pid, unsigned long long start)
{
    return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM) && process_start(pid) == start;
}

int limit_state_parse(const char *text, long *pid, unsigned long long *start, limit_saved *saved,
                      int max, int *skipped)
{
    int n = 0;
    *pid = 0, *start = 0, *skipped = 0;
    const char *line = strchr(text, '\n');   /* the header */
    if (!line || sscanf(line + 1, "owner %ld %llu", pid, start) != 2)
        *pid = 0, *start = 0;
    for (line = line ? strchr(line + 1, '\n') : NULL; line && *++line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        int kind, used = 0;
        double value;
        limit_saved z;
        if (n < max && sscanf(line, "%d %lf %n", &kind, &value, &used) == 2 && used && kind >= 0 &&
            kind <= POWER_LIMIT_AMDGPU && isfinite(value) && value > 0 && value < 1e9 &&
            len - (size_t)used < sizeof z.path && (size_t)used <= len) {
            z.kind = (power_limit_kind)kind, z.value = value;
            memcpy(z.path, line + used, len - (size_t)used);
            z.path[len - (size_t)used] = 0;
            if (power_limit_path_valid(z.kind, z.path))
                saved[n++] = z;
            else
                ++*skipped;
        } else {
            ++*skipped;
        }
        if (!end)
            break;
        line = end;
    }
    return n;
}

/* The file's text, at most n - 1 bytes; -1 when it cannot be read. */
static long read_text(const char *file, char *text, size_t n)
{
    FILE *f = fopen(file, "r");
    if (!f)
        return -1;
    size_t got = fread(text, 1, n - 1, f);
    fclose(f);
    text[got] = 0;
    return (long)got;
}

int limit_state_recover(const char *file, int *owner, FILE *log, char *why, size_t n)
{
    char text[POWER_LIMIT_MAX * (SYSFS_PATH + 40)];
    if (read_text(file, text, sizeof text) < 0)
        return 0;
    long pid;
    unsigned long long start;
    int skipped, failed = 0;
    limit_saved *saved = malloc(POWER_LIMIT_MAX * sizeof *saved);
    if (!saved) {
        snprintf(why, n, "%s: out of memory", file);
        return -1;
    }
    int count = limit_state_parse(text, &pid, &start, saved, POWER_LIMIT_MAX, &skipped);
    if (pid != getpid() && alive(pid, start)) {
        free(saved);
        *owner = (int)pid;
        return 1;
    }
    if (skipped)
        fprintf(log, "operating point: %s: %d line%s that name no limit's file left alone\n", file,
                skipped, skipped == 1 ? "" : "s");
    for (int i = 0; i < count; i++) {
        char detail[SYSFS_PATH + 200];
        const limit_saved *z = &saved[i];
        if (power_limit_write(z->kind, z->path, z->value, detail, sizeof detail)) {
            snprintf(why, n, "%s: cannot put back what frugal (pid %ld) changed: %s", file, pid, detail);
            failed = 1;
        } else {
            fprintf(log, "operating point: %s put back to %g %s, as before frugal (pid %ld, "
                    "gone) changed it\n", z->path, z->value, power_limit_unit(z->kind), pid);
        }
    }
    free(saved);
    if (!failed && unlink(file) && errno != ENOENT) {
        snprintf(why, n, "%s: cannot remove it: %s", file, strerror(errno));
        failed = 1;
    }
    return failed ? -1 : 0;
}

static int write_file(const limit_state *s, char *why, size_t n)
{
    char tmp[SYSFS_PATH + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", s->file);
    FILE *f = fopen(tmp, "w");
    int bad = !f;
    if (f) {
        fprintf(f, HEADER "\nowner %ld %llu\n", (long)getpid(), process_start(getpid()));
        for (int i = 0; i < s->n; i++)
            fprintf(f, "%d %.17g %s\n", (int)s->saved[i].kind, s->saved[i].value, s->saved[i].path);
        bad = fflush(f) || fsync(fileno(f));
        bad = fclose(f) || bad;
    }
    if (bad || rename(tmp, s->file)) {
        snprintf(why, n, "%s: cannot write it: %s", s->file, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int limit_state_claim(limit_state *s, const char *file, FILE *log, char *why, size_t n)
{
    memset(s, 0, sizeof *s);
    if (snprintf(s->file, sizeof s->file, "%s", file) >= (int)sizeof s->file) {
        snprintf(why, n, "%s: path too long", file);
        return -1;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600), owner = 0;
        if (fd >= 0) {
            close(fd);
            s->held = 1;
            return write_file(s, why, n);
        }
        if (errno != EEXIST) {
            snprintf(why, n, "%s: cannot create it: %s", file, strerror(errno));
            return -1;
        }
        int got = limit_state_recover(file, &owner, log, why, n);
        if (got == 1)
            snprintf(why, n, "another frugal (pid %d) holds this machine's operating points "
                     "(%s)", owner, file);
        if (got)
            return -1;
    }
    snprintf(why, n, "%s: another process keeps creating it", file);
    return -1;
}

int limit_state_save(limit_state *s, power_limit_kind kind, const char *path, double value,
                     char *why, size_t n)
{
    if (!s->held) {
        snprintf(why, n, "the state file is not held: nothing may be changed");
        return -1;
    }
    for (int i = 0; i < s->n; i++)
        if (s->saved[i].kind == kind && !strcmp(s->saved[i].path, path))
            return 0;
    if (s->n == POWER_LIMIT_MAX) {
        snprintf(why, n, "more than %d limits", POWER_LIMIT_MAX);
        return -1;
    }
    limit_saved *z = &s->saved[s->n++];
    z->kind = kind, z->value = value;
    snprintf(z->path, sizeof z->path, "%s", path);
    if (write_file(s, why, n)) {
        s->n--;
        return -1;
    }
    int k = atomic_load(&for_signal.n);
    if (kind == POWER_LIMIT_NVML) {
        atomic_store(&for_signal.nvml, 1);
    } else if (k < POWER_LIMIT_MAX) {   /* the entry first, then the count that shows it */
        snprintf(for_signal.path[k], SYSFS_PATH, "%s", path);
        snprintf(for_signal.text[k], 32, "%.0f\n", value * (kind == POWER_LIMIT_CPUFREQ ? 1e3 : 1e6));
        atomic_store(&for_signal.n, k + 1);
    }
    return 0;
}

int limit_state_restore(limit_state *s, FILE *log)
{
    if (!s->held)
        return 0;
    int failed = 0;
    for (int i = s->n - 1; i >= 0; i--) {
        const limit_saved *z = &s->saved[i];
        char why[SYSFS_PATH + 200];
        if (power_limit_write(z->kind, z->path, z->value, why, sizeof why)) {
            fprintf(log, "operating point: cannot put back %s: %s; the next frugal to start, or "
                    "`frugal energy --restore`, tries again from %s\n", z->path, why, s->file);
            failed++;
        } else {
            fprintf(log, "operating point: %s put back to %g %s\n", z->path, z->value,
                    power_limit_unit(z->kind));
        }
    }
    atomic_store(&for_signal.n, 0);
    atomic_store(&for_signal.nvml, 0);
    if (!failed)
        unlink(s->file);
    s->held = 0;
    return failed;
}

int limit_state_restore_from_signal(void)
{
    int k = atomic_load(&for_signal.n);
    for (int i = 0; i < k; i++) {
        int fd = open(for_signal.path[i], O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t ignored = write(fd, for_signal.text[i], strlen(for_signal.text[i]));
            (void)ignored;
            close(fd);
        }
    }
    return atomic_load(&for_signal.nvml);
}
