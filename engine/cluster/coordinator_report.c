/* What the coordinator tells of its nodes: a line each after every epoch, and the cluster
 * section of summary.json (each node's share, traffic, waiting and energy; every machine's
 * joules added up; the placement policy's decisions). */
#include "engine/cluster/coordinator_internal.h"

#include "engine/placement/policy.h"
#include "netio/hub.h"
#include "ops/cpu.h"

#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

_Static_assert(MAX_NODES <= CLUSTER_SUMMARY_NODES && MAX_SHARE_DECISIONS <= CLUSTER_SUMMARY_DECISIONS,
               "a summary holds every node and decision");

/* Locked. Every machine's joules added up (a node's as it last reported them), and how they
 * were come by: "measured", "estimated", or "partly estimated". */
static double all_machines(const coordinator *c, double here_joules, int here_estimated,
                           const char **how)
{
    double joules = here_joules;
    int estimated = here_estimated, measured = !here_estimated;
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i].ready) {
            joules += c->nodes[i].joules;
            estimated |= c->nodes[i].estimated, measured |= !c->nodes[i].estimated;
        }
    *how = !estimated ? "measured" : measured ? "partly estimated" : "estimated";
    return joules;
}

/* Locked. Whether a node runs on this host (its name is this one's). */
static int node_here(const coordinator *c)
{
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i].ready && !c->nodes[i].gone && !strcmp(c->nodes[i].host, host))
            return 1;
    return 0;
}

/* Locked. In words, why a ready node got chunks in few of the batches it saw (synchronous),
 * and what would change it. */
static void say_why_little(const coordinator *c, const peer_node *n, FILE *f)
{
    if (n->gone || n->batches_present < 8 || n->batches_dealt * 10 >= n->batches_present ||
        c->cfg->sync_every || c->cfg->all_nodes)
        return;
    fprintf(f, "    it got chunks in %ld of %ld batches: %s ([placement] all_nodes = on gives "
            "it work anyway; [cluster] sync_every = 8 suits a slow link)\n", n->batches_dealt,
            n->batches_present, n->parked ? "the placement policy parked it, its joules per image "
            "being worth less than this machine's"
            : "a chunk there, with its round trip, would finish later than here, so this "
              "machine keeps them");
}

void coordinator_print_nodes(coordinator *c, FILE *f, double here_joules, int here_estimated)
{
    pthread_mutex_lock(&c->lock);
    refusal_log_flush(&c->refusals, c->log, clock_now_s());   /* what a window counted so far */
    if (c->mode->print_here)
        c->mode->print_here(c, f);
    for (int i = 0; i < c->nnodes; i++) {
        peer_node *n = &c->nodes[i];
        if (!n->ready)
            continue;
        if (!n->gone)
            netio_hub_peer_stats(c->hub, n->peer, &n->net);
        char dealing[160];   /* the mode's words: how its work came to it */
        c->mode->describe_node(c, n, dealing, sizeof dealing);
        fprintf(f, "  node %s (%s): %ld chunks%s, %.0f img/s, %.1f MB sent, %.1f MB received, "
                "%.2f s waiting on the network (%.2f ms a round trip), %.1f J %s%s%s%s\n", n->name,
                n->host, n->chunks, dealing, n->active_s > 0 ? (double)n->samples / n->active_s : 0,
                n->net.received / 1e6, n->net.sent / 1e6, n->wait_s, 1e3 * n->lag, n->joules, n->estimated ? "estimated" : "measured",
                n->parked && !n->gone ? "; parked by the placement policy" : "",
                n->gone ? "; lost: " : "", n->gone ? n->left_why : "");
        say_why_little(c, n, f);
    }
    const char *how;
    double joules = all_machines(c, here_joules, here_estimated, &how);
    fprintf(f, "  every machine: %.1f J %s (here %.1f J, nodes %.1f J)%s\n", joules, how, here_joules,
            joules - here_joules, node_here(c) && here_estimated
                ? "; a node runs on this host too: its estimate and this one's each count the "
                  "whole machine" : "");
    pthread_mutex_unlock(&c->lock);
}

