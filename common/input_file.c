#include "common/input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int input_open_fd(const char *path, struct stat *st)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int flags = fcntl(fd, F_GETFL);
    if (fstat(fd, st) || flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

FILE *input_open(const char *path, const char *what, long long *size, char *err, size_t errlen)
{
    if (!path || !*path) {
        snprintf(err, errlen, "no %s given (an empty path)", what);
        return NULL;
    }
    struct stat st;
    int fd = input_open_fd(path, &st);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open the %s: %s", path, what, strerror(errno));
        return NULL;
    }
    FILE *f = S_ISREG(st.st_mode) ? fdopen(fd, "rb") : NULL;
    if (!f) {
        snprintf(err, errlen, "%s: %s, not a %s", path,
                 S_ISDIR(st.st_mode) ? "is a directory" : S_ISREG(st.st_mode)
                 ? strerror(errno) : "is not a regular file", what);
        close(fd);
        return NULL;
    }
    *size = (long long)st.st_size;
    return f;
}

char *input_read_all(const char *path, size_t max, const char *what, size_t *len, char *err,
                     size_t errlen)
{
    long long size;
    FILE *f = input_open(path, what, &size, err, errlen);
    *len = 0;
    if (!f)
        return NULL;
    char *buf = NULL;
    if ((unsigned long long)size > max) {
        snprintf(err, errlen, "%s: %lld bytes is too large for a %s (at most %zu)", path, size,
                 what, max);
    } else if (!(buf = malloc((size_t)size + 1))) {
        snprintf(err, errlen, "%s: out of memory reading %lld bytes", path, size);
    } else if (fread(buf, 1, (size_t)size, f) != (size_t)size || ferror(f)) {
        snprintf(err, errlen, "%s: read error: %s", path, strerror(errno ? errno : EIO));
        free(buf);
        buf = NULL;
    } else {
        buf[size] = 0;
        *len = (size_t)size;
    }
    fclose(f);
    return buf;
}
