#!/usr/bin/env bash
# Where and when to train (./build.sh bench green): the participation policies against `always`
# on the real 2020 grid traces of France and Great Britain (../shared/data/grid/, ENTSO-E via
# "Let's Wait Awhile", Wiesner et al. 2021), over several weeks of 2020.
#
#   simulated   examples/simulate/green-fr-gb.scn (the cifar-shaped job, 400 epochs of 50,000
#               samples, about a day on four machines) with two machines in France and two in
#               Great Britain, and with three and one; each week's `always` run sets the
#               deadline (1.25 times its time) and the budget (0.7 times its grams) of the others
#   loopback    (tools/bench_green_loopback.sh) real processes replaying one week
#
# Time to a target accuracy is time to the same samples trained: every policy trains every
# sample of every epoch (a round's share goes to the machines taking part), so the same epochs
# reach the same accuracy as `always` (the loopback part measures it).
# Prints per policy, machine mix and week:
#   bench green sim mix=M week=DATE policy=P gco2e=G gco2e_saved_pct=S time_s=T time_added_pct=A
# and per policy and mix over the weeks: ... weeks=N gco2e_saved_pct=MEAN (min..max)
#   time_added_pct=MEAN (min..max) aim_met=yes|no (at least 30% saved, at most 25% more time)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f ../shared/data/grid/fr_ci.csv ] || [ ! -f ../shared/data/grid/gb_ci.csv ]; then
    echo "bench green: the 2020 grid traces are not in ../shared/data/grid/ (fr_ci.csv, gb_ci.csv; docs/green.md)" >&2
    exit 2
fi
frugal=./build/release/frugal
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
scn=examples/simulate/green-fr-gb.scn
weeks="2020-01-06 2020-02-10 2020-03-16 2020-04-20 2020-05-25 2020-06-29 2020-08-03 2020-09-07 2020-10-12 2020-11-16"

total() {   # the simulated seconds and grams of a summary
    /usr/bin/python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["simulated"]; print(s["seconds"], s["gco2e"])' "$1"
}

for mix in "2 2" "3 1"; do
    set -- $mix
    tag="${1}fr${2}gb"
    lines="$out/$tag.txt"
    : > "$lines"
    # the scenario with this mix's counts, its paths made absolute
    here="$PWD/examples/simulate"
    sed -e "/^name = fr$/{n;s/^count = .*/count = $1/}" -e "/^name = gb$/{n;s/^count = .*/count = $2/}" \
        -e "s|^job = |job = $here/|" -e "s|^carbon_trace = |carbon_trace = $here/|" "$scn" > "$out/$tag.scn"
    for week in $weeks; do
        run() {   # policy name, more --set: prints "seconds grams"
            local dir="$out/$tag-$week-$1"
            shift
            "$frugal" simulate "$out/$tag.scn" --set "scenario.start=$week 00:00" "$@" -o "$dir" > "$dir.txt"
            total "$dir/summary.json"
        }
        read -r t0 g0 < <(run always --set scenario.green_policy=always)
        deadline=$(/usr/bin/python3 -c "print(1.25 * $t0)")
        budget=$(/usr/bin/python3 -c "print(0.7 * $g0)")
        for policy in always random green budget; do
            read -r t g < <(run "$policy" --set "scenario.green_policy=$policy" \
                --set "scenario.green_deadline_s=$deadline" --set "scenario.budget_g=$budget")
            /usr/bin/python3 - "$tag" "$week" "$policy" "$t0" "$g0" "$t" "$g" <<'PY' | tee -a "$lines"
import sys
tag, week, policy = sys.argv[1:4]
t0, g0, t, g = map(float, sys.argv[4:8])
print(f"bench green sim mix={tag} week={week} policy={policy} gco2e={g:.1f} "
      f"gco2e_saved_pct={100 * (g0 - g) / g0:.1f} time_s={t:.0f} time_added_pct={100 * (t - t0) / t0:.1f}")
PY
        done
    done
    /usr/bin/python3 - "$lines" <<'PY'
import re, sys
rows = {}
for line in open(sys.argv[1]):
    f = dict(re.findall(r"(\w+)=(\S+)", line))
    rows.setdefault((f["mix"], f["policy"]), []).append((float(f["gco2e_saved_pct"]), float(f["time_added_pct"])))
for (mix, policy), v in rows.items():
    s = [x[0] for x in v]; a = [x[1] for x in v]
    met = all(x >= 30 for x in s) and all(x <= 25 for x in a)
    print(f"bench green sim mix={mix} policy={policy} weeks={len(v)} gco2e_saved_pct={sum(s)/len(s):.1f} "
          f"({min(s):.1f}..{max(s):.1f}) time_added_pct={sum(a)/len(a):.1f} ({min(a):.1f}..{max(a):.1f}) "
          f"aim_met={'yes' if met else 'no'}")
PY
done
