#include "engine/job/participation_name.h"

#include <string.h>

static const char *const names[] = {"always", "random", "green", "budget", "backup"};

const char *participation_name(participation_policy p)
{
    return p >= PARTICIPATION_ALWAYS && p <= PARTICIPATION_BACKUP ? names[p] : "?";
}

int participation_parse(const char *name)
{
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (!strcmp(name, names[i]))
            return i;
    return -1;
}
