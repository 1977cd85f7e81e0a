/* The frugal command as a user meets it: every mistake gets a message naming the file or the
 * argument, and nothing crashes. Runs build/VARIANT/frugal (make tests builds it too). */
#include "engine/job/run_folder.h"
#include "frugal_cli.h"
#include "synthetic.h"
#include "test.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char out[16384];

TEST(cli_a_folder_as_the_job_file)
{
    CHECK(FRUGAL(out, "train", test_tmpdir()) == 1);
    CHECKF(strstr(out, test_tmpdir()) && strstr(out, "is a directory, not a job file"), "%s", out);
}

/* A FIFO as the job file: refused at once (opening one for reading waited for a writer). */
TEST(cli_a_fifo_as_the_job_file)
{
    char fifo[600];
    snprintf(fifo, sizeof fifo, "%s/job.fifo", test_tmpdir());
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK(FRUGAL(out, "train", fifo) == 1);
    CHECKF(strstr(out, "job.fifo: is not a regular file, not a job file"), "%s", out);
    unlink(fifo);
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
    CHECK(frugal_run(&(frugal_call){(uid_t)-1, NULL, 0}, many, 1 << 16, (const char *const *)args) == 0);
    CHECKF(strstr(many, "epoch 3/3"), "%s", many);
    free(many);
}

/* A batch larger than the data set is the whole set, said and recorded (no buffers for samples
 * that are not there); a node's --workers has the job's range. */
TEST(cli_batch_larger_than_the_data_set_is_the_whole_set)
{
    char summary[600], text[16384], batch[64];
    CHECK(FRUGAL(out, "train", make_job(""), "--set", "job.batch=100000", "--set", "job.epochs=1",
                 "--set", "energy.baseline_seconds=0") == 0);
    CHECKF(strstr(out, "the job's batch of 100000 is more than the") && strstr(out, "epoch 1/1"),
           "%s", out);
    snprintf(summary, sizeof summary, "%s/run/summary.json", test_tmpdir());
    snprintf(batch, sizeof batch, "\"batch\": %d, ", SYN_IMAGES);
    CHECKF(test_read_text(summary, text, sizeof text) && strstr(text, batch) &&
           strstr(text, "\"batch_asked\": 100000"), "%s", text);
    CHECK(FRUGAL(out, "join", "127.0.0.1:9", "--key", "k", "--workers", "2000") == 2);
    CHECKF(strstr(out, "--workers 2000: a number from 0 (one per core) to 1024"), "%s", out);
}

