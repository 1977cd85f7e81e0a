/* A run's output folder: created if missing, locked so that a second run on it is refused with a
 * message naming the first (flock, released when the process ends, however it ends), cleared of
 * temporary files a killed run left, and written one whole file at a time (temporary file,
 * fsync, rename). */
#ifndef FRUGAL_RUN_FOLDER_H
#define FRUGAL_RUN_FOLDER_H

#include <stddef.h>
#include <stdio.h>

typedef struct run_folder {
    char dir[600];
    int lock_fd;
} run_folder;

int run_folder_open(run_folder *f, const char *dir, const char *job, char *err, size_t errlen);
void run_folder_close(run_folder *f);
/* dir/name, in buf. */
const char *run_folder_path(const run_folder *f, const char *name, char *buf, size_t n);
/* A copy of the job file as dir/job.cfg, so that the folder tells what ran. */
int run_folder_keep_job(const run_folder *f, const char *job, char *err, size_t errlen);
/* Replaces path with text, atomically. */
int run_folder_write_atomic(const char *path, const char *text, size_t len, char *err, size_t errlen);
/* Replaces path, atomically, with what fill(f, arg) writes. */
int run_folder_write_atomic_with(const char *path, void (*fill)(FILE *, const void *), const void *arg,
                           char *err, size_t errlen);

#endif
