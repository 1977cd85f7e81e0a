#include "engine/cli/signals.h"

#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

_Atomic int signals_stop;

static const int handled[] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction previous[3];

static void say(const char *s)
{
    ssize_t ignored = write(STDERR_FILENO, s, strlen(s));   /* async-signal-safe */
    (void)ignored;
}

static void on_signal(int sig)
{
    if (atomic_load_explicit(&signals_stop, memory_order_relaxed)) {
        say("\nfrugal: second signal: stopping now, without saving\n");
        _exit(128 + sig);
    }
    atomic_store_explicit(&signals_stop, sig, memory_order_relaxed);
    say("\nfrugal: stopping at the next batch boundary to save a checkpoint "
        "(signal again to stop at once)\n");
}

void signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    atomic_store(&signals_stop, 0);
    for (int i = 0; i < 3; i++)
        sigaction(handled[i], &sa, &previous[i]);
}

void signals_restore(void)
{
    for (int i = 0; i < 3; i++)
        sigaction(handled[i], &previous[i], NULL);
}
