/* frugal: the command-line entry point. */
#include "runtime/clock.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int usage(FILE *f)
{
    fprintf(f, "usage: frugal COMMAND [ARGS]\n\n"
               "commands:\n"
               "  info      this machine: CPUs, timer\n"
               "  help      this text\n");
    return f == stderr ? 2 : 0;
}

static int cmd_info(void)
{
    printf("cpus online: %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
    printf("task timer: %s\n", clock_source());
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage(stderr);
    if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
        return usage(stdout);
    if (!strcmp(argv[1], "info"))
        return cmd_info();
    fprintf(stderr, "frugal: unknown command '%s'\n", argv[1]);
    return usage(stderr);
}
