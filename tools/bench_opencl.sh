#!/usr/bin/env bash
# frugal on OpenCL devices (./build.sh bench opencl): first the device kernels against the CPU
# kernels and CLBlast's SGEMM (build/release/bench_opencl), then DAHL's CNN trained with
# devices = cpu, opencl and cpu+opencl, 2 workers, the fastest epoch of each. The CPU runs once
# before and once after the device runs (the machine's speed drifts); the better one counts.
# Placement models start empty (a fresh FRUGAL_PERFMODEL_DIR): cpu+opencl includes calibrating.
# Prints: bench opencl DEVICES WORKLOAD img_per_s=N cpu_img_per_s=N ratio=X
set -euo pipefail
cd "$(dirname "$0")/.."
./build/release/bench_opencl "${1:-0.3}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# The fastest epoch's img/s of one run.
fastest() {
    local devices=$1 job=$2 n=$3 epochs=$4
    rm -rf "$out/run" "$out/models"
    FRUGAL_PERFMODEL_DIR="$out/models" ./frugal train "examples/$job" --devices "$devices" \
        --set job.epochs="$epochs" --set "job.output=$out/run" --set execution.workers=2 \
        --set "data.limit=$n" --set data.test_limit=1 --set energy.baseline_seconds=0 \
        > "$out/log" 2>&1 || { cat "$out/log" >&2; return 1; }
    tail -n +2 "$out/run/metrics.csv" | cut -d, -f7 | sort -g | tail -n 1
}

while read -r shape job n epochs; do
    cpu=$(fastest cpu "$job" "$n" "$epochs")
    declare -A rate=()
    for devices in opencl cpu+opencl; do
        rate[$devices]=$(fastest "$devices" "$job" "$n" "$epochs") || rate[$devices]=nan
    done
    again=$(fastest cpu "$job" "$n" "$epochs")
    cpu=$(awk -v a="$cpu" -v b="$again" 'BEGIN { print (a > b ? a : b) }')
    for devices in opencl cpu+opencl; do
        awk -v d="$devices" -v s="$shape" -v r="${rate[$devices]}" -v c="$cpu" 'BEGIN {
            printf "bench opencl %s %s img_per_s=%.0f cpu_img_per_s=%.0f ratio=%.2f\n", d, s, r, c, r / c }'
    done
done <<'EOF_WORKLOADS'
28x28x1 dahl-fashion-mnist.cfg 8192 4
116x158x3 dahl-fashion-mnist-116x158x3.cfg 2048 3
EOF_WORKLOADS