/* Each option's wrong value is named with that option and what it should be. */
TEST(cli_wrong_values_name_their_option)
{
    static const char *const cases[][4] = {
        {"join", "--linger", "0", "--linger 0: seconds from 0.1 to 3600"},
        {"join", "--timeout", "5s", "--timeout 5s: seconds from 0.1 to 3600"},
        {"join", "--power-budget", "0", "--power-budget 0: watts, above 0"},
        {"join", "--slowdown", "0.5", "--slowdown 0.5: a factor from 1 to 100"},
        {"join", "--workers", "2.5", "--workers 2.5: a number from 0 (one per core) to 1024"},
        {"train", "--launch-timeout", "9999", "--launch-timeout 9999: seconds from 0.1 to 3600"},
        {"train", "--port", "0", "--port 0: a port from 1 to 65535"},
        {"train", "--wait-for", "", "--wait-for : a number of nodes from 0 to 64"},
        {"train", "--launcher", "maybe", "--launcher maybe: auto or none"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *const *c = cases[i];
        int rc = !strcmp(c[0], "join")
                     ? FRUGAL(out, "join", "127.0.0.1:9", "--key", "k", c[1], c[2])
                     : FRUGAL(out, "train", make_job(""), c[1], c[2]);
        CHECKF(rc == 2 && strstr(out, c[3]), "%s %s %s: rc %d, %s", c[0], c[1], c[2], rc, out);
    }
    CHECK(FRUGAL(out, "energy", "--rate", "0") == 2);
    CHECKF(strstr(out, "bad or unexpected argument '--rate 0'"), "%s", out);
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
    int rc = frugal_run(&(frugal_call){uid, NULL, 0}, out, sizeof out,
                        (const char *const[]){"train", job, "--set", set, NULL});
    CHECKF(rc == 1 && strstr(out, ro) && strstr(out, "Permission denied"), "rc %d: %s", rc, out);
}

/* The CPU path needs nothing from the environment: no PATH, HOME or library path. */
TEST(cli_trains_in_an_empty_environment)
{
    const char *const args[] = {"train", make_job(""), "--set", "job.epochs=1", "--set",
                                "energy.baseline_seconds=0", NULL};
    CHECKF(frugal_run(&(frugal_call){(uid_t)-1, NULL, 1}, out, sizeof out, args) == 0, "%s", out);
    CHECKF(strstr(out, "epoch 1/1"), "%s", out);
}

/* `frugal info` says what this machine can do, the cost of a cluster's cipher included. */
TEST(cli_info_says_what_this_machine_can_do)
{
    CHECK(FRUGAL(out, "info") == 0);
    CHECKF(strstr(out, "cpus online: ") && strstr(out, "kernel path: ") &&
           strstr(out, "measured FMA peak, one core: ") &&
           strstr(out, "cluster traffic, sealed and opened by one core: aes256gcm ") &&
           strstr(out, " GB/s\n"), "%s", out);
}

/* Ctrl-C says how to go on with the very command that ran (its --set overrides kept, which the
 * hint dropped before: it failed on the default folder), and that command resumes; a rerun
 * without --resume or --overwrite does not destroy the run. */
TEST(cli_interrupted_run_says_the_command_that_resumes_it)
{
    char output[700], set_output[760], log[760], text[1 << 14];
    snprintf(output, sizeof output, "%s/elsewhere", test_tmpdir());
    snprintf(set_output, sizeof set_output, "job.output=%s", output);
    snprintf(log, sizeof log, "%s/train.log", test_tmpdir());
    const char *args[] = {"train", make_job("slowdown = 20\n"), "--set", set_output, "--set",
                          "job.epochs=500", "--set", "energy.baseline_seconds=0", NULL};
    pid_t pid = frugal_spawn(&(frugal_call){(uid_t)-1, NULL, 0}, log, args);
    int started = 0;
    for (int i = 0; i < 600 && !started; i++, usleep(100 * 1000))
        started = strstr(test_read_text(log, text, sizeof text), "epoch 1/500") != NULL;
    kill(pid, SIGINT);
    int status = 0;
    waitpid(pid, &status, 0);
    test_read_text(log, text, sizeof text);
    char want[1200];
    snprintf(want, sizeof want, "continue with: frugal train %s --set %s --set job.epochs=500 --set "
             "energy.baseline_seconds=0 --resume\n", args[1], set_output);
    CHECKF(started && WIFEXITED(status) && WEXITSTATUS(status) == 130 && strstr(text, want),
           "wanted: %s\n%s", want, text);
    CHECK(FRUGAL(out, "train", args[1], "--set", set_output, "--set", "job.epochs=2") == 1);
    CHECKF(strstr(out, "holds a run already"), "%s", out);
    /* what the hint says, run (to the epoch after the one stopped in, not 500) */
    const char *in = strstr(text, "stopped by signal 2 in epoch ");
    int epoch = in ? atoi(in + strlen("stopped by signal 2 in epoch ")) : 0;
    char epochs[40], last[40];
    snprintf(epochs, sizeof epochs, "job.epochs=%d", epoch + 1);
    snprintf(last, sizeof last, "epoch %d/%d", epoch + 1, epoch + 1);
    CHECK(FRUGAL(out, "train", args[1], "--set", set_output, "--set", epochs, "--set",
                 "energy.baseline_seconds=0", "--resume") == 0);
    CHECKF(epoch > 0 && strstr(out, last) && strstr(out, "resuming"), "%s", out);
}

/* `./build.sh install PREFIX` puts a frugal that runs from anywhere, its examples and its docs
 * under PREFIX (release binary: the sanitizer passes check the code, not the install). */
TEST(cli_install_puts_frugal_its_examples_and_docs_under_a_prefix)
{
    const char *variant = getenv("FRUGAL_TEST_VARIANT");
    if (variant && strcmp(variant, "release")) {
        printf("  (the install is checked in the release pass)\n");
        return;
    }
    char cmd[2000], log[700];
    snprintf(log, sizeof log, "%s/install.log", test_tmpdir());
    snprintf(cmd, sizeof cmd, "./build.sh install %s/prefix > %s 2>&1 && cd / && "
             "%s/prefix/bin/frugal --version >> %s 2>&1", test_tmpdir(), log, test_tmpdir(), log);
    int rc = system(cmd);
    test_read_text(log, out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "build.sh: installed ") && strstr(out, " or later; kernel paths: portable, "),
           "%s", out);
    const char *files[] = {"share/frugal/examples/dahl-fashion-mnist.cfg",
                           "share/doc/frugal/README.md", "share/doc/frugal/docs/job-file.md"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[900];
        snprintf(path, sizeof path, "%s/prefix/%s", test_tmpdir(), files[i]);
        CHECKF(access(path, R_OK) == 0, "%s is missing\n%s", path, out);
    }
}

/* An option given to keygen is not a file name: no key written to "--help" or "--hlp". */
TEST(cli_keygen_takes_no_option_for_a_file)
{
    char out[1024];
    int rc = FRUGAL(out, "keygen", "--help");
    CHECKF(rc == 0 && strstr(out, "usage: frugal keygen KEYFILE"), "rc %d: %s", rc, out);
    rc = FRUGAL(out, "keygen", "--hlp");
    CHECKF(rc == 2 && strstr(out, "usage:"), "rc %d: %s", rc, out);
    CHECK(access("--help", F_OK) != 0 && access("--hlp", F_OK) != 0);
}
