/* summary.json's "cluster" section, from what the coordinator filled in (cluster_summary.h). */
#include "engine/report/report.h"

#include "common/json.h"

static const char *bool_json(int b) { return b ? "true" : "false"; }

static void write_node(FILE *f, const cluster_node_summary *n)
{
    fputs("{\"address\": ", f);
    json_string(f, n->address);
    fputs(", \"host\": ", f);
    json_string(f, n->host);
    fputs(", \"identity\": ", f);
    if (n->identity[0]) {
        json_string(f, n->identity);
        fputs(", \"identity_name\": ", f);
        json_string(f, n->identity_name);
    } else {
        fputs("null", f);
    }
    fprintf(f, ", \"workers\": %d, \"active_workers\": %d, \"kernel_path\": \"%s\"", n->workers,
            n->active_workers, n->kernel_path);
    json_fixed_field(f, "joined_after_s", n->joined_after_s, 2);
    fprintf(f, ", \"chunks\": %ld, \"probe_chunks\": %ld, \"chunks_stolen\": %ld, "
            "\"chunks_given_back\": %ld, \"chunks_summed_there\": %ld, \"chunks_late\": %ld, "
            "\"batches_dealt\": %ld, \"batches_present\": %ld", n->chunks, n->probe_chunks,
            n->chunks_stolen, n->chunks_given_back, n->chunks_summed_there, n->chunks_late,
            n->batches_dealt, n->batches_present);
    json_fixed_field(f, "share", n->share, 4);
    json_fixed_field(f, "img_per_s", n->img_per_s, 1);
    fprintf(f, ", \"bytes_sent\": %llu, \"bytes_received\": %llu", n->bytes_sent,
            n->bytes_received);
    json_fixed_field(f, "network_wait_s", n->network_wait_s, 3);
    json_fixed_field(f, "compute_s", n->compute_s, 3);
    json_fixed_field(f, "chunk_cost_ms", n->chunk_cost_ms, 3);
    json_fixed_field(f, "round_trip_lag_ms", n->round_trip_lag_ms, 3);
    json_fixed_field(f, "joules", n->joules, 3);
    json_fixed_field(f, "watts_computing", n->watts_computing, 3);
    json_number_field(f, "carbon_g_per_kwh", n->carbon_g_per_kwh, 0);
    json_number_field(f, "gco2e", n->gco2e, 0);
    fprintf(f, ", \"parked\": %s, \"energy\": ", bool_json(n->parked));
    json_string(f, n->energy);
    fputs(", \"devices\": ", f);
    json_string(f, n->devices);
    fprintf(f, ", \"estimated\": %s, \"cipher\": \"%s\", \"lost\": ", bool_json(n->estimated),
            n->cipher);
    if (n->gone)
        json_string(f, n->lost);
    else
        fputs("null", f);
    fputc('}', f);
}

void report_cluster_traffic_json(FILE *f, const cluster_traffic *t, int n)
{
    fputs(", \"traffic\": [", f);
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s{\"type\": \"%s\", \"sent\": %ld, \"sent_bytes\": %llu, \"received\": %ld, "
                "\"received_bytes\": %llu}", i ? ", " : "", t[i].type, t[i].sent, t[i].sent_bytes,
                t[i].received, t[i].received_bytes);
    }
    fputc(']', f);
}

void report_cluster_json(FILE *f, const cluster_summary *s)
{
    fputs("\"joules_every_machine\": ", f);
    json_fixed(f, s->joules_every_machine, 3);
    json_fixed_field(f, "joules_here", s->joules_here, 3);
    json_fixed_field(f, "joules_nodes", s->joules_nodes, 3);
    fprintf(f, ", \"joules_how\": \"%s\", \"listen\": ", s->joules_how);
    json_string(f, s->listen);
    fprintf(f, ", \"mode\": \"%s\", \"sync_every\": %d, \"compress\": %s, \"overlap\": %s, "
            "\"centered_clip\": %s, \"models_clipped\": %ld, \"models_not_waited_for\": %ld, "
            "\"rounds\": %ld, \"node_rounds_lost\": %ld, \"rounds_sharing_a_chunk\": %ld, "
            "\"weights_as_one_machine\": %s, \"weights_why\": ", s->mode, s->sync_every,
            bool_json(s->compress), bool_json(s->overlap), bool_json(s->centered_clip),
            s->models_clipped, s->models_skipped, s->rounds, s->node_rounds_lost, s->rounds_sharing_a_chunk,
            bool_json(!s->weights_why[0]));
    json_string(f, s->weights_why);
    json_number_field(f, "timeout_s", s->timeout_s, 0);
    fprintf(f, ", \"coordinator_chunks\": %ld", s->coordinator_chunks);
    json_fixed_field(f, "coordinator_share", s->coordinator_share, 4);
    fprintf(f, ", \"nodes_lost\": %ld, \"chunks_resent\": %ld, "
            "\"chunks_computed_by_the_fallback\": %ld, \"chunks_stolen\": %ld, "
            "\"chunks_taken_back\": %ld, \"chunks_late\": %ld, \"nodes\": [", s->nodes_lost,
            s->chunks_resent, s->chunks_by_the_fallback, s->chunks_stolen, s->chunks_taken_back,
            s->chunks_late);
    for (int i = 0; i < s->nnodes; i++) {
        fputs(i ? ", " : "", f);
        write_node(f, &s->nodes[i]);
    }
    fprintf(f, "], \"placement\": {\"policy\": \"%s\", \"nodes_pinned\": %s", s->policy,
            bool_json(s->nodes_pinned));
    json_number_field(f, "power_budget_watts", s->power_budget_watts, 0);
    json_number_field(f, "max_slowdown", s->max_slowdown, 0);
    json_fixed_field(f, "coordinator_img_per_s", s->coordinator_img_per_s, 1);
    json_fixed_field(f, "coordinator_watts", s->coordinator_watts, 3);
    json_number_field(f, "coordinator_carbon_g_per_kwh", s->coordinator_carbon_g_per_kwh, 0);
    fprintf(f, ", \"probe_every_batches\": %d, \"decisions_total\": %d, \"decisions\": [",
            s->probe_every_batches, s->decisions_total);
    for (int i = 0; i < s->ndecisions; i++) {
        fprintf(f, "%s{\"nodes_taking_work\": %d", i ? ", " : "", s->decisions[i].nodes_taking_work);
        json_fixed_field(f, "t", s->decisions[i].t, 3);
        fputs(", \"why\": ", f);
        json_string(f, s->decisions[i].why);
        fputc('}', f);
    }
    fputs("]}", f);
    report_cluster_traffic_json(f, s->traffic, s->ntraffic);
}
