/* summary.json's "gossip" section, from what the peer filled in (gossip_summary.h). */
#include "engine/report/report.h"

#include "common/json.h"

#include <math.h>

static void write_peer(FILE *f, const gossip_peer_summary *p)
{
    fputs("{\"id\": ", f);
    json_string(f, p->id);
    fputs(", \"address\": ", f);
    json_string(f, p->address);
    fputs(", \"state\": ", f);
    json_string(f, p->state);
    fputs(", \"why\": ", f);
    if (p->why[0])
        json_string(f, p->why);
    else
        fputs("null", f);
    fprintf(f, ", \"pushes_in\": %ld, \"pushes_out\": %ld, \"pushes_late\": %ld, \"bytes_sent\": "
            "%llu, \"bytes_received\": %llu", p->pushes_in, p->pushes_out, p->pushes_late,
            p->bytes_sent, p->bytes_received);
    json_fixed_field(f, "late_ms", p->late_ms, 2);
    json_fixed_field(f, "joules", p->joules, 3);
    fprintf(f, ", \"estimated\": %s, \"final_in\": %s}", p->estimated ? "true" : "false",
            p->final_in ? "true" : "false");
}

void report_gossip_json(FILE *f, const gossip_summary *s)
{
    fputs("\"id\": ", f);
    json_string(f, s->id);
    fputs(", \"address\": ", f);
    json_string(f, s->address);
    fprintf(f, ", \"topology\": \"%s\", \"neighbours\": %d, \"every\": %d, \"peers_waited_for\": %d",
            s->topology, s->neighbours, s->every, s->peers_waited_for);
    json_fixed_field(f, "participation", s->participation, 3);
    if (s->shard_count)
        fprintf(f, ", \"shard\": \"%d/%d\"", s->shard_index, s->shard_count);
    else
        fputs(", \"shard\": null", f);
    fputs(", \"joined_from\": ", f);
    if (s->joined_from[0]) {
        json_string(f, s->joined_from);
        fprintf(f, ", \"joined_at_epoch\": %d", s->joined_at_epoch);
    } else {
        fputs("null", f);
    }
    fprintf(f, ", \"rounds\": %ld, \"rounds_taken_part\": %ld, \"pushes_in\": %ld, \"pushes_out\": "
            "%ld, \"pushes_late\": %ld", s->rounds, s->rounds_taken_part, s->pushes_in,
            s->pushes_out, s->pushes_late);
    json_fixed_field(f, "wait_s", s->wait_s, 3);
    json_number_field(f, "weight", s->weight, 0);
    json_number_field(f, "consensus_distance", s->consensus_distance, 0);
    fprintf(f, ", \"bytes_sent\": %llu, \"bytes_received\": %llu, \"final_models\": %d",
            s->bytes_sent, s->bytes_received, s->final_models);
    json_number_field(f, "final_test_acc", s->final_test_acc, 0);
    json_number_field(f, "final_test_loss", s->final_test_loss, 0);
    json_fixed_field(f, "joules_every_peer", s->joules_every_peer, 3);
    fprintf(f, ", \"joules_how\": \"%s\", \"peers\": [", s->joules_estimated ? "estimated" : "measured");
    for (int i = 0; i < s->npeers; i++) {
        fputs(i ? ", " : "", f);
        write_peer(f, &s->peers[i]);
    }
    fputc(']', f);
}