/* Locked: a ready node's figures; `all`: the chunks of every machine. */
static void summarize_node(coordinator *c, peer_node *n, long all, cluster_node_summary *o)
{
    if (!n->gone)
        netio_hub_peer_stats(c->hub, n->peer, &n->net);
    snprintf(o->address, sizeof o->address, "%s", n->addr);
    if (n->has_identity) {
        sodium_bin2hex(o->identity, sizeof o->identity, n->identity, sizeof n->identity);
        snprintf(o->identity_name, sizeof o->identity_name, "%s", n->identity_name);
    }
    snprintf(o->host, sizeof o->host, "%s", n->host);
    snprintf(o->energy, sizeof o->energy, "%s", n->energy);
    snprintf(o->devices, sizeof o->devices, "%s", n->devices);
    snprintf(o->cipher, sizeof o->cipher, "%s", n->net.cipher);
    snprintf(o->lost, sizeof o->lost, "%s", n->gone ? n->left_why : "");
    o->gone = n->gone;
    o->workers = n->workers, o->active_workers = n->running;
    o->kernel_path = ops_isa_name((ops_isa)n->isa);
    o->joined_after_s = n->joined_at;
    o->chunks = n->chunks, o->probe_chunks = n->probes, o->chunks_stolen = n->stolen;
    o->chunks_given_back = n->given_back, o->chunks_summed_there = n->summed;
    o->chunks_late = n->late;
    o->batches_dealt = n->batches_dealt, o->batches_present = n->batches_present;
    o->share = all ? (double)n->chunks / (double)all : 0;
    o->img_per_s = n->active_s > 0 ? (double)n->samples / n->active_s : 0;
    o->bytes_sent = n->net.received, o->bytes_received = n->net.sent;   /* as the node sees them */
    o->network_wait_s = n->wait_s, o->compute_s = n->compute_s;
    o->chunk_cost_ms = 1e3 * n->cost, o->round_trip_lag_ms = 1e3 * n->lag;
    o->joules = n->joules, o->watts_computing = n->watts, o->carbon_g_per_kwh = n->carbon;
    o->gco2e = n->grams;
    o->parked = n->parked, o->estimated = n->estimated;
}

void coordinator_summarize(coordinator *c, double here_joules, int here_estimated,
                           cluster_summary *out)
{
    pthread_mutex_lock(&c->lock);
    memset(out, 0, sizeof *out);
    double joules = all_machines(c, here_joules, here_estimated, &out->joules_how);
    out->joules_every_machine = joules, out->joules_here = here_joules;
    out->joules_nodes = joules - here_joules;
    long remote = 0;
    for (int i = 0; i < c->nnodes; i++)
        remote += c->nodes[i].chunks;
    long here = c->local_chunks + c->fallback_chunks, all = remote + here;
    snprintf(out->listen, sizeof out->listen, "%s", c->listen);
    out->mode = c->mode->name;
    out->sync_every = c->cfg->sync_every, out->compress = c->cfg->compress;
    out->overlap = c->cfg->overlap, out->centered_clip = c->cfg->centered_clip;
    out->models_clipped = c->models_clipped, out->models_skipped = c->models_skipped;
    out->rounds = c->rounds, out->node_rounds_lost = c->rounds_lost;
    out->rounds_sharing_a_chunk = c->rounds_shared;
    snprintf(out->weights_why, sizeof out->weights_why, "%s", c->weights_why);
    out->timeout_s = c->timeout_s;
    out->coordinator_chunks = here, out->coordinator_share = all ? (double)here / (double)all : 1.0;
    out->nodes_lost = c->lost_nodes, out->chunks_resent = c->resent_chunks;
    out->chunks_by_the_fallback = c->fallback_chunks, out->chunks_stolen = c->stolen_chunks;
    out->chunks_taken_back = c->taken_back, out->chunks_late = c->late_chunks;
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i].ready)
            summarize_node(c, &c->nodes[i], all, &out->nodes[out->nnodes++]);
    out->policy = policy_name(c->limits.policy), out->nodes_pinned = c->cfg->all_nodes;
    out->power_budget_watts = c->limits.budget_w, out->max_slowdown = c->limits.max_slowdown;
    out->coordinator_img_per_s = c->local_img_s, out->coordinator_watts = c->local_w;
    out->coordinator_carbon_g_per_kwh = c->carbon.value;
    out->probe_every_batches = PROBE_EVERY, out->decisions_total = c->decisions_total;
    out->ndecisions = c->ndecisions;
    for (int i = 0; i < c->ndecisions; i++) {
        cluster_decision_summary *d = &out->decisions[i];
        d->t = c->decisions[i].t, d->nodes_taking_work = c->decisions[i].taking;
        snprintf(d->why, sizeof d->why, "%s", c->decisions[i].why);
    }
    for (unsigned t = 0; t < MSG_TYPES && out->ntraffic < CLUSTER_TRAFFIC_TYPES; t++) {
        long sent = atomic_load(&c->traffic_msgs[0][t]), received = atomic_load(&c->traffic_msgs[1][t]);
        if (sent || received)
            out->traffic[out->ntraffic++] = (cluster_traffic){
                proto_msg_name(t), sent, received, atomic_load(&c->traffic_bytes[0][t]),
                atomic_load(&c->traffic_bytes[1][t])};
    }
    pthread_mutex_unlock(&c->lock);
}
