/* Which machines of a cluster take work under a placement policy (engine/placement/policy.h).
 *
 * Each member (member 0 is the coordinator, which always takes work) is measured at a speed and
 * a power while it computes, and has its grid's carbon intensity. The options are the
 * coordinator plus the k members with the least policy cost per sample (joules, or grams for
 * `carbon`), for every k: an option's speed is the sum of its members' (chunks go to each in
 * proportion to its speed) and its power the sum of theirs. The policy picks among the options
 * with its budget and slowdown cap, so `energy` leaves out the members whose joules per sample
 * are not worth the time they save, and a budget parks the most expensive members first. Members
 * not measured yet always take work: that is how they get measured. */
#ifndef FRUGAL_CLUSTER_SHARE_H
#define FRUGAL_CLUSTER_SHARE_H

#include "engine/placement/policy.h"

typedef struct member_figures {
    double img_per_s, watts;         /* while computing; 0: not measured yet */
    double carbon_g_per_kwh;         /* 0: the policy limits' figure */
} member_figures;

/* Sets in[i] to 1 for the members that take work, 0 for those parked; returns how many take
 * work. With no member measured beyond the coordinator, or a policy of plain time without a
 * budget, every member does. */
int cluster_choose(const policy_limits *l, const member_figures *m, int n, int *in);

/* The member's own cost per sample under the policy (joules, grams or seconds). */
double cluster_share_member_cost(const policy_limits *l, const member_figures *m);

/* How a synchronous batch's chunks are dealt (the coordinator's deal, and frugal simulate's):
 * one by one to whichever member would finish its share first, a member finishing k chunks
 * after lag + ceil(k / workers) * cost. Member 0 (the coordinator) keeps at least one, so that
 * its speed stays measured; members with workers = 0 take none. Sets quota[i]; returns the
 * chunks members other than 0 take. */
typedef struct deal_member {
    double lag;                  /* seconds a round trip adds; 0 for member 0 */
    double cost;                 /* seconds per chunk on one worker */
    int workers;
} deal_member;
int cluster_share_deal(const deal_member *m, int n, int nchunks, int *quota);

/* Periodic averaging's split: shares u[j] of `units` chunk-batches that finish together at T,
 * u_j = (T - lag_j) / per_unit_j; a member whose lag alone outlasts T gets none. */
typedef struct share_cost {
    double per_unit, lag;        /* seconds per chunk-batch once computing; seconds any share adds */
} share_cost;
void cluster_share_balance(const share_cost *m, int n, double units, double *u);

#endif
