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
    fprintf(f, ", \"workers\": %d, \"active_workers\": %d, \"kernel_path\": \"%s\", "
            "\"joined_after_s\": %.2f, \"chunks\": %ld, \"probe_chunks\": %ld, "
            "\"chunks_stolen\": %ld, \"chunks_given_back\": %ld, \"chunks_summed_there\": %ld, "
            "\"batches_dealt\": %ld, \"batches_present\": %ld, \"share\": %.4f, "
            "\"img_per_s\": %.1f, \"bytes_sent\": %llu, \"bytes_received\": %llu, "
            "\"network_wait_s\": %.3f, \"compute_s\": %.3f, \"chunk_cost_ms\": %.3f, "
            "\"round_trip_lag_ms\": %.3f, \"joules\": %.3f, \"watts_computing\": %.3f, "
            "\"carbon_g_per_kwh\": %g, \"parked\": %s, \"energy\": ", n->workers,
            n->active_workers, n->kernel_path, n->joined_after_s, n->chunks, n->probe_chunks,
            n->chunks_stolen, n->chunks_given_back, n->chunks_summed_there, n->batches_dealt,
            n->batches_present, n->share, n->img_per_s, n->bytes_sent, n->bytes_received,
            n->network_wait_s, n->compute_s, n->chunk_cost_ms, n->round_trip_lag_ms, n->joules,
            n->watts_computing, n->carbon_g_per_kwh, bool_json(n->parked));
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

void report_cluster_json(FILE *f, const cluster_summary *s)
{
    fprintf(f, "\"joules_every_machine\": %.3f, \"joules_here\": %.3f, \"joules_nodes\": %.3f, "
            "\"joules_how\": \"%s\", \"listen\": ", s->joules_every_machine, s->joules_here,
            s->joules_nodes, s->joules_how);
    json_string(f, s->listen);
    fprintf(f, ", \"mode\": \"%s\", \"sync_every\": %d, \"compress\": %s, \"overlap\": %s, "
            "\"rounds\": %ld, \"node_rounds_lost\": %ld, \"rounds_sharing_a_chunk\": %ld, "
            "\"weights_as_one_machine\": %s, \"weights_why\": ", s->mode, s->sync_every,
            bool_json(s->compress), bool_json(s->overlap), s->rounds, s->node_rounds_lost,
            s->rounds_sharing_a_chunk, bool_json(!s->weights_why[0]));
    json_string(f, s->weights_why);
    fprintf(f, ", \"timeout_s\": %g, \"coordinator_chunks\": %ld, \"coordinator_share\": %.4f, "
            "\"nodes_lost\": %ld, \"chunks_resent\": %ld, \"chunks_computed_by_the_fallback\": %ld, "
            "\"chunks_stolen\": %ld, \"chunks_taken_back\": %ld, \"nodes\": [", s->timeout_s,
            s->coordinator_chunks, s->coordinator_share, s->nodes_lost, s->chunks_resent,
            s->chunks_by_the_fallback, s->chunks_stolen, s->chunks_taken_back);
    for (int i = 0; i < s->nnodes; i++) {
        fputs(i ? ", " : "", f);
        write_node(f, &s->nodes[i]);
    }
    fprintf(f, "], \"placement\": {\"policy\": \"%s\", \"nodes_pinned\": %s, "
            "\"power_budget_watts\": %g, \"max_slowdown\": %g, \"coordinator_img_per_s\": %.1f, "
            "\"coordinator_watts\": %.3f, \"coordinator_carbon_g_per_kwh\": %g, "
            "\"probe_every_batches\": %d, \"decisions_total\": %d, \"decisions\": [", s->policy,
            bool_json(s->nodes_pinned), s->power_budget_watts, s->max_slowdown,
            s->coordinator_img_per_s, s->coordinator_watts, s->coordinator_carbon_g_per_kwh,
            s->probe_every_batches, s->decisions_total);
    for (int i = 0; i < s->ndecisions; i++) {
        fprintf(f, "%s{\"t\": %.3f, \"nodes_taking_work\": %d, \"why\": ", i ? ", " : "",
                s->decisions[i].t, s->decisions[i].nodes_taking_work);
        json_string(f, s->decisions[i].why);
        fputc('}', f);
    }
    fputs("]}", f);
}
