#include "engine/cluster/late_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int late_open(late_model *m, long nparams)
{
    memset(m, 0, sizeof *m);
    m->n = nparams;
    m->base = malloc(sizeof(float) * (size_t)nparams);
    m->start = malloc(sizeof(float) * (size_t)nparams);
    return m->base && m->start ? 0 : -1;
}

void late_close(late_model *m)
{
    free(m->base);
    free(m->start);
    memset(m, 0, sizeof *m);
}

void late_reset(late_model *m, const float *w, uint64_t synced)
{
    memcpy(m->base, w, sizeof(float) * (size_t)m->n);
    memcpy(m->start, w, sizeof(float) * (size_t)m->n);
    m->older = m->last = 0;
    m->synced = synced;
}

int late_round_begin(late_model *m, const float *w, uint64_t r, char *err, size_t errlen)
{
    if ((m->older && m->last) || r <= m->last || r <= m->synced) {
        snprintf(err, errlen, "round %llu while the averages of rounds %llu and %llu are due",
                 (unsigned long long)r, (unsigned long long)m->older, (unsigned long long)m->last);
        return -1;
    }
    if (m->last)   /* its change, W - start, is start - base from now on */
        m->older = m->last;
    memcpy(m->start, w, sizeof(float) * (size_t)m->n);
    m->last = r;
    return 0;
}

void late_change(const late_model *m, const float *w, float *out)
{
    for (long i = 0; i < m->n; i++)
        out[i] = w[i] - m->start[i];
}

int late_apply(late_model *m, uint64_t q, const float *mean, float *w, char *err, size_t errlen)
{
    if (q != m->synced + 1) {
        snprintf(err, errlen, "the average of round %llu after that of round %llu",
                 (unsigned long long)q, (unsigned long long)m->synced);
        return -1;
    }
    float *b = m->base, *s = m->start;
    if (q == m->older) {          /* W = G + the later round's change */
        for (long i = 0; i < m->n; i++)
            w[i] += mean[i] - (s[i] - b[i]), b[i] += mean[i], s[i] = b[i];
        m->older = 0;
    } else if (q == m->last) {    /* nothing after it: W = G */
        for (long i = 0; i < m->n; i++)
            b[i] += mean[i], w[i] = s[i] = b[i];
        m->last = 0;
    } else {                      /* no part in it */
        for (long i = 0; i < m->n; i++)
            w[i] += mean[i], b[i] += mean[i], s[i] += mean[i];
    }
    m->synced = q;
    return 0;
}
