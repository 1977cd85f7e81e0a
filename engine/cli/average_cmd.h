/* frugal average MODEL.bin MODEL.bin... -o OUT.bin: the mean of models of one job, offline (the
 * peers' of a gossip run, or any replicas): parameters and momentum averaged, equal weights. */
#ifndef FRUGAL_AVERAGE_CMD_H
#define FRUGAL_AVERAGE_CMD_H

int average_cmd_main(int argc, char **argv);

#endif
