#include "energy/history.h"

#include <stdlib.h>
#include <string.h>

int history_init(power_history *h, int nsensors)
{
    memset(h, 0, sizeof *h);
    h->nsensors = nsensors;
    h->interval = HISTORY_FIRST_INTERVAL;
    h->points = malloc(HISTORY_POINTS * sizeof *h->points);
    return h->points ? 0 : -1;
}

void history_free(power_history *h)
{
    free(h->points);
    h->points = NULL;
    h->n = 0;
}

/* Keeps points 0, 2, 4, ... and the last one: half as many, twice as far apart. */
static void thin(power_history *h)
{
    int kept = 0;
    for (int i = 0; i < h->n; i += 2)
        h->points[kept++] = h->points[i];
    if (h->n % 2 == 0)
        h->points[kept++] = h->points[h->n - 1];
    h->n = kept;
    h->interval *= 2;
}

void history_offer(power_history *h, const history_point *p)
{
    if (!h->points || (h->n && p->t - h->points[h->n - 1].t < h->interval))
        return;
    if (h->n == HISTORY_POINTS)
        thin(h);
    h->points[h->n++] = *p;
}
