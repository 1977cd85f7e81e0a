/* The participation policies a job may name ([placement] participation): which machines take
 * part in each round. How each decides is engine/placement/participation.h's. */
#ifndef FRUGAL_PARTICIPATION_NAME_H
#define FRUGAL_PARTICIPATION_NAME_H

typedef enum participation_policy {
    PARTICIPATION_ALWAYS,        /* every machine, every round */
    PARTICIPATION_RANDOM,        /* a share drawn each round (a baseline) */
    PARTICIPATION_GREEN,         /* machines under an intensity or on surplus renewable power */
    PARTICIPATION_BUDGET,        /* grams of CO2e spread over the deadline */
    PARTICIPATION_BACKUP         /* every machine, the k slowest not waited for */
} participation_policy;
#define PARTICIPATION_NAMES "always, random, green, budget or backup"

const char *participation_name(participation_policy p);
/* The policy, or -1 for an unknown name. */
int participation_parse(const char *name);

#endif
