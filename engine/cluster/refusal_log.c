#include "engine/cluster/refusal_log.h"

#include <string.h>

static void remember(refusal_log *r, const char *addr)
{
    char host[64];   /* the address without its port: one machine, many connections */
    snprintf(host, sizeof host, "%s", addr);
    char *colon = strrchr(host, ':');
    if (colon && colon != host)
        *colon = 0;
    for (int i = 0; i < r->naddrs; i++)
        if (!strcmp(r->addrs[i], host))
            return;
    if (r->naddrs < REFUSAL_LOG_ADDRS)
        snprintf(r->addrs[r->naddrs++], sizeof r->addrs[0], "%s", host);
    else
        r->other_addrs = 1;
}

void refusal_log_flush(refusal_log *r, FILE *f, double now)
{
    if (r->more) {
        fprintf(f, "cluster: %ld more connections refused in %.0f s, from", r->more,
                now - r->window_start);
        for (int i = 0; i < r->naddrs; i++)
            fprintf(f, "%s %s", i ? "," : "", r->addrs[i]);
        fprintf(f, "%s\n", r->other_addrs ? " and others" : "");
    }
    r->more = 0, r->naddrs = 0, r->other_addrs = 0;
}

void refusal_log_add(refusal_log *r, FILE *f, double now, const char *addr, const char *why)
{
    if (!r->lines && !r->more)
        r->window_start = now;
    if (now - r->window_start >= REFUSAL_LOG_WINDOW_S) {
        refusal_log_flush(r, f, now);
        r->window_start = now, r->lines = 0;
    }
    if (r->lines < REFUSAL_LOG_LINES) {
        r->lines++;
        fprintf(f, "cluster: connection from %s refused: %s\n", addr, why);
    } else {
        r->more++;
        remember(r, addr);
    }
}
