#!/usr/bin/env bash
# The loopback part of ./build.sh bench green: real processes replaying a week of 2020 grid
# traces (../shared/data/grid/: France for the coordinator and one node, Great Britain for one
# node; FRUGAL_BENCH_WEEK, default 2020-03-16) while they train the cifar-shaped job on
# Fashion-MNIST (examples/cifar-shaped-fashion-mnist.cfg: 8192 images, 1000 test images after
# every epoch, periodic averaging every 4 steps, 1 worker each, FRUGAL_BENCH_EPOCHS epochs), the
# week squeezed into the time `always` takes (its first run measures it; trace_speed then set so that it spans 80% of the week). For each policy: the
# grams of every machine (each estimated from its own CPU time, FRUGAL_MODEL_SCOPE=process, with
# the power profile 0, 7, 14 W: the joules the job adds, as in the simulated part) and the
# training seconds until the test accuracy `always` ends with, less a point, is first reached. The three processes share this host's
# cores: a machine left out frees them for the others, so time here is not what separate
# machines would take (the simulated part of the bench is the measure of time).
# Prints: bench green loopback week=DATE policy=P gco2e=G gco2e_saved_pct=S
#         seconds_to_target=T time_added_pct=A test_acc=ACC
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f ../shared/data/grid/fr_ci.csv ] || [ ! -f ../shared/data/grid/gb_ci.csv ]; then
    echo "bench green: the 2020 grid traces are not in ../shared/data/grid/ (fr_ci.csv, gb_ci.csv; docs/green.md)" >&2
    exit 2
fi
export FRUGAL_MODEL_SCOPE=process
week=${FRUGAL_BENCH_WEEK:-2020-03-16}
epochs=${FRUGAL_BENCH_EPOCHS:-20}
speed=10000
out=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$out"' EXIT
port=$((31000 + $$ % 300 * 3))
frugal=./build/release/frugal
"$frugal" keygen "$out/key" > /dev/null
grid=$(cd ../shared/data/grid && pwd)
common=(--overwrite --set job.epochs="$epochs" --set execution.workers=1 --set data.limit=8192
        --set energy.baseline_seconds=0 --set data.test_limit=1000 --set "energy.power_profile=0,7,14"
        --set data.test_images=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
        --set data.test_labels=/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz
        --set "energy.trace_start=$week 00:00" --set "energy.carbon_trace=$grid/fr_ci.csv"
        --set cluster.mode=average --set cluster.sync_every=4 --set placement.green_g_per_kwh=120)

run() {   # name, more --set: a coordinator and two nodes (France, Great Britain)
    local name=$1
    shift
    port=$((port + 1))
    "$frugal" join "127.0.0.1:$port" --key "$out/key" --workers 1 --timeout 30 --power-profile 0,7,14 \
        --carbon-trace "$grid/fr_ci.csv" > "$out/$name-fr.log" 2>&1 &
    pids+=($!)
    "$frugal" join "127.0.0.1:$port" --key "$out/key" --workers 1 --timeout 30 --power-profile 0,7,14 \
        --carbon-trace "$grid/gb_ci.csv" > "$out/$name-gb.log" 2>&1 &
    pids+=($!)
    "$frugal" train examples/cifar-shaped-fashion-mnist.cfg "${common[@]}" --set "energy.trace_speed=$speed" \
        "$@" --set "job.output=$out/$name" \
        --listen "127.0.0.1:$port" --key "$out/key" --wait-for 2 > "$out/$name.log" 2>&1
    wait
    pids=()
    date +%s.%N > "$out/$name.end"
}

figures() {   # name, target accuracy (or "none"): "grams seconds_to_target final_acc seconds"
    /usr/bin/python3 - "$out/$1" "$2" <<'PY'
import csv, json, os, sys
d, target = sys.argv[1], sys.argv[2]
s = json.load(open(os.path.join(d, "summary.json")))
rows = list(csv.DictReader(open(os.path.join(d, "metrics.csv")))) or [{"test_acc": "0", "seconds": "0"}]
grams = s["energy"]["this_process"]["gco2e"] + sum(n.get("gco2e", 0) for n in s["cluster"]["nodes"])
t, reached, total = 0.0, None, 0.0
for r in rows:
    t += float(r["seconds"])
    if target != "none" and reached is None and float(r["test_acc"]) >= float(target):
        reached = t
print(grams, reached if reached is not None else "never", rows[-1]["test_acc"], t)
PY
}

start=$(date +%s.%N)
run always --set placement.participation=always   # how long the job takes here
took=$(/usr/bin/python3 -c "print(round($(cat "$out/always.end") - $start, 1))")
speed=$(/usr/bin/python3 -c "print(round(0.8 * 7 * 86400 / max($took, 1)))")
echo "bench green loopback: always runs ${took} s here: the week replayed at $speed trace seconds a second"
run always --set placement.participation=always
read -r g0 _ acc0 t0 < <(figures always none)
target=$(/usr/bin/python3 -c "print($acc0 - 0.01)")
read -r g0 r0 acc0 t0 < <(figures always "$target")
deadline=$(/usr/bin/python3 -c "print(int(1.25 * $t0 * $speed))")
budget=$(/usr/bin/python3 -c "print(0.7 * $g0)")
for policy in always random green budget; do
    [ "$policy" = always ] || run "$policy" --set "placement.participation=$policy" \
        --set "job.deadline=${deadline}s" --set "placement.budget_g=$budget"
    read -r g r acc t < <(figures "$policy" "$target")
    /usr/bin/python3 - "$week" "$policy" "$g0" "$r0" "$g" "$r" "$acc" <<'PY'
import sys
week, policy, g0, r0, g, r, acc = sys.argv[1:8]
g0, g = float(g0), float(g)
added = f"{100 * (float(r) - float(r0)) / float(r0):.1f}" if r != "never" and r0 != "never" else "n/a"
print(f"bench green loopback week={week} policy={policy} gco2e={g:.4g} "
      f"gco2e_saved_pct={100 * (g0 - g) / g0:.1f} seconds_to_target={r} time_added_pct={added} "
      f"test_acc={float(acc):.4f}")
PY
done
