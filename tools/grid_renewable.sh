#!/usr/bin/env bash
# A machine's renewable power over time from a grid's production file: the columns whose name
# starts with "Solar" or "Wind" summed at each time, scaled so that the file's largest sum is
# PEAK_WATTS (the machine's share of a site's panels or turbines, at their best). Writes
# TIME,WATTS lines ([energy] renewable_trace, frugal join --renewable-trace, a scenario's
# [site] renewable_trace: energy/grid_trace.h).
#
#   tools/grid_renewable.sh ../shared/data/grid/gb_production.csv 150 > gb_150w.csv
set -euo pipefail
if [ $# -ne 2 ]; then
    echo "usage: $0 PRODUCTION.csv PEAK_WATTS > TRACE.csv" >&2
    exit 2
fi
awk -F, -v peak="$2" '
    NR == 1 {
        for (i = 2; i <= NF; i++)
            if ($i ~ /^(Solar|Wind)/) { use[i] = 1; names = names " " $i; found++ }
        if (!found) { print FILENAME ": no Solar or Wind column" > "/dev/stderr"; exit 2 }
        next
    }
    {
        s = 0
        for (i in use) s += ($i == "" ? 0 : $i)
        t[NR] = $1; v[NR] = s
        if (s > most) most = s
    }
    END {
        if (!found) exit 2
        if (!most) { print FILENAME ": no renewable production in it" > "/dev/stderr"; exit 2 }
        print "# renewable watts (" names " ) scaled to a peak of " peak " W"
        for (k = 2; k <= NR; k++) if (k in t) printf "%s,%.1f\n", t[k], v[k] / most * peak
    }' "$1"
