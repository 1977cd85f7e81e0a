#!/usr/bin/env bash
# The simulator's scale (./build.sh bench simulate): examples/simulate/lab-10000.scn, 10,000
# machines (6,000 desktops under France's 2020 trace, 4,000 laptops at another site), one epoch
# of the cifar-shaped job (50,000 samples), in each mode: how long the simulation takes on this
# machine against the 60 s the issue allows, and against the training time it simulates.
# Prints: bench simulate MODE machines=N wall_s=X simulated_s=Y faster_than_real=Y/X
#         within_60s=yes|no joules=J gco2e=G busiest_mb=B
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
scn=examples/simulate/lab-10000.scn

for mode in gossip "average --set scenario.every=16" sync; do
    name=${mode%% *}
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    ./build/release/frugal simulate "$scn" --set scenario.mode=$mode -o "$out/$name" > "$out/$name.txt"
    end=$(date +%s.%N)
    /usr/bin/python3 - "$out/$name/summary.json" "$name" "$start" "$end" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
sim = s["simulated"]
wall = float(sys.argv[4]) - float(sys.argv[3])
nodes = s["cluster"]["nodes"]
busiest = max(n["bytes_sent"] + n["bytes_received"] for n in nodes) / 1e6
print(f"bench simulate {sys.argv[2]} machines={sim['machines']} wall_s={wall:.2f} "
      f"simulated_s={sim['seconds']:.4g} faster_than_real={sim['seconds'] / wall:.3g} "
      f"within_60s={'yes' if wall < 60 else 'no'} joules={sim['joules']:.4g} gco2e={sim['gco2e']:.4g} "
      f"busiest_mb={busiest:.3g}")
PY
done
