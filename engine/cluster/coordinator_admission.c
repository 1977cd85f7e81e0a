/* Who may join a coordinator, beyond holding the shared key (which the hub checked):
 *
 * - a node that names an identity (`frugal join --identity`) proves it: its signature of this
 *   session's binding (netio/key.h) verifies with the public key it sends, so the key cannot be
 *   borrowed from another session;
 * - with an allow file (`frugal train --allow FILE`), only identities listed there are admitted,
 *   each named by its line in the log and summary.json; the file is read again when it changes,
 *   and a node whose line was deleted is dropped (at the next message of any node, within a
 *   second of it);
 * - an identity (its public key, else its address) joins at most JOIN_BURST times within
 *   JOIN_WINDOW_S: a key holder that joins and hangs up over and over is refused, and its
 *   refusals are logged within the refusal log's budget. */
#include "engine/cluster/coordinator_internal.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

/* The log's name for n: its address, or its identity's name and key, and its address. */
static void name_node(peer_node *n)
{
    if (!n->has_identity)
        return;
    char hex[17];
    sodium_bin2hex(hex, sizeof hex, n->identity, 8);
    snprintf(n->name, sizeof n->name, "%s [id %s] at %s", n->identity_name, hex, n->addr);
}

/* 0, or -1 with why: a JOIN's identity is proven. */
static int prove_identity(coordinator *c, peer_node *n, const msg_join *j, const char **why)
{
    uint8_t binding[NETIO_BINDING_BYTES];
    if (!j->has_identity)
        return 0;
    if (netio_hub_peer_binding(c->hub, n->peer, binding) ||
        netio_identity_verify(j->identity, binding, j->signature)) {
        *why = "an identity whose signature of this session does not verify";
        return -1;
    }
    memcpy(n->identity, j->identity, sizeof n->identity);
    n->has_identity = 1;
    sodium_bin2hex(n->identity_name, 9, n->identity, 4);   /* unnamed: its first digits */
    return 0;
}

/* 0, or -1 with why: the allow file (if any) admits n. */
static int allowed(coordinator *c, peer_node *n, char *why, size_t whylen)
{
    if (!c->allowing)
        return 0;
    allow_list_refresh(&c->allow, clock_now_s(), c->log);
    const char *name = n->has_identity ? allow_list_find(&c->allow, n->identity) : NULL;
    if (!name) {
        snprintf(why, whylen, n->has_identity ? "its identity is not in the allow file %s"
                                              : "no identity, and the allow file %s admits machines by "
                                                "theirs (frugal join --identity FILE)", c->allow.path);
        return -1;
    }
    snprintf(n->identity_name, sizeof n->identity_name, "%s", name);
    return 0;
}

/* 0, or -1 with why: n's identity joined fewer than JOIN_BURST times in JOIN_WINDOW_S (this
 * join counted). */
static int join_rate(coordinator *c, peer_node *n, char *why, size_t whylen)
{
    uint8_t who[NETIO_ID_PUBLIC_BYTES];
    char host[64];
    snprintf(host, sizeof host, "%s", n->addr);
    char *colon = strrchr(host, ':');
    if (colon)
        *colon = 0;
    if (n->has_identity)
        memcpy(who, n->identity, sizeof who);
    else
        crypto_generichash(who, sizeof who, (const uint8_t *)host, strlen(host), NULL, 0);
    double now = clock_now_s();
    join_record *r = NULL, *oldest = &c->joins[0];
    for (int i = 0; i < JOIN_RECORDS && !r; i++) {
        if (c->joins[i].n && !memcmp(c->joins[i].who, who, sizeof who))
            r = &c->joins[i];
        else if (c->joins[i].last < oldest->last)
            oldest = &c->joins[i];
    }
    if (!r) {
        r = oldest;
        memset(r, 0, sizeof *r);
        memcpy(r->who, who, sizeof who);
    }
    double first = r->at[r->n % JOIN_BURST];   /* the JOIN_BURST-th join before this one */
    if (r->n >= JOIN_BURST && now - first < JOIN_WINDOW_S) {
        snprintf(why, whylen, "joins too often (%d times within %.0f s)", JOIN_BURST, JOIN_WINDOW_S);
        return -1;
    }
    r->at[r->n++ % JOIN_BURST] = now, r->last = now;
    return 0;
}

/* A JOIN refused: logged within the refusal log's budget (it may come often), the node told
 * why (it stops rather than trying again), its connection closed. */
static int refuse_join(coordinator *c, peer_node *n, const char *why)
{
    refusal_log_add(&c->refusals, c->log, clock_now_s(), n->name, why);
    size_t len = strlen(why) < PROTO_TEXT ? strlen(why) : PROTO_TEXT;
    netio_hub_send(c->hub, n->peer, MSG_REFUSED, why, len, NULL, 0);
    netio_hub_close(c->hub, n->peer, why);
    return -1;
}

int coordinator_admit(coordinator *c, peer_node *n, const msg_join *j)
{
    const char *proof = NULL;
    char why[300];
    if (prove_identity(c, n, j, &proof))
        return refuse_join(c, n, proof);
    if (allowed(c, n, why, sizeof why))
        return refuse_join(c, n, why);
    name_node(n);
    return join_rate(c, n, why, sizeof why) ? refuse_join(c, n, why) : 0;
}

void coordinator_check_revoked(coordinator *c)
{
    if (!c->allowing || !allow_list_refresh(&c->allow, clock_now_s(), c->log))
        return;
    for (int i = 0; i < c->nnodes; i++) {
        peer_node *n = &c->nodes[i];
        if (n->workers && !n->gone && !c->stopping && !allow_list_find(&c->allow, n->identity))
            coordinator_refuse(c, n, "its identity was removed from the allow file");
    }
}
