#!/usr/bin/env bash
# The working tree's frugal against REV's (default HEAD), trained at the same time
# (./build.sh bench pair [REV] [PAIRS] [JOB] [--set KEY=VALUE ...]): both binaries at once, one
# worker each on a core of its own (taskset), the cores swapped every pair, PAIRS pairs
# (default 8) of JOB (default vgg-small, 1 epoch of 2048 images, no test pass). What they
# compare is each run's busy seconds (summary.json, runtime_this_process): whole training,
# with its data going cold between the forward and backward passes, which a kernel alone in
# `bench ab` does not see. A host whose speed drifts slows both runs of a pair alike; a pair
# still moves by up to 20% (the same binary against itself: medians of 8 pairs 1.03 and 1.07,
# docs/kernels.md), so only a median well away from 1 says something.
# Prints, per pair and then as medians: bench pair new/base total=R conv_forward=R conv_backward=R
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:-HEAD}
pairs=${2:-8}
job=${3:-examples/vgg-small-fashion-mnist.cfg}
shift $(($# < 3 ? $# : 3))
[ "$(nproc)" -ge 2 ] || { echo "bench pair: needs 2 cores, this machine has $(nproc)" >&2; exit 1; }
out=$PWD/build/pair
rm -rf "$out"
mkdir -p "$out/base"
git archive "$rev" | tar -x -C "$out/base"
make -s -C "$out/base" -j"${JOBS:-2}" VARIANT=release build/release/frugal
make -s -j"${JOBS:-2}" VARIANT=release build/release/frugal
echo "bench pair base=$(git rev-parse --short "$rev") new=working tree job=$job pairs=$pairs"

# run BINARY CORE NAME [--set ...]: one run, its summary in $out/NAME.
run() {
    local binary=$1 core=$2 name=$3
    shift 3
    taskset -c "$core" "$binary" train "$job" --overwrite --set job.epochs=1 \
        --set data.limit=2048 --set data.test_limit=1 --set energy.baseline_seconds=0 \
        --set execution.workers=1 --set "job.output=$out/$name" "$@" > "$out/$name.log" 2>&1 ||
        { cat "$out/$name.log" >&2; return 1; }
}

# busy NAME: the run's busy seconds: in all, in the convolutions' forward and backward tasks.
busy() {
    awk '/"runtime_this_process"/ { on = 1 } on && /"busy_s"/ {
             match($0, /"name": "[a-z_0-9]*"/); name = substr($0, RSTART + 9, RLENGTH - 10)
             match($0, /"busy_s": [0-9.e+-]*/); s = substr($0, RSTART + 10, RLENGTH - 10) + 0
             total += s
             if (name ~ /^conv.*forward$/) fwd += s
             if (name ~ /^conv.*backward$/) bwd += s }
         on && /\]/ { on = 0 }
         END { printf "%.6f %.6f %.6f\n", total, fwd, bwd }' "$out/$1/summary.json"
}

: > "$out/ratios"
for i in $(seq "$pairs"); do
    run "$out/base/build/release/frugal" $((i % 2)) base "$@" &
    base_pid=$!
    run build/release/frugal $(((i + 1) % 2)) new "$@" &
    new_pid=$!
    wait "$base_pid" && wait "$new_pid"
    paste -d' ' <(busy new) <(busy base) |
        awk '{ printf "%.4f %.4f %.4f\n", $1 / $4, ($5 > 0 ? $2 / $5 : 1), ($6 > 0 ? $3 / $6 : 1) }' |
        tee -a "$out/ratios" |
        awk -v i="$i" '{ printf "bench pair %d new/base total=%.3f conv_forward=%.3f " \
                         "conv_backward=%.3f\n", i, $1, $2, $3 }'
done
# medians (and ranges) of each column
line="bench pair medians new/base"
for column in 1 2 3; do
    name=$(echo total conv_forward conv_backward | cut -d' ' -f"$column")
    line+=" $(sort -g -k"$column" "$out/ratios" | awk -v c="$column" -v name="$name" '
        { v[NR] = $c } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                             printf "%s=%.3f (%.3f-%.3f)", name, m, v[1], v[NR] }')"
done
echo "$line"
