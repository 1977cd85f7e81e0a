/* Runs the frugal binary of the variant under test (build/VARIANT/frugal; `make tests` builds
 * it), as a user meets it: arguments, environment, output. */
#ifndef FRUGAL_TEST_FRUGAL_CLI_H
#define FRUGAL_TEST_FRUGAL_CLI_H

#include <stddef.h>
#include <sys/types.h>

typedef struct frugal_call {
    uid_t uid;                 /* (uid_t)-1: as this process; else setuid to it first */
    const char *const *env;    /* NULL-ended "NAME=value" set for it (NULL: none) */
    int empty_env;             /* only env, nothing inherited (as env -i) */
} frugal_call;

/* Runs frugal with the arguments (NULL-ended); its stdout and stderr in out (truncated to n).
 * Killed after 300 s, so a hang fails the test. Returns the exit status, or -1 if it did not
 * exit normally. */
int frugal_run(const frugal_call *c, char *out, size_t n, const char *const *args);

/* Starts frugal in the background with its stdout and stderr going to the file log; the pid,
 * or -1. It dies with SIGALRM after 300 s, as frugal_run's do. */
pid_t frugal_spawn(const frugal_call *c, const char *log, const char *const *args);
/* The same for another binary built beside it (build/VARIANT/name: netproxy). */
pid_t tool_spawn(const char *name, const frugal_call *c, const char *log, const char *const *args);

#define FRUGAL(out, ...) \
    frugal_run(&(frugal_call){(uid_t)-1, NULL, 0}, out, sizeof out, (const char *const[]){__VA_ARGS__, NULL})

#endif
