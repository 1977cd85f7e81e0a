/* frugal simulate: a scenario's time, joules, carbon and bytes (engine/sim/), machine profiles
 * calibrated from runs, and a search over machines and modes. */
#ifndef FRUGAL_SIMULATE_CMD_H
#define FRUGAL_SIMULATE_CMD_H

int simulate_cmd_main(int argc, char **argv);

#endif
