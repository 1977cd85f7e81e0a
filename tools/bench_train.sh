#!/usr/bin/env bash
# frugal against PyTorch, in one invocation (./build.sh bench train): DAHL's four workloads (named
# by their input shape) and three deeper CNNs (cifar-shaped, vgg-small, wide-28).
# frugal: the examples/ job files, 2 workers, E epochs before and E after PyTorch's run, the
# fastest one reported (metrics.csv). PyTorch: tools/torch_train.py, the same job file (model,
# optimizer, batch, data and resizing), 2 threads, E epochs, the fastest one. Best-of on both
# sides, over the same stretch of time, because this machine's speed drifts with what its
# neighbours do. gflops: frugal's model FLOPs per image (summary.json, 3 x forward) x img/s;
# peak_pct: against the FMA peak of 2 cores measured at once at the start (bench_ops --peak 2).
# Prints: bench train NAME frugal_img_per_s=N torch_img_per_s=N ratio=X task_share=P gflops=G
#         peak_pct=Q
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
make -s -j"${JOBS:-2}" VARIANT=release build/release/bench_ops
peak=$(./build/release/bench_ops --peak 2)
echo "bench train peak_gflops_2_cores=$peak"
have_torch=0
/usr/bin/python3 -c "import torch" 2>/dev/null && have_torch=1
[ $have_torch = 1 ] || echo "bench train: PyTorch (Debian's python3-torch) is not installed; frugal only" >&2

# frugal's epochs, appended to $out/epochs.csv.
run_frugal() {
    ./frugal train "examples/$job" --overwrite --set job.epochs="$epochs" --set "job.output=$out/$job" \
        --set execution.workers=2 --set "data.limit=$n" --set data.test_limit=1 \
        --set energy.baseline_seconds=0 > "$out/log" 2>&1 ||
        { cat "$out/log" >&2; exit 1; }
    tail -n +2 "$out/$job/metrics.csv" >> "$out/epochs.csv"
}

while read -r name job n epochs; do
    : > "$out/epochs.csv"
    run_frugal
    torch=nan
    ratio=nan
    if [ $have_torch = 1 ]; then
        torch=$(/usr/bin/python3 tools/torch_train.py "examples/$job" "$n" "$epochs" 2 |
                sed -n 's/^img_per_s=\([0-9.]*\) .*/\1/p')
        run_frugal   # again after PyTorch: both sides sample the same stretch of the machine's drift
    fi
    row=$(sort -t, -k7 -g "$out/epochs.csv" | tail -n 1)   # fastest epoch
    frugal=$(echo "$row" | cut -d, -f7)
    share=$(echo "$row" | cut -d, -f8)
    flops=$(grep -o '"model_flops_per_sample": [0-9]*' "$out/$job/summary.json" | grep -o '[0-9]*$')
    [ $have_torch = 1 ] && ratio=$(awk -v a="$frugal" -v b="$torch" 'BEGIN { printf "%.2f", a / b }')
    awk -v name="$name" -v f="$frugal" -v t="$torch" -v r="$ratio" -v s="$share" -v fl="$flops" \
        -v p="$peak" 'BEGIN { printf "bench train %s frugal_img_per_s=%.0f torch_img_per_s=%.0f " \
        "ratio=%s task_share=%.2f gflops=%.1f peak_pct=%.1f\n", name, f, t, r, s, f * fl / 1e9,
        100 * f * fl / 1e9 / p }'
done <<'EOF_WORKLOADS'
28x28x1 dahl-fashion-mnist.cfg 8192 6
62x84x3 dahl-fashion-mnist-62x84x3.cfg 2048 4
116x158x3 dahl-fashion-mnist-116x158x3.cfg 2048 3
270x360x3 dahl-fashion-mnist-270x360x3.cfg 2048 3
cifar-shaped cifar-shaped-fashion-mnist.cfg 8192 2
vgg-small vgg-small-fashion-mnist.cfg 4096 2
wide-28 wide-28-fashion-mnist.cfg 8192 2
EOF_WORKLOADS

# Accuracy: the same job files, 2 epochs on their 8192 training images each side, then the
# 10,000 test images (different initial weights and shuffles: expect a point or so either way).
# Prints: bench train accuracy NAME epochs=2 frugal_test_acc=A torch_test_acc=B
for name in cifar-shaped wide-28; do
    job=$name-fashion-mnist.cfg
    ./frugal train "examples/$job" --set job.epochs=2 --set "job.output=$out/acc-$name" \
        --set energy.baseline_seconds=0 > "$out/log" 2>&1 || { cat "$out/log" >&2; exit 1; }
    frugal=$(tail -n 1 "$out/acc-$name/metrics.csv" | cut -d, -f5)
    torch=nan
    [ $have_torch = 1 ] && torch=$(/usr/bin/python3 tools/torch_train.py "examples/$job" 8192 2 2 \
        --test | sed -n 's/.*test_acc=\([0-9.]*\).*/\1/p')
    printf 'bench train accuracy %s epochs=2 frugal_test_acc=%.4f torch_test_acc=%s\n' "$name" \
        "$frugal" "$torch"
done
