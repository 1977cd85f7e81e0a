/* Runs the registered tests whose names start with any prefix given on the command line (and with
 * none given as -PREFIX), each in its own child process so that a crash or a hang fails one test
 * rather than the run. */
#include "common/env_switches.h"
#include "test.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_TESTS 1024
#define TEST_TIMEOUT_S 300

typedef struct test_entry { const char *name; test_fn fn; } test_entry;
static test_entry tests[MAX_TESTS];
static int ntests;
static int failures;
static char tmpdir[256];

void test_register(const char *name, test_fn fn)
{
    if (ntests < MAX_TESTS)
        tests[ntests++] = (test_entry){name, fn};
}

void test_fail(const char *file, int line, const char *fmt, ...)
{
    if (failures++ >= 20)
        return;   /* one broken loop should not bury the report */
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "    %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

const char *test_tmpdir(void)
{
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/frugal-test-XXXXXX");
        if (!mkdtemp(tmpdir)) {
            perror("mkdtemp");
            exit(2);
        }
    }
    return tmpdir;
}

const char *test_tmp(const char *name)
{
    static char buf[16][700];
    static int next;
    char *p = buf[next++ % 16];
    snprintf(p, 700, "%s/%s", test_tmpdir(), name);
    return p;
}

int test_port(int which)
{
    static int base;   /* fixed at the first call, so that a forked child agrees */
    if (!base)
        base = 12000 + (int)(getpid() % 640) * 32;
    return base + which;
}

const char *test_addr(int which)
{
    static char buf[8][64];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, 64, "127.0.0.1:%d", test_port(which));
    return p;
}

char *test_read_text(const char *path, char *buf, size_t n)
{
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        buf[fread(buf, 1, n - 1, f)] = 0;
        fclose(f);
    }
    return buf;
}

void test_write_text(const char *path, const char *fmt, ...)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(dir, 0755);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    va_list ap;
    va_start(ap, fmt);
    int bad = !f || vfprintf(f, fmt, ap) < 0;
    va_end(ap);
    if (f && fclose(f))
        bad = 1;
    if (bad)
        test_fail(__FILE__, __LINE__, "cannot write %s", path);
}

int test_silent_connection(const char *from, int port)
{
    struct sockaddr_in src = {.sin_family = AF_INET}, dst = {.sin_family = AF_INET};
    inet_pton(AF_INET, from, &src.sin_addr);
    inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
    dst.sin_port = htons((uint16_t)port);
    for (int tries = 0; tries < 100; tries++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
            return -1;
        if (!bind(fd, (struct sockaddr *)&src, sizeof src) &&
            !connect(fd, (struct sockaddr *)&dst, sizeof dst))
            return fd;
        int refused = errno == ECONNREFUSED;
        close(fd);
        if (!refused)
            return -1;
        usleep(100 * 1000);
    }
    return -1;
}

int test_scale(int full)
{
    const char *s = getenv("FRUGAL_TEST_SCALE");
    int div = s ? atoi(s) : 1;
    int n = div > 1 ? full / div : full;
    return n > 0 ? n : 1;
}

/* Whether a test runs: its name starts with a prefix given (any test when none is), and with
 * none given as -PREFIX. */
static int matches(const char *name, int argc, char **argv)
{
    int included = 1;
    for (int i = 1; i < argc; i++)
        if (argv[i][0] != '-')
            included = 0;
    for (int i = 1; i < argc; i++) {
        int exclude = argv[i][0] == '-';
        const char *prefix = argv[i] + exclude;
        if (!strncmp(name, prefix, strlen(prefix))) {
            if (exclude)
                return 0;
            included = 1;
        }
    }
    return included;
}

/* A prefix that names no test (a test renamed, a typo) would silently run less: refused. */
static int every_prefix_names_a_test(int argc, char **argv)
{
    int ok = 1;
    for (int i = 1; i < argc; i++) {
        const char *prefix = argv[i] + (argv[i][0] == '-');
        int found = 0;
        for (int t = 0; t < ntests && !found; t++)
            found = !strncmp(tests[t].name, prefix, strlen(prefix));
        if (!found) {
            fprintf(stderr, "no test matches '%s'\n", argv[i]);
            ok = 0;
        }
    }
    return ok;
}

/* CPU seconds of the tests (and what they spawned) waited for so far: beside a test's wall
 * time, it says whether the test computes or waits. */
static double children_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static int cmp_tests(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int main(int argc, char **argv)
{
    qsort(tests, (size_t)ntests, sizeof tests[0], cmp_tests);
    const char *variant = getenv("FRUGAL_TEST_VARIANT");
    /* Tests see the sensors they build and no other: on a machine with an NVIDIA driver its GPUs
     * would join every fake sysfs tree. The fake NVML without FAKE_NVML_DIR has no GPU. */
    char fake_nvml[256];
    snprintf(fake_nvml, sizeof fake_nvml, "build/%s/libfake_nvml.so", variant ? variant : "release");
    setenv("FRUGAL_NVML_LIBRARY", fake_nvml, 0);
    unsetenv("FAKE_NVML_DIR");
    env_switches_read();
    if (!every_prefix_names_a_test(argc, argv)) {
        printf("0 passed, 1 failed\n");
        return 1;
    }
    int passed = 0, failed = 0;
    for (int i = 0; i < ntests; i++) {
        if (!matches(tests[i].name, argc, argv))
            continue;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        double cpu0 = children_cpu_s();
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            alarm(TEST_TIMEOUT_S);   /* a hang becomes a failure, not a stuck CI */
            tests[i].fn();
            if (tmpdir[0] && getenv("FRUGAL_TEST_KEEP"))   /* for a look at what a test left */
                fprintf(stderr, "    kept %s\n", tmpdir);
            else if (tmpdir[0]) {
                char cmd[300];
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
                if (system(cmd)) {
                }
            }
            _exit(failures ? 1 : 0);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        const char *why = ok ? "" : WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "";
        printf("%s %-44s %6.2fs %6.2fs cpu%s%s%s\n", ok ? "PASS" : "FAIL", tests[i].name, s,
               children_cpu_s() - cpu0, variant ? " [" : "", variant ? variant : "", variant ? "]" : "");
        if (!ok && *why)
            printf("    (%s)\n", why);
        ok ? passed++ : failed++;
    }
    if (passed + failed == 0) {   /* a filter that matches nothing must not look like success */
        fprintf(stderr, "no test matches");
        for (int i = 1; i < argc; i++)
            fprintf(stderr, " '%s'", argv[i]);
        fprintf(stderr, "\n");
        failed = 1;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
