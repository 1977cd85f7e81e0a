#include "frugal_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void child(const frugal_call *c, const char *bin, int fd, const char *const *args)
{
    dup2(fd, 1);
    dup2(fd, 2);
    alarm(300);   /* survives exec: a hung run dies with SIGALRM */
    if (c->uid != (uid_t)-1 && (setgid(65534) || setuid(c->uid)))
        _exit(125);
    if (c->empty_env)
        clearenv();
    for (int i = 0; c->env && c->env[i]; i++)
        putenv((char *)c->env[i]);
    char *argv[64] = {(char *)bin};
    for (int i = 0; args[i] && i < 62; i++)
        argv[i + 1] = (char *)args[i];
    execv(bin, argv);
    fprintf(stderr, "cannot run %s: %s\n", bin, strerror(errno));
    _exit(126);
}

static void binary(char *bin, size_t n, const char *name)
{
    const char *variant = getenv("FRUGAL_TEST_VARIANT");
    snprintf(bin, n, "build/%s/%s", variant ? variant : "release", name);
}

pid_t frugal_spawn(const frugal_call *c, const char *log, const char *const *args)
{
    return tool_spawn("frugal", c, log, args);
}

pid_t tool_spawn(const char *name, const frugal_call *c, const char *log, const char *const *args)
{
    char bin[256];
    binary(bin, sizeof bin, name);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            _exit(127);
        child(c, bin, fd, args);
    }
    return pid;
}

int frugal_run(const frugal_call *c, char *out, size_t n, const char *const *args)
{
    char bin[256];
    binary(bin, sizeof bin, "frugal");
    int fd[2];
    if (pipe(fd))
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        child(c, bin, fd[1], args);
    }
    close(fd[1]);
    size_t got = 0;
    char spill[4096];
    for (ssize_t r;;) {   /* read to the end, so the child never blocks on a full pipe */
        int room = got < n - 1;
        r = read(fd[0], room ? out + got : spill, room ? n - 1 - got : sizeof spill);
        if (r <= 0)
            break;
        if (room)
            got += (size_t)r;
    }
    out[got] = 0;
    close(fd[0]);
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) < 0)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
