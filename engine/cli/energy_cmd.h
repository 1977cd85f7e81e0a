/* The `frugal energy` command. */
#ifndef FRUGAL_ENERGY_CMD_H
#define FRUGAL_ENERGY_CMD_H

int energy_cmd_main(int argc, char **argv);

#endif
