/* The frugal command as a user meets it: every mistake gets a message naming the file or the
 * argument, and nothing crashes. Runs build/VARIANT/frugal (make tests builds it too). */
#include "engine/run_folder.h"
#include "synthetic.h"
#include "test.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs frugal with the arguments (NULL-ended), as `uid` if not -1; its output (stdout and
 * stderr) in out. Returns the exit status, or -1 if it did not exit normally. */
static int frugal_as(uid_t uid, char *out, size_t n, const char *const *args)
{
    const char *variant = getenv("FRUGAL_TEST_VARIANT");
    char bin[256];
    snprintf(bin, sizeof bin, "build/%s/frugal", variant ? variant : "release");
    int fd[2];
    if (pipe(fd))
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[0]);
        if (uid != (uid_t)-1 && (setgid(65534) || setuid(uid)))
            _exit(125);
        char *argv[64] = {bin};
        for (int i = 0; args[i] && i < 62; i++)
            argv[i + 1] = (char *)args[i];
        execv(bin, argv);
        fprintf(stderr, "cannot run %s: %s\n", bin, strerror(errno));
        _exit(126);
    }
    close(fd[1]);
    size_t got = 0;
    for (ssize_t r; (r = read(fd[0], out + got, n - 1 - got)) > 0 && got < n - 1;)
        got += (size_t)r;
    out[got] = 0;
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

#define FRUGAL(out, ...) frugal_as((uid_t)-1, out, sizeof out, (const char *const[]){__VA_ARGS__, NULL})

static char out[16384];

TEST(cli_a_folder_as_the_job_file)
{
    CHECK(FRUGAL(out, "train", test_tmpdir()) == 1);
    CHECKF(strstr(out, test_tmpdir()) && strstr(out, "is a directory, not a job file"), "%s", out);
}

TEST(cli_arguments_missing_or_repeated)
{
    CHECK(FRUGAL(out, "train", make_job(""), "--workers") == 2);
    CHECKF(strstr(out, "missing value after '--workers'"), "%s", out);
    CHECK(FRUGAL(out, "train") == 2);
    CHECKF(strstr(out, "no job file given"), "%s", out);
    /* hundreds of --set and --workers: no fixed array to overflow */
    const char *args[64] = {"train", make_job(""), "--set", "energy.baseline_seconds=0"};
    int n = 4;
    while (n < 60) {
        args[n++] = "--workers";
        args[n++] = "1";
    }
    args[n] = NULL;
    char *many = malloc(1 << 16);
    CHECK(frugal_as((uid_t)-1, many, 1 << 16, (const char *const *)args) == 0);
    CHECKF(strstr(many, "epoch 3/3"), "%s", many);
    free(many);
}

TEST(cli_trace_path_is_checked_before_training)
{
    CHECK(FRUGAL(out, "train", make_job(""), "--trace", "/nonexistent/dir/t.json") == 1);
    CHECKF(strstr(out, "--trace /nonexistent/dir/t.json: cannot create") && !strstr(out, "epoch 1"),
           "%s", out);
}

TEST(cli_eval_without_labels_says_so)
{
    CHECK(FRUGAL(out, "train", make_job(""), "--set", "job.epochs=1", "--set",
                 "energy.baseline_seconds=0") == 0);
    char ck[600], img[600];
    snprintf(ck, sizeof ck, "%s/run/checkpoint.bin", test_tmpdir());
    snprintf(img, sizeof img, "%s/img.gz", test_tmpdir());
    CHECK(FRUGAL(out, "eval", ck, img) == 1);
    CHECKF(strstr(out, "is an IDX image file: eval needs its labels too"), "%s", out);
}

/* A second run on a folder in use is refused, naming the run that holds it. */
TEST(cli_a_folder_in_use)
{
    const char *job = make_job("");
    char dir[600], err[256];
    snprintf(dir, sizeof dir, "%s/run", test_tmpdir());
    run_folder held;
    CHECK(run_folder_open(&held, dir, "the-first.cfg", err, sizeof err) == 0);
    CHECK(FRUGAL(out, "train", job) == 1);
    CHECKF(strstr(out, "is in use by another frugal run") && strstr(out, "the-first.cfg"), "%s", out);
    run_folder_close(&held);
}

/* An output folder that cannot be written: the error names it (as an unprivileged user, since
 * root may write anywhere). */
TEST(cli_output_folder_not_writable)
{
    const char *job = make_job("");
    char ro[600];
    snprintf(ro, sizeof ro, "%s/readonly", test_tmpdir());
    mkdir(ro, 0755);
    chmod(test_tmpdir(), 0755);   /* the job and data readable by the unprivileged user */
    uid_t uid = (uid_t)-1;
    if (geteuid() == 0)
        uid = 65534;   /* nobody: no NSS lookup in a static binary */
    else
        chmod(ro, 0555);
    char set[700];
    snprintf(set, sizeof set, "job.output=%s/sub", ro);
    int rc = frugal_as(uid, out, sizeof out, (const char *const[]){"train", job, "--set", set, NULL});
    CHECKF(rc == 1 && strstr(out, ro) && strstr(out, "Permission denied"), "rc %d: %s", rc, out);
}
