#include "engine/job/policy_name.h"

#include <string.h>

static const char *const names[] = {"time", "energy", "edp", "carbon"};

const char *policy_name(placement_policy p)
{
    return (unsigned)p < sizeof names / sizeof names[0] ? names[p] : "?";
}

int policy_parse(const char *name, placement_policy *out)
{
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i])) {
            *out = (placement_policy)i;
            return 0;
        }
    return -1;
}
