/* Reading sensor files. Every path goes through a root so that tests (and containers that mount
 * the host's /sys elsewhere) can point frugal at another tree: FRUGAL_SYSFS_ROOT prefixes /sys
 * paths, FRUGAL_PROCFS_ROOT prefixes /proc paths. */
#ifndef FRUGAL_ENERGY_SYSFS_H
#define FRUGAL_ENERGY_SYSFS_H

#include <stddef.h>
#include <stdint.h>

#define SYSFS_PATH 512

/* snprintf that says whether everything fitted: 0, or -1 when out was truncated (a path that
 * does not fit is skipped; a message that does not fit is shortened). */
int sysfs_format(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* out = root + path, where path starts with "/sys" or "/proc". */
void sysfs_path(char *out, size_t n, const char *path);

/* The file's first line without its newline. Returns 0, or an errno value. */
int sysfs_read_line(const char *path, char *out, size_t n);
/* A non-negative decimal integer. Returns 0, an errno value, or EINVAL for anything else. */
int sysfs_read_u64(const char *path, uint64_t *out);

/* 1 if path exists (readable or not). */
int sysfs_exists(const char *path);
/* The sorted names of dir's entries that contain `part`, malloc'ed (free with sysfs_list_free).
 * Returns how many (0 when dir cannot be opened). */
int sysfs_list(const char *dir, const char *part, char ***names);
void sysfs_list_free(char **names, int n);

#endif
