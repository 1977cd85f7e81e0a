#include "engine/cli/signals.h"

#include "energy/limit_state.h"

#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

_Atomic int signals_stop;

static const int handled[] = {SIGINT, SIGTERM, SIGHUP, SIGALRM};
static struct sigaction previous[4];

static void say(const char *s)
{
    ssize_t ignored = write(STDERR_FILENO, s, strlen(s));   /* async-signal-safe */
    (void)ignored;
}

/* Before ending at once: the limits this process changed (energy/limit_state.h). */
static void put_limits_back(void)
{
    if (limit_state_restore_from_signal())
        say("frugal: an NVIDIA GPU's power limit is left changed: the next frugal to start, or "
            "'frugal energy --restore', puts it back\n");
}

static void on_signal(int sig)
{
    if (atomic_load_explicit(&signals_stop, memory_order_relaxed)) {
        say("\nfrugal: second signal: stopping now, without saving\n");
        put_limits_back();
        _exit(128 + sig);
    }
    atomic_store_explicit(&signals_stop, sig, memory_order_relaxed);
    say("\nfrugal: stopping at the next batch boundary to save a checkpoint "
        "(signal again to stop at once)\n");
}

/* A node: the first signal leaves, and SIGALRM ends the process if it has not ended by then. */
static void on_leave_signal(int sig)
{
    int first = atomic_load_explicit(&signals_stop, memory_order_relaxed);
    if (sig == SIGALRM || first) {
        if (!first) {   /* an alarm that is not ours (a test's limit): as it would have been */
            signal(SIGALRM, SIG_DFL);
            raise(SIGALRM);
        }
        put_limits_back();
        _exit(128 + first);
    }
    atomic_store_explicit(&signals_stop, sig, memory_order_relaxed);
    say("\nfrugal join: leaving the cluster (its chunks go back to the coordinator)\n");
    alarm(SIGNALS_LEAVE_S);
}

static void install(void (*handler)(int), int count)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    atomic_store(&signals_stop, 0);
    for (int i = 0; i < count; i++)
        sigaction(handled[i], &sa, &previous[i]);
    for (int i = count; i < 4; i++)
        sigaction(handled[i], NULL, &previous[i]);   /* kept as it is, restored as it was */
}

void signals_install(void) { install(on_signal, 3); }

void signals_install_leaving(void) { install(on_leave_signal, 4); }

void signals_restore(void)
{
    for (int i = 0; i < 4; i++)
        sigaction(handled[i], &previous[i], NULL);
}
