/* A gossip peer's figures: gossip.csv (a line a round), its line after each epoch, and
 * summary.json's "gossip" section (engine/report/gossip_summary.h). */
#include "engine/cluster/gossip_internal.h"

#include "common/clock.h"

#include <math.h>
#include <string.h>

static int peers_up(const gossip_peer *g)
{
    int n = 0;
    for (int i = 0; i < g->nmembers; i++)
        n += g->members[i].state == MEMBER_UP || g->members[i].state == MEMBER_FINISHED;
    return n;
}

void gossip_log_round(gossip_peer *g, int epoch, long batch, int took_part, int targets,
                      int expected, int received, double wait_s)
{
    pthread_mutex_lock(&g->lock);
    fprintf(g->csv, "%llu,%d,%ld,%.3f,%d,%d,%d,%d,%ld,%.4f,%.6g,%.6g,%d,%llu,%llu\n",
            (unsigned long long)(g->round - 1), epoch, batch, clock_now_s() - g->started_at,
            took_part, targets, expected, received, g->pushes_late, wait_s, g->w, g->consensus,
            peers_up(g), g->bytes_sent, g->bytes_received);
    fflush(g->csv);
    pthread_mutex_unlock(&g->lock);
}

static const char *state_name(const gossip_member *m)
{
    switch (m->state) {
    case MEMBER_KNOWN: return "known";
    case MEMBER_UP: return "up";
    case MEMBER_FINISHED: return "finished";
    default:
        return !strcmp(m->gone_why, "finished") ? "finished"
               : !strncmp(m->gone_why, "left", 4) ? "left"
               : !strncmp(m->gone_why, "dropped", 7) ? "dropped" : "lost";
    }
}

void gossip_print(gossip_peer *g, FILE *f)
{
    pthread_mutex_lock(&g->lock);
    fprintf(f, "gossip: round %llu, %d peer%s up; exchanged in %ld rounds, waited %.2f s; "
            "consensus distance %.3g; sent %.2f MB, received %.2f MB\n",
            (unsigned long long)g->round, peers_up(g), peers_up(g) == 1 ? "" : "s",
            g->rounds_taken_part, g->wait_s, g->consensus, 1e-6 * (double)g->bytes_sent,
            1e-6 * (double)g->bytes_received);
    pthread_mutex_unlock(&g->lock);
}

void gossip_note_final_test(gossip_peer *g, double acc, double loss)
{
    g->final_test_acc = acc, g->final_test_loss = loss;
}

void gossip_summarize(gossip_peer *g, gossip_summary *out)
{
    memset(out, 0, sizeof *out);
    int estimated;
    double here = gossip_joules_here(g, &estimated);
    pthread_mutex_lock(&g->lock);
    snprintf(out->id, sizeof out->id, "%016llx", (unsigned long long)g->id);
    snprintf(out->address, sizeof out->address, "%s", g->addr);
    const job_config *cfg = g->cfg;
    out->topology = config_gossip_topology_name(cfg->gossip_topology);
    out->neighbours = cfg->gossip_neighbours, out->every = cfg->gossip_every;
    out->participation = cfg->gossip_participation, out->peers_waited_for = cfg->gossip_peers;
    out->shard_count = cfg->shard_count, out->shard_index = g->shard_index;
    snprintf(out->joined_from, sizeof out->joined_from, "%s", g->joined_from);
    out->joined_at_epoch = g->joined_at_epoch;
    out->rounds = (long)g->round, out->rounds_taken_part = g->rounds_taken_part;
    out->pushes_in = g->pushes_in, out->pushes_out = g->pushes_out, out->pushes_late = g->pushes_late;
    out->wait_s = g->wait_s, out->weight = g->w, out->consensus_distance = g->consensus;
    out->bytes_sent = g->bytes_sent, out->bytes_received = g->bytes_received;
    out->final_models = g->final_models;
    out->final_test_acc = g->final_test_acc, out->final_test_loss = g->final_test_loss;
    out->joules_every_peer = here, out->joules_estimated = estimated;
    for (int i = 0; i < g->nmembers && out->npeers < GOSSIP_SUMMARY_PEERS; i++) {
        const gossip_member *m = &g->members[i];
        gossip_peer_summary *p = &out->peers[out->npeers++];
        snprintf(p->id, sizeof p->id, "%016llx", (unsigned long long)m->id);
        snprintf(p->address, sizeof p->address, "%s", m->addr);
        snprintf(p->state, sizeof p->state, "%s", state_name(m));
        snprintf(p->why, sizeof p->why, "%s", m->state == MEMBER_GONE ? m->gone_why : "");
        p->pushes_in = m->pushes_in, p->pushes_out = m->pushes_out, p->pushes_late = m->pushes_late;
        p->bytes_sent = m->bytes_sent, p->bytes_received = m->bytes_received;
        p->joules = m->joules, p->estimated = m->estimated, p->final_in = m->final_model != NULL;
        p->late_ms = 1e3 * m->late_s;
        out->joules_every_peer += m->joules;
        out->joules_estimated |= m->estimated;
    }
    pthread_mutex_unlock(&g->lock);
}
