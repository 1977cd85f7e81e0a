/* What the coordinator tells of its nodes: a line each after every epoch, and the cluster
 * section of summary.json (each node's share, traffic, waiting and energy; every machine's
 * joules added up; the placement policy's decisions). */
#include "engine/cluster/coordinator_internal.h"

#include "common/json.h"
#include "engine/placement/policy.h"
#include "netio/hub.h"
#include "ops/cpu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

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

void coordinator_print_nodes(coordinator *c, FILE *f, double here_joules, int here_estimated)
{
    pthread_mutex_lock(&c->lock);
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
                "%.2f s waiting on the network (%.2f ms a round trip), %.1f J %s%s%s%s\n", n->addr,
                n->host, n->chunks, dealing, n->active_s > 0 ? (double)n->samples / n->active_s : 0,
                n->net.received / 1e6, n->net.sent / 1e6, n->wait_s, 1e3 * n->lag, n->joules, n->estimated ? "estimated" : "measured",
                n->parked && !n->gone ? "; parked by the placement policy" : "",
                n->gone ? "; lost: " : "", n->gone ? n->left_why : "");
    }
    const char *how;
    double joules = all_machines(c, here_joules, here_estimated, &how);
    fprintf(f, "  every machine: %.1f J %s (here %.1f J, nodes %.1f J)\n", joules, how, here_joules,
            joules - here_joules);
    pthread_mutex_unlock(&c->lock);
}

char *coordinator_summary_json(coordinator *c, double here_joules, int here_estimated)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    pthread_mutex_lock(&c->lock);
    const char *how;
    double joules = all_machines(c, here_joules, here_estimated, &how);
    fprintf(f, "\"joules_every_machine\": %.3f, \"joules_here\": %.3f, \"joules_nodes\": %.3f, "
            "\"joules_how\": \"%s\", ", joules, here_joules, joules - here_joules, how);
    long remote = 0;
    for (int i = 0; i < c->nnodes; i++)
        remote += c->nodes[i].chunks;
    long all = remote + c->local_chunks + c->fallback_chunks;
    fputs("\"listen\": ", f);
    json_string(f, c->listen);
    fprintf(f, ", \"mode\": \"%s\", \"sync_every\": %d, \"compress\": %s, \"overlap\": %s, "
            "\"rounds\": %ld, \"node_rounds_lost\": %ld, \"rounds_sharing_a_chunk\": %ld",
            c->mode->name, c->cfg->sync_every,
            c->cfg->compress ? "true" : "false", c->cfg->overlap ? "true" : "false", c->rounds,
            c->rounds_lost, c->rounds_shared);
    fprintf(f, ", \"weights_as_one_machine\": %s, \"weights_why\": ",
            c->weights_why[0] ? "false" : "true");
    json_string(f, c->weights_why);
    fprintf(f, ", \"timeout_s\": %g, \"coordinator_chunks\": %ld, \"coordinator_share\": %.4f, "
            "\"nodes_lost\": %ld, \"chunks_resent\": %ld, \"chunks_computed_by_the_fallback\": %ld, "
            "\"chunks_stolen\": %ld, \"chunks_taken_back\": %ld, \"nodes\": [", c->timeout_s,
            c->local_chunks + c->fallback_chunks,
            all ? (double)(c->local_chunks + c->fallback_chunks) / (double)all : 1.0, c->lost_nodes,
            c->resent_chunks, c->fallback_chunks, c->stolen_chunks, c->taken_back);
    for (int i = 0, first = 1; i < c->nnodes; i++) {
        peer_node *n = &c->nodes[i];
        if (!n->ready)
            continue;
        if (!n->gone)
            netio_hub_peer_stats(c->hub, n->peer, &n->net);
        fprintf(f, "%s{\"address\": ", first ? "" : ", ");
        json_string(f, n->addr);
        fputs(", \"host\": ", f);
        json_string(f, n->host);
        fprintf(f, ", \"workers\": %d, \"active_workers\": %d, \"kernel_path\": \"%s\", "
                "\"joined_after_s\": %.2f, "
                "\"chunks\": %ld, \"probe_chunks\": %ld, \"chunks_stolen\": %ld, "
                "\"chunks_given_back\": %ld, \"chunks_summed_there\": %ld, "
                "\"batches_dealt\": %ld, \"batches_present\": %ld, "
                "\"share\": %.4f, \"img_per_s\": %.1f, \"bytes_sent\": %llu, "
                "\"bytes_received\": %llu, \"network_wait_s\": %.3f, \"compute_s\": %.3f, "
                "\"chunk_cost_ms\": %.3f, \"round_trip_lag_ms\": %.3f, \"joules\": %.3f, \"watts_computing\": %.3f, \"carbon_g_per_kwh\": %g, "
                "\"parked\": %s, \"energy\": ", n->workers, n->running, ops_isa_name((ops_isa)n->isa),
                n->joined_at, n->chunks, n->probes, n->stolen, n->given_back, n->summed,
                n->batches_dealt, n->batches_present, all ? (double)n->chunks / (double)all : 0,
                n->active_s > 0 ? (double)n->samples / n->active_s : 0,
                (unsigned long long)n->net.received, (unsigned long long)n->net.sent, n->wait_s,
                n->compute_s, 1e3 * n->cost, 1e3 * n->lag, n->joules, n->watts, n->carbon, n->parked ? "true" : "false");
        json_string(f, n->energy);
        fputs(", \"devices\": ", f);
        json_string(f, n->devices);
        fprintf(f, ", \"estimated\": %s, \"cipher\": \"%s\", \"lost\": ",
                n->estimated ? "true" : "false", n->net.cipher);
        if (n->gone)
            json_string(f, n->left_why);
        else
            fputs("null", f);
        fputc('}', f);
        first = 0;
    }
    fprintf(f, "], \"placement\": {\"policy\": \"%s\", \"nodes_pinned\": %s, "
            "\"power_budget_watts\": %g, \"max_slowdown\": %g, \"coordinator_img_per_s\": %.1f, \"coordinator_watts\": %.3f, "
            "\"coordinator_carbon_g_per_kwh\": %g, \"probe_every_batches\": %d, "
            "\"decisions_total\": %d, \"decisions\": [", policy_name(c->limits.policy),
            c->cfg->all_nodes ? "true" : "false", c->limits.budget_w, c->limits.max_slowdown,
            c->local_img_s, c->local_w, c->carbon.value, PROBE_EVERY, c->decisions_total);
    for (int i = 0; i < c->ndecisions; i++) {
        fprintf(f, "%s{\"t\": %.3f, \"nodes_taking_work\": %d, \"why\": ", i ? ", " : "",
                c->decisions[i].t, c->decisions[i].taking);
        json_string(f, c->decisions[i].why);
        fputc('}', f);
    }
    fputs("]}", f);
    pthread_mutex_unlock(&c->lock);
    if (fclose(f)) {
        free(text);
        return NULL;
    }
    return text;
}
