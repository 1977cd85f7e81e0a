/* A minimal test harness: TEST(name) { ... } registers a test; CHECK(...) records failures. */
#ifndef FRUGAL_TEST_H
#define FRUGAL_TEST_H

#include <math.h>
#include <stdio.h>

typedef void (*test_fn)(void);
void test_register(const char *name, test_fn fn);
void test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A scratch directory for this test, created fresh and removed afterwards. */
const char *test_tmpdir(void);
/* TMPDIR/name, in one of 16 buffers used in turn: copy a path that must outlive 15 more calls. */
const char *test_tmp(const char *name);
/* Seeds and sizes shrink under sanitizers, which run many times slower. */
int test_scale(int full);
/* A loopback port of this test run's own (0 <= which < 32), and "127.0.0.1:PORT" (in one of 8
 * buffers used in turn). Below Linux's ephemeral range (32768 up), where an outgoing connection
 * may hold one, and apart for parallel runs of the suite (by process id). */
int test_port(int which);
const char *test_addr(int which);
/* A text file into buf (at most n - 1 bytes, 0-ended; "" when it cannot be read); returns buf. */
char *test_read_text(const char *path, char *buf, size_t n);
/* Writes printf-style text to path, creating its missing folders; fails the test when it cannot. */
void test_write_text(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A TCP connection to 127.0.0.1:port from the loopback address `from` that says nothing (a
 * stranger holding a place); tries for 10 s while the port refuses. The socket, or -1. */
int test_silent_connection(const char *from, int port);

#define TEST(name)                                                                     \
    static void name(void);                                                            \
    __attribute__((constructor)) static void register_##name(void)                     \
    {                                                                                  \
        test_register(#name, name);                                                    \
    }                                                                                  \
    static void name(void)

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond))                                                                   \
            test_fail(__FILE__, __LINE__, "%s", #cond);                                \
    } while (0)

#define CHECKF(cond, ...)                                                              \
    do {                                                                               \
        if (!(cond))                                                                   \
            test_fail(__FILE__, __LINE__, __VA_ARGS__);                                \
    } while (0)

#define CHECK_NEAR(a, b, atol, rtol)                                                   \
    do {                                                                               \
        double a_ = (a), b_ = (b);                                                     \
        if (!(fabs(a_ - b_) <= (atol) + (rtol)*fabs(b_)))                              \
            test_fail(__FILE__, __LINE__, "%s = %.9g, expected %s = %.9g", #a, a_, #b, b_); \
    } while (0)

#endif
