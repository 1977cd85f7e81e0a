#include "energy/sysfs.h"
#include "common/env_switches.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sysfs_format(char *out, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(out, n, fmt, ap);
    va_end(ap);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

void sysfs_path(char *out, size_t n, const char *path)
{
    const char *root = env_switch_value(strncmp(path, "/proc", 5) ? ENV_SYSFS_ROOT : ENV_PROCFS_ROOT);
    snprintf(out, n, "%s%s", root ? root : "", path);
}

int sysfs_read_line(const char *path, char *out, size_t n)
{
    /* One read(): sysfs attributes are produced whole, and stdio would add an allocation. */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    ssize_t got = read(fd, out, n - 1);
    int e = got < 0 ? errno : 0;
    close(fd);
    if (got < 0)
        return e;
    out[got] = 0;
    out[strcspn(out, "\n")] = 0;
    return 0;
}

int sysfs_read_u64(const char *path, uint64_t *out)
{
    char buf[64], *end;
    int e = sysfs_read_line(path, buf, sizeof buf);
    if (e)
        return e;
    if (buf[0] < '0' || buf[0] > '9')
        return EINVAL;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    if (errno || *end)
        return EINVAL;
    *out = v;
    return 0;
}

int sysfs_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sysfs_list(const char *dir, const char *part, char ***names)
{
    *names = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || !strstr(de->d_name, part))
            continue;
        if (n == cap) {
            char **grown = realloc(*names, sizeof *grown * (size_t)(cap = cap ? 2 * cap : 16));
            if (!grown)
                break;
            *names = grown;
        }
        if (!((*names)[n] = strdup(de->d_name)))
            break;
        n++;
    }
    closedir(d);
    if (n)
        qsort(*names, (size_t)n, sizeof **names, compare_names);
    return n;
}

void sysfs_list_free(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}
