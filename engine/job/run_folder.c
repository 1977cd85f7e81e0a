#include "engine/job/run_folder.h"

#include "engine/job/config.h"
#include "common/input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* mkdir -p */
static int make_dirs(const char *path, char *err, size_t errlen)
{
    char buf[600];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        char c = *p;
        if (c == '/' || c == 0) {
            *p = 0;
            struct stat st;
            if (mkdir(buf, 0777) && errno != EEXIST) {
                snprintf(err, errlen, "%s: cannot create the output folder: %s", buf,
                         strerror(errno));
                return -1;
            }
            if (stat(buf, &st) || !S_ISDIR(st.st_mode)) {
                snprintf(err, errlen, "%s: exists and is not a folder", buf);
                return -1;
            }
            *p = c;
        }
        if (!c)
            return 0;
    }
}

const char *run_folder_path(const run_folder *f, const char *name, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s", f->dir, name);
    return buf;
}

static const char *const temporaries[] = {"checkpoint.bin.tmp", "model.bin.tmp", "metrics.csv.tmp",
                                          "summary.json.tmp", "power.csv.tmp", "report.html.tmp",
                                          "job.cfg.tmp", "steps.csv.tmp"};

int run_folder_open(run_folder *f, const char *dir, const char *job, char *err, size_t errlen)
{
    f->lock_fd = -1;
    snprintf(f->dir, sizeof f->dir, "%s", dir);
    if (make_dirs(dir, err, errlen))
        return -1;
    char path[700];
    run_folder_path(f, ".lock", path, sizeof path);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create the run's lock file: %s (is the output folder "
                 "writable?)", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB)) {
        char who[256] = "";
        ssize_t n = pread(fd, who, sizeof who - 1, 0);
        who[n > 0 ? n : 0] = 0;
        who[strcspn(who, "\n")] = 0;
        snprintf(err, errlen, "%s is in use by another frugal run (%s); wait for it to end or "
                 "set another [job] output", dir, who[0] ? who : "unknown");
        close(fd);
        return -1;
    }
    char who[512];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    int n = snprintf(who, sizeof who, "pid %d, job %s, since ", (int)getpid(), job);
    n += (int)strftime(who + n, sizeof who - (size_t)n, "%Y-%m-%d %H:%M:%S\n", &tm);
    if (ftruncate(fd, 0) || pwrite(fd, who, (size_t)n, 0) != n) {
        /* the lock holds without the note */
    }
    f->lock_fd = fd;
    for (size_t i = 0; i < sizeof temporaries / sizeof temporaries[0]; i++)
        unlink(run_folder_path(f, temporaries[i], path, sizeof path));   /* a killed run's */
    return 0;
}

void run_folder_close(run_folder *f)
{
    if (f->lock_fd >= 0)
        close(f->lock_fd);   /* releases the lock */
    f->lock_fd = -1;
}

int run_folder_write_atomic(const char *path, const char *text, size_t len, char *err, size_t errlen)
{
    char tmp[700];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        return -1;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    int saved = done < len ? (errno ? errno : ENOSPC) : 0;
    if (!saved && fsync(fd))
        saved = errno;
    if (close(fd) && !saved)
        saved = errno;
    if (!saved && rename(tmp, path))
        saved = errno;
    if (saved) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(saved));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int run_folder_keep_job(const run_folder *f, const char *job, char *err, size_t errlen)
{
    char path[700];
    size_t len;
    char *text = input_read_all(job, CONFIG_MAX_BYTES, "job file", &len, err, errlen);
    if (!text)
        return -1;
    int rc = run_folder_write_atomic(run_folder_path(f, "job.cfg", path, sizeof path), text, len, err, errlen);
    free(text);
    return rc;
}

int run_folder_write_atomic_with(const char *path, void (*fill)(FILE *, const void *), const void *arg,
                           char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    int rc = -1;
    if (f)
        fill(f, arg);
    if (!f || fclose(f))
        snprintf(err, errlen, "%s: out of memory", path);
    else
        rc = run_folder_write_atomic(path, text, len, err, errlen);
    free(text);
    return rc;
}
