#!/usr/bin/env bash
# Energy-aware placement (./build.sh bench placement): for DAHL's CNN at 28x28x1 and 116x158x3
# and the deeper CNN, every fixed configuration (1 and 2 workers; cpu, opencl, cpu+opencl) and
# each policy's own choice (workers learned; devices = auto: GPUs weighed by the policy, OpenCL
# on the host's own cores left out); the figures are the last epoch's training pass (the first
# ones are where the policies explore).
# Then, per policy, how far its choice is from the best fixed configuration for that policy's
# goal (time: s/img; energy and carbon: J/img; edp: J x s per image), and what it saves in
# energy against `time` for the slowdown it costs. The joules are the meter's: measured where a
# sensor is readable, else the model's (source= says which). The placement models are kept in a
# folder of the benchmark's own, so every run starts from nothing learned.
# Prints: bench placement WORKLOAD CONFIG img_per_s=N joules_per_image=X source=measured|estimated
#         bench placement WORKLOAD policy=P choice=... off_best_fixed=X% best_fixed=CONFIG
#                         energy_saved_vs_time=X% slowdown_vs_time=X%
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export FRUGAL_PERFMODEL_DIR="$out/models"

# name, job, images, epochs: a few seconds of training each, so that the policies have windows
# (0.5 s each) to explore in before the last epoch
workloads=("dahl28 dahl-fashion-mnist.cfg 60000 6"
           "dahl116 dahl-fashion-mnist-116x158x3.cfg 8192 4"
           "deeper deeper-fashion-mnist.cfg 30000 4")

# frugal train for one configuration; its summary.json is $out/NAME/summary.json.
train() {
    local job=$1 limit=$2 epochs=$3 name=$4; shift 4
    rm -rf "$FRUGAL_PERFMODEL_DIR"
    ./frugal train "examples/$job" --overwrite --set "job.epochs=$epochs" --set "data.limit=$limit" \
        --set data.test_limit=1 --set energy.baseline_seconds=0 --set "job.output=$out/$name" \
        "$@" > "$out/$name.log" 2>&1 || { cat "$out/$name.log" >&2; exit 1; }
}

for w in "${workloads[@]}"; do
    read -r workload job limit epochs <<< "$w"
    configs=()
    for workers in 1 2; do
        for devices in cpu opencl cpu+opencl; do
            name="$workload-w$workers-$devices" n=$limit e=$epochs
            # OpenCL alone on the host's cores (PoCL) is 20-40x slower: fewer images, 2 epochs
            [ "$devices" = opencl ] && n=$((limit / 8)) e=2
            train "$job" "$n" "$e" "$name" --set "execution.workers=$workers" --devices "$devices"
            configs+=("w$workers-$devices")
        done
    done
    for policy in time energy edp carbon; do
        train "$job" "$limit" "$epochs" "$workload-$policy" --set execution.workers=0 \
            --devices auto --policy "$policy"
    done
    python3 - "$out" "$workload" "${configs[@]}" <<'EOF'
import json, sys
out, workload, configs = sys.argv[1], sys.argv[2], sys.argv[3:]

def figures(name):
    s = json.load(open(f"{out}/{workload}-{name}/summary.json"))
    e = s["epochs"][-1]
    placement = s["execution"].get("placement", {})
    return {"img_s": e["images_per_s"], "j": e["energy"]["joules_per_image"],
            "estimated": s["energy"]["estimated"], "workers": placement.get("active_workers"),
            "devices": "+".join(d["name"] for d in s["execution"].get("opencl", []) if d["used"])
                       or "cpu"}

goal = {"time": lambda f: 1 / f["img_s"], "energy": lambda f: f["j"],
        "carbon": lambda f: f["j"], "edp": lambda f: f["j"] / f["img_s"]}
fixed = {c: figures(c) for c in configs}
chosen = {p: figures(p) for p in goal}
for name, f in list(fixed.items()) + [(f"policy={p}", f) for p, f in chosen.items()]:
    print(f"bench placement {workload} {name} img_per_s={f['img_s']:.0f} "
          f"joules_per_image={f['j']:.6f} source={'estimated' if f['estimated'] else 'measured'}")
for p, f in chosen.items():
    best = min(fixed, key=lambda c: goal[p](fixed[c]))
    off = goal[p](f) / goal[p](fixed[best]) - 1
    saved = 1 - f["j"] / chosen["time"]["j"]
    slower = chosen["time"]["img_s"] / f["img_s"] - 1
    print(f"bench placement {workload} policy={p} choice=workers:{f['workers']},{f['devices']} "
          f"off_best_fixed={100 * off:+.1f}% best_fixed={best} "
          f"energy_saved_vs_time={100 * saved:+.1f}% slowdown_vs_time={100 * slower:+.1f}%")
EOF
done
