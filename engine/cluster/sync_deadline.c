/* Deadlines of the chunks sent to nodes (synchronous training). A node that takes chunks and
 * then stalls (its link kept alive by keepalives, so the hub never calls it lost) would hold its
 * batch, and the run, for good. So every chunk sent has a deadline from that node's measured
 * times (coordinator_deadline: a margin over the seconds it is expected to take, its lag and
 * then its rounds of chunks at its cost per chunk). Past it, the chunk is computed here
 * by the fallback engine: its gradients are the same wherever they are computed, so the weights
 * stay one machine's. What the node sends of it later is ignored; a node late LATE_LIMIT times
 * in a row is dropped, named, with the reason.
 *
 * A signal on the coordinator (the run stops at the batch's end to save a checkpoint) shortens
 * every deadline to half the timeout from then, so that it saves and exits within the timeout
 * whatever the nodes do. */
#include "engine/cluster/sync_internal.h"

#include <math.h>
#include <stdio.h>

#define LATE_LIMIT 3

double sync_deadline(const coordinator *c, const peer_node *n, const slot *s)
{
    return coordinator_deadline(c, n->cost <= 0 ? 0 : n->lag + ceil((s->ahead + 1.0) / n->running) * n->cost);
}

int sync_was_abandoned(const peer_node *n, uint64_t seq, uint32_t chunk)
{
    int kept = n->nabandoned < MAX_ABANDONED ? n->nabandoned : MAX_ABANDONED;
    for (int i = 0; i < kept; i++)
        if (n->abandoned[i].seq == seq && n->abandoned[i].chunk == (int)chunk)
            return 1;
    return 0;
}

/* Chunk s is taken from its node, which is no longer counted as computing it. */
static void abandon(coordinator *c, slot *s, double now, int stopping)
{
    peer_node *n = &c->nodes[s->node];
    double waited = now - s->sent_at;
    int at = n->nabandoned++ % MAX_ABANDONED;
    n->abandoned[at].seq = s->a.seq, n->abandoned[at].chunk = s->a.chunk;
    n->group -= s->a.seq == n->group_seq;   /* what its lag is measured against */
    if (!--n->inflight)
        n->active_s += now;
    double rounds = ceil((s->ahead + 1.0) / n->running), seen = (waited - n->lag) / rounds;
    if (!stopping && seen > n->cost)   /* it is at least this slow: the deal sees it */
        n->cost = seen;
    if (s->recalled == 1)
        sync_recall_over(c, s, 0);
    coordinator_trace_node(c, n, "chunk past its deadline, computed elsewhere", s->sent_at, now);
    if (s->probe) {
        sync_slot_free(s);   /* computed here anyway */
    } else {
        s->state = SLOT_BACK, s->node = -1;
        c->late_chunks++;
    }
    if (stopping)
        return;
    n->late++;
    fprintf(c->log, "cluster: node %s late: chunk %d of batch %llu not back after %.1f s (its "
            "deadline, from its measured times); computed here\n", n->name, s->a.chunk,
            (unsigned long long)s->a.seq, waited);
    if (++n->late_in_row == LATE_LIMIT) {
        char why[160];
        snprintf(why, sizeof why, "late with %d chunks in a row (each past its deadline)",
                 LATE_LIMIT);
        coordinator_refuse(c, n, why);
    }
}

double sync_check_deadlines(coordinator *c)
{
    sync_state *ss = sync_of(c);
    double now = clock_now_s(), next = INFINITY;
    int stopping = coordinator_stopping(c), taken = 0;
    for (int i = 0; i < ss->nslots; i++) {
        slot *s = &ss->slots[i];
        if (s->state != SLOT_SENT || s->node < 0)
            continue;
        double due = coordinator_due(c, s->due);
        if (now >= due) {
            abandon(c, s, now, stopping);
            taken++;
        } else if (due - now < next) {
            next = due - now;
        }
    }
    if (taken)
        pthread_cond_signal(&ss->fallback_wake);
    return next;
}
