/* Rank 0 of an OAR job starts the others through oarsh (launch_spawn.h). */
#include "engine/cli/launch_spawn.h"

#include "common/clock.h"
#include "common/env_switches.h"
#include "common/text.h"
#include "engine/job/config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void option(FILE *f, const char *name, const char *value)
{
    fprintf(f, " %s ", name);
    text_shell_word(f, value);
}

char *launch_spawn_command(const launch_plan *p, const run_options *o, const launch_request *rq,
                           int r, const char *bin, const char *cwd)
{
    char *text = NULL, number[32];
    size_t len;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    fputs("cd ", f);
    text_shell_word(f, cwd);
    fputs(" && exec ", f);
    text_shell_word(f, bin);
    if (p->mode == CLUSTER_GOSSIP) {
        char listen[HOSTLIST_NAME + 8], advertise[HOSTLIST_NAME + 8], output[700];
        launch_addresses(p, p->env.hosts.name[r], r, listen, advertise, sizeof listen);
        option(f, "train", o->job);
        fputs(" --launcher none", f);
        option(f, "--listen", listen);
        option(f, "--advertise", advertise);
        option(f, "--peer", p->coordinator);
        option(f, "--key", p->key_path);
        for (int i = 0; o->overrides && o->overrides[i]; i++)
            option(f, "--set", o->overrides[i]);
        snprintf(output, sizeof output, "job.output=%s/peer-%d", p->output, r);
        option(f, "--set", output);
    } else {
        option(f, "join", p->coordinator);
        option(f, "--key", p->key_path);
        snprintf(number, sizeof number, "%g", p->wait_s);   /* the coordinator may start later */
        option(f, "--linger", number);
        const char *workers = launch_override(o->overrides, "execution.workers");
        const char *devices = launch_override(o->overrides, "execution.devices");
        if (workers)
            option(f, "--workers", workers);
        if (devices)
            option(f, "--devices", devices);
        if (rq->identity)   /* a path: each host reads its own file there */
            option(f, "--identity", rq->identity);
    }
    if (o->timeout_s > 0) {
        snprintf(number, sizeof number, "%g", o->timeout_s);
        option(f, "--timeout", number);
    }
    if (fclose(f)) {
        free(text);
        return NULL;
    }
    return text;
}

/* argv: the remote shell's words (FRUGAL_LAUNCH_RSH split at spaces), the host, the command. */
static pid_t start(const char *host, char *command)
{
    const char *rsh = env_switch_value(ENV_LAUNCH_RSH);
    char words[512], *argv[34];
    int n = 0;
    snprintf(words, sizeof words, "%s", rsh ? rsh : LAUNCH_SPAWN_RSH);
    for (char *save, *w = strtok_r(words, " ", &save); w && n < 31; w = strtok_r(NULL, " ", &save))
        argv[n++] = w;
    argv[n++] = (char *)host;
    argv[n++] = command;
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "frugal: cannot run %s to start frugal on %s: %s\n", argv[0], host,
                strerror(errno));
        _exit(127);
    }
    return pid;
}

static _Atomic int stop_now = SIGTERM;   /* a start failed: stop those started */

int launch_spawn(launch_children *c, const launch_plan *p, const run_options *o,
                 const launch_request *rq, FILE *out, char *err, size_t errlen)
{
    char bin[PATH_MAX], cwd[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", bin, sizeof bin - 1);
    *c = (launch_children){0};
    if (len <= 0 || !getcwd(cwd, sizeof cwd)) {
        snprintf(err, errlen, "cannot find this binary or folder to start the other hosts: %s",
                 strerror(errno));
        return -1;
    }
    bin[len] = 0;
    c->pid = calloc((size_t)p->env.size, sizeof *c->pid);
    for (int r = 1; c->pid && r < p->env.size; r++) {
        char *command = launch_spawn_command(p, o, rq, r, bin, cwd);
        pid_t pid = command ? start(p->env.hosts.name[r], command) : -1;
        if (pid > 0)
            fprintf(out, "launch: started rank %d on %s: %s\n", r, p->env.hosts.name[r], command);
        free(command);
        if (pid < 0) {
            snprintf(err, errlen, "cannot start rank %d on %s: %s", r, p->env.hosts.name[r],
                     command ? strerror(errno) : "out of memory");
            launch_spawn_wait(c, 0, &stop_now, out);
            return -1;
        }
        c->pid[c->n++] = pid;
    }
    if (!c->pid) {
        snprintf(err, errlen, "out of memory");
        launch_spawn_wait(c, 0, &stop_now, out);
        return -1;
    }
    fflush(out);
    return 0;
}

int launch_spawn_wait(launch_children *c, int gossip, const _Atomic int *stop, FILE *out)
{
    double deadline = gossip ? INFINITY : clock_now_s() + LAUNCH_NODES_END_S, kill_at = INFINITY;
    int left = c->n, failed = 0;
    while (left) {
        for (int i = 0; i < c->n; i++) {
            int status;
            if (!c->pid[i] || waitpid(c->pid[i], &status, WNOHANG) != c->pid[i])
                continue;
            int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            fprintf(out, "launch: rank %d ended%s%d\n", i + 1, code ? " with status " : ": ", code);
            failed |= code != 0;
            c->pid[i] = 0, left--;
        }
        int ask = left && ((stop && atomic_load(stop)) || clock_now_s() > deadline);
        int sig = !ask ? 0 : kill_at == INFINITY ? SIGTERM : clock_now_s() > kill_at ? SIGKILL : 0;
        if (sig == SIGTERM)   /* once; SIGKILL (once) 10 s later */
            fprintf(out, "launch: %s: stopping the other ranks\n",
                    clock_now_s() > deadline ? "they did not end" : "stopped");
        kill_at = sig == SIGTERM ? clock_now_s() + 10 : sig == SIGKILL ? 1e300 : kill_at;
        for (int i = 0; sig && i < c->n; i++)
            if (c->pid[i])
                kill(c->pid[i], sig);
        if (left)
            usleep(100 * 1000);
    }
    fflush(out);
    free(c->pid);
    *c = (launch_children){0};
    return failed;
}
