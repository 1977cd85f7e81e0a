/* The placement policies a job may name ([placement] policy, --policy): the job file's
 * vocabulary. What each one costs, and how a configuration is chosen by it, is
 * engine/placement/policy.h's. */
#ifndef FRUGAL_POLICY_NAME_H
#define FRUGAL_POLICY_NAME_H

typedef enum placement_policy { POLICY_TIME, POLICY_ENERGY, POLICY_EDP, POLICY_CARBON } placement_policy;

const char *policy_name(placement_policy p);
/* 0 with *out set, -1 for an unknown name. */
int policy_parse(const char *name, placement_policy *out);

#endif
