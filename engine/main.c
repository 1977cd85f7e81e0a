/* frugal: the command-line entry point. */
#include "ops/cpu.h"
#include "ops/peak.h"
#include "runtime/clock.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int usage(FILE *f)
{
    fprintf(f, "usage: frugal COMMAND [ARGS]\n\n"
               "commands:\n"
               "  info      this machine: CPUs, timer, kernel path, measured peak\n"
               "  help      this text\n");
    return f == stderr ? 2 : 0;
}

static int cmd_info(void)
{
    printf("cpus online: %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
    printf("task timer: %s\n", clock_source());
    ops_isa isa = ops_isa_active();
    printf("kernel path: %s (best this CPU supports: %s)\n", ops_isa_name(isa),
           ops_isa_name(ops_isa_supported()));
    printf("measured FMA peak, one core: %.1f GFLOP/s\n", ops_peak_gflops(isa, 0.2));
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
