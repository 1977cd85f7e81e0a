/* A fake RAPL package counter for end-to-end tests of the energy policies (not part of frugal):
 * a sysfs tree that a frugal process reads as FRUGAL_SYSFS_ROOT, and a loop that moves its
 * counter at declared watts for the cores that process keeps busy. */
#ifndef FRUGAL_TEST_FAKE_RAPL_H
#define FRUGAL_TEST_FAKE_RAPL_H

#include <sys/types.h>

/* root/sys/class/powercap/intel-rapl:0 with a counter at 1 J (root: at most 600 bytes). */
void fake_rapl_tree(const char *root);
/* Moves the counter while pid runs, at 10 W idle, 20 W with one core busy and 80 W more for
 * each further core, counting the time pid's threads wanted a core, up to every core (so
 * other load on the machine does not move the figures), never above the package's power limit
 * where the tree has one (constraint_0_power_limit_uw). Returns pid's exit status once it has
 * exited. */
int fake_rapl_drive(const char *root, pid_t pid);
/* fake_rapl_drive, and a SIGINT to pid once its log (a file) holds pattern times times, or
 * after seconds without: a run as long as the windows a policy needs, on a machine of any
 * speed. */
int fake_rapl_drive_until(const char *root, pid_t pid, const char *log, const char *pattern,
                          int times, double seconds);

#endif
