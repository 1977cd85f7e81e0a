#!/usr/bin/env bash
# frugal against PyTorch on DAHL's workloads, in one invocation (./build.sh bench train).
# frugal: the examples/ job files, 2 workers, E epochs before and E after PyTorch's run, the
# fastest one reported (metrics.csv). PyTorch: tools/torch_train.py, the same model and data,
# 2 threads, E epochs, the fastest one. Best-of on both sides, over the same stretch of time,
# because this machine's speed drifts with what its neighbours do.
# Prints: bench train HxWxC frugal_img_per_s=N torch_img_per_s=N ratio=X task_share=P
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
have_torch=0
/usr/bin/python3 -c "import torch" 2>/dev/null && have_torch=1
[ $have_torch = 1 ] || echo "bench train: PyTorch (Debian's python3-torch) is not installed; frugal only" >&2

# frugal's epochs, appended to $out/epochs.csv.
run_frugal() {
    ./frugal train "examples/$job" --set job.epochs="$epochs" --set "job.output=$out/$job" \
        --set execution.workers=2 --set "data.limit=$n" --set data.test_limit=1 \
        --set energy.baseline_seconds=0 > "$out/log" 2>&1 ||
        { cat "$out/log" >&2; exit 1; }
    tail -n +2 "$out/$job/metrics.csv" >> "$out/epochs.csv"
}

while read -r shape job n epochs; do
    : > "$out/epochs.csv"
    run_frugal
    torch=nan
    ratio=nan
    if [ $have_torch = 1 ]; then
        IFS=x read -r h w c <<<"$shape"
        torch=$(/usr/bin/python3 tools/torch_train.py "$n" "$h" "$w" "$c" "$epochs" 2)
        run_frugal   # again after PyTorch: both sides sample the same stretch of the machine's drift
    fi
    row=$(sort -t, -k7 -g "$out/epochs.csv" | tail -n 1)   # fastest epoch
    frugal=$(echo "$row" | cut -d, -f7)
    share=$(echo "$row" | cut -d, -f8)
    [ $have_torch = 1 ] && ratio=$(awk -v a="$frugal" -v b="$torch" 'BEGIN { printf "%.2f", a / b }')
    printf 'bench train %s frugal_img_per_s=%.0f torch_img_per_s=%.0f ratio=%s task_share=%.2f\n' \
        "$shape" "$frugal" "$torch" "$ratio" "$share"
done <<'EOF_WORKLOADS'
28x28x1 dahl-fashion-mnist.cfg 8192 6
62x84x3 dahl-fashion-mnist-62x84x3.cfg 2048 4
116x158x3 dahl-fashion-mnist-116x158x3.cfg 2048 3
270x360x3 dahl-fashion-mnist-270x360x3.cfg 2048 3
EOF_WORKLOADS
