#!/usr/bin/env bash
# Operating points (./build.sh bench operating-point): a memory-bound job (DAHL's CNN at
# 270x360x3) and a compute-bound one (vgg-small), each trained three times in one invocation:
# at the limits the machine has (operating_point = off), with the caps searched (auto), and at the
# caps that search kept, set from the start (the search's own windows left out of the
# comparison). The first and third runs do the same work at fixed limits: their joules (the GPUs'
# sensors, the CPU packages', the total) and seconds side by side, the epochs after the first.
# Devices: OpenCL where a GPU is found (NVIDIA's limits are NVML's), else the CPU.
# Needs limits that can be set (root): where none can, it says why (frugal energy) and stops.
# Prints: bench operating_point WORKLOAD caps=PART:VALUE,... gpu_joules=A->B (X%)
#         cpu_joules=... total_joules=... seconds=A->B (X%) source=measured|estimated
# Any limit changed is put back by frugal itself (docs/operating-points.md).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export FRUGAL_PERFMODEL_DIR="$out/models"

if ! ./frugal energy | grep -q "  can be set"; then
    echo "bench operating_point: no power or clock limit can be set here; frugal energy says why:"
    ./frugal energy | sed -n '/limit.*operating_point/,$p'
    exit 0
fi
devices=cpu
./frugal info 2>/dev/null | grep -qE ", GPU, " && devices=opencl

# name, job, images, epochs: enough epochs for the search (a dozen windows per part) and a few
# fixed ones after it
workloads=("dahl270 dahl-fashion-mnist-270x360x3.cfg ${BENCH_OP_IMAGES:-4096} ${BENCH_OP_EPOCHS:-6}"
           "vgg vgg-small-fashion-mnist.cfg ${BENCH_OP_IMAGES:-4096} ${BENCH_OP_EPOCHS:-6}")

train() {
    local job=$1 limit=$2 epochs=$3 name=$4 setting=$5
    ./frugal train "examples/$job" --overwrite --devices "$devices" --set "job.epochs=$epochs" \
        --set "data.limit=$limit" --set data.test_limit=1 --set energy.baseline_seconds=0 \
        --set "job.output=$out/$name" --set "placement.operating_point=$setting" \
        > "$out/$name.log" 2>&1 || { cat "$out/$name.log" >&2; exit 1; }
}

for w in "${workloads[@]}"; do
    read -r workload job limit epochs <<< "$w"
    train "$job" "$limit" "$epochs" "$workload-off" off
    train "$job" "$limit" "$epochs" "$workload-auto" auto
    kept=$(/usr/bin/python3 - "$out/$workload-auto/summary.json" <<'EOF'
import json, sys
parts = json.load(open(sys.argv[1]))["execution"]["operating_point"]["parts"]
print(", ".join(f"{p['part']}={p['value']:g}" for p in parts if p["mode"] == "auto") or "off")
EOF
)
    train "$job" "$limit" "$epochs" "$workload-kept" "$kept"
    /usr/bin/python3 - "$out" "$workload" "$kept" <<'EOF'
import json, sys
out, workload, kept = sys.argv[1:4]

def figures(name):
    s = json.load(open(f"{out}/{workload}-{name}/summary.json"))
    scope = {x["name"]: x["scope"] for x in s["energy"]["sensors"]}
    later = s["epochs"][1:] or s["epochs"]
    by = lambda want: sum(j for e in later for d, j in e["energy"]["devices"].items()
                          if scope.get(d) == want)
    return {"gpu": by("gpu"), "cpu": by("cpu"), "total": sum(e["energy"]["joules"] for e in later),
            "seconds": sum(e["seconds"] for e in later), "estimated": s["energy"]["estimated"]}

a, b = figures("off"), figures("kept")
change = lambda k: f"{a[k]:.1f}->{b[k]:.1f} ({100 * (b[k] / a[k] - 1) if a[k] else 0:+.1f}%)"
print(f"bench operating_point {workload} caps={kept.replace(' ', '')} gpu_joules={change('gpu')} "
      f"cpu_joules={change('cpu')} total_joules={change('total')} seconds={change('seconds')} "
      f"source={'estimated' if a['estimated'] else 'measured'}")
EOF
done
