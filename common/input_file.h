/* Opening the files a user names (job files, data sets, checkpoints, images) with errors that
 * say which file and what is wrong with it: missing, unreadable, a directory, too large. */
#ifndef FRUGAL_INPUT_FILE_H
#define FRUGAL_INPUT_FILE_H

#include <stddef.h>
#include <stdio.h>

struct stat;
/* Opens path for reading without blocking on it (a FIFO with no writer opens at once), its
 * status in *st: a descriptor that blocks again (to read), or -1 with errno set. The caller
 * says what it accepts (regular files, a size). */
int input_open_fd(const char *path, struct stat *st);
/* Opens a regular file for reading; `what` names it in errors ("job file", "CIFAR-10 batch").
 * Returns the stream and its size, or NULL with err set. */
FILE *input_open(const char *path, const char *what, long long *size, char *err, size_t errlen);
/* The whole file, at most max bytes, in a buffer the caller frees (one byte more, set to 0). */
char *input_read_all(const char *path, size_t max, const char *what, size_t *len, char *err,
                     size_t errlen);

#endif
