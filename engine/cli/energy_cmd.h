/* The `frugal energy` command. */
#ifndef FRUGAL_ENERGY_CMD_H
#define FRUGAL_ENERGY_CMD_H

int cmd_energy(int argc, char **argv);

#endif
