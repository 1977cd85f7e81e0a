#!/usr/bin/env bash
# frugal against PyTorch, in one invocation (./build.sh bench train): DAHL's four workloads (named
# by their input shape) and four deeper CNNs (cifar-shaped, vgg-small, wide-28, and deeper:
# examples/deeper-fashion-mnist.cfg).
# The reference is the PyTorch a user installs today: PyPI's torch in a virtual environment this
# script makes on first use (build/torch-venv; the default wheel brings NVIDIA's CUDA libraries,
# some GB), else Debian's python3-torch (said so). frugal: the examples/ job files, one worker per
# core, E epochs before, between and after PyTorch's two runs, the fastest one reported
# (metrics.csv). PyTorch: tools/torch_train.py, the same job file (model, optimizer, batch, data
# and resizing), as many threads, E epochs in each of eager, channels_last and torch.compile,
# then the best mode's E epochs again; the fastest epoch of the best mode. Best-of on both
# sides, interleaved over the same stretch of time, because this machine's speed drifts with
# what its neighbours do (one PyTorch run per job moved its figures by up to 60%). gflops:
# frugal's model FLOPs per image (summary.json, 3 x forward) x img/s; exec_gflops: the FLOPs
# its kernels execute (a Winograd pass's fewer multiplies, no input gradient before the first
# layer with weights); peak_pct: exec_gflops against the FMA peak of all cores measured at once
# at the start (bench_ops --peak N).
# BENCH_ROUNDS=R (default 1): each workload's interleaved runs R times over, a line each, then
# the median ratio and its range: one round catches one stretch of the host's drift (on machine
# D vgg-small's ratio was 2.79, 2.86 and 3.19 on one day).
# usage: bench_train.sh [NAME ...]: those workloads only (and their accuracy lines), else all.
# Prints: bench train reference=... torch=VERSION
#         bench train NAME frugal_img_per_s=N torch_img_per_s=N torch_mode=M ratio=X task_share=P
#         gflops=G exec_gflops=E peak_pct=Q
#         bench train NAME rounds=R ratio_median=X ratio_min=Y ratio_max=Z (R > 1)
set -euo pipefail
cd "$(dirname "$0")/.."
workloads='28x28x1 dahl-fashion-mnist.cfg 8192 6
62x84x3 dahl-fashion-mnist-62x84x3.cfg 2048 4
116x158x3 dahl-fashion-mnist-116x158x3.cfg 2048 3
270x360x3 dahl-fashion-mnist-270x360x3.cfg 2048 3
cifar-shaped cifar-shaped-fashion-mnist.cfg 8192 2
vgg-small vgg-small-fashion-mnist.cfg 4096 2
wide-28 wide-28-fashion-mnist.cfg 8192 2
deeper deeper-fashion-mnist.cfg 8192 2'
# The workloads named on the command line (a name no workload has is an error), else all.
chosen() { [ ${#wanted[@]} -eq 0 ] || [[ " ${wanted[*]} " == *" $1 "* ]]; }
wanted=("$@")
for name in "${wanted[@]}"; do
    grep -q "^$name " <<< "$workloads" ||
        { echo "bench train: no workload '$name' (there are: $(cut -d' ' -f1 <<< "$workloads" | tr '\n' ' '))" >&2; exit 2; }
done
rounds=${BENCH_ROUNDS:-1}
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] ||
    { echo "bench train: BENCH_ROUNDS must be a count of rounds, not '$rounds'" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
workers=$(nproc)
make -s -j"${JOBS:-2}" VARIANT=release build/release/bench_ops
peak=$(./build/release/bench_ops --peak "$workers")
echo "bench train peak_gflops_${workers}_cores=$peak"

# The reference PyTorch: PyPI's in build/torch-venv (made on first use), else Debian's.
venv=build/torch-venv
python=
if ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
    echo "bench train: installing PyPI's torch into $venv (first use; several GB with its CUDA" \
         "libraries)" >&2
    rm -rf "$venv"
    if /usr/bin/python3 -m venv "$venv" && "$venv/bin/pip" install --quiet torch numpy >&2; then
        echo "bench train: $venv is $(du -sh "$venv" | cut -f1)" >&2
    else
        echo "bench train: PyPI's torch could not be installed (above); trying Debian's" >&2
        rm -rf "$venv"
    fi
fi
if "$venv/bin/python" -c "import torch" 2>/dev/null; then
    python=$venv/bin/python
    echo "bench train reference=pypi torch=$("$python" -c 'import torch; print(torch.__version__)')" \
         "venv=$venv size=$(du -sh "$venv" | cut -f1)"
elif /usr/bin/python3 -c "import torch" 2>/dev/null; then
    python=/usr/bin/python3
    echo "bench train reference=debian torch=$("$python" -c 'import torch; print(torch.__version__)')" \
         "(PyPI's could not be installed)"
else
    echo "bench train: no PyTorch (neither PyPI's nor Debian's python3-torch); frugal only" >&2
fi

# frugal's epochs, appended to $out/epochs.csv.
run_frugal() {
    ./frugal train "examples/$job" --overwrite --set job.epochs="$epochs" --set "job.output=$out/$job" \
        --set "execution.workers=$workers" --set "data.limit=$n" --set data.test_limit=1 \
        --set energy.baseline_seconds=0 > "$out/log" 2>&1 ||
        { cat "$out/log" >&2; exit 1; }
    tail -n +2 "$out/$job/metrics.csv" >> "$out/epochs.csv"
}

# One round of a workload (name job n epochs): frugal, PyTorch's modes, frugal, PyTorch's best
# mode again, frugal; prints its line and sets ratio.
measure_round() {
    : > "$out/epochs.csv"
    run_frugal
    torch=nan mode=none ratio=nan
    if [ -n "$python" ]; then
        line=$("$python" tools/torch_train.py "examples/$job" "$n" "$epochs" "$workers" 2>"$out/torch.err")
        torch=$(sed -n 's/^img_per_s=\([0-9.]*\) .*/\1/p' <<< "$line")
        mode=$(sed -n 's/.* mode=\([a-z_]*\) .*/\1/p' <<< "$line")
        sed 's/^/  /' "$out/torch.err" >&2
        run_frugal   # between PyTorch's runs: both sides sample the same stretch of the drift
        if [ -n "$torch" ]; then   # its best mode again, in a later stretch
            line=$("$python" tools/torch_train.py "examples/$job" "$n" "$epochs" "$workers" \
                --modes "$mode" 2>"$out/torch.err")
            again=$(sed -n 's/^img_per_s=\([0-9.]*\) .*/\1/p' <<< "$line")
            torch=$(awk -v a="$torch" -v b="${again:-0}" 'BEGIN { print (b + 0 > a + 0 ? b : a) }')
        fi
        run_frugal
        [ -n "$torch" ] || torch=nan mode=none
    fi
    row=$(sort -t, -k7 -g "$out/epochs.csv" | tail -n 1)   # fastest epoch
    frugal=$(echo "$row" | cut -d, -f7)
    share=$(echo "$row" | cut -d, -f8)
    flops=$(grep -o '"model_flops_per_sample": [0-9]*' "$out/$job/summary.json" | grep -o '[0-9]*$')
    executed=$(grep -o '"executed_flops_per_sample": [0-9]*' "$out/$job/summary.json" | grep -o '[0-9]*$')
    [ "$torch" != nan ] && ratio=$(awk -v a="$frugal" -v b="$torch" 'BEGIN { printf "%.2f", a / b }')
    awk -v name="$name" -v f="$frugal" -v t="$torch" -v m="$mode" -v r="$ratio" -v s="$share" \
        -v fl="$flops" -v ex="$executed" -v p="$peak" 'BEGIN { printf "bench train %s " \
        "frugal_img_per_s=%.0f torch_img_per_s=%.0f torch_mode=%s ratio=%s task_share=%.2f " \
        "gflops=%.1f exec_gflops=%.1f peak_pct=%.1f\n", name, f, t, m, r, s, f * fl / 1e9,
        f * ex / 1e9, 100 * f * ex / 1e9 / p }'
}

while read -r name job n epochs; do
    chosen "$name" || continue
    ratios=()
    for ((round = 0; round < rounds; round++)); do
        measure_round
        [ "$ratio" = nan ] || ratios+=("$ratio")
    done
    if [ "$rounds" -gt 1 ] && [ ${#ratios[@]} -gt 0 ]; then
        # rounds: those with a PyTorch figure to divide by
        printf '%s\n' "${ratios[@]}" | sort -g | awk -v name="$name" \
            '{ v[NR] = $1 } END { printf "bench train %s rounds=%d ratio_median=%.2f " \
            "ratio_min=%.2f ratio_max=%.2f\n", name, NR,
            NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, v[1], v[NR] }'
    fi
done <<< "$workloads"

# Accuracy: the same job files, 2 epochs on their 8192 training images each side, then the
# 10,000 test images (different initial weights and shuffles: expect a point or so either way).
# Prints: bench train accuracy NAME epochs=2 frugal_test_acc=A torch_test_acc=B
for name in cifar-shaped wide-28 deeper; do
    chosen "$name" || continue
    job=$name-fashion-mnist.cfg
    ./frugal train "examples/$job" --set job.epochs=2 --set "job.output=$out/acc-$name" \
        --set data.limit=8192 --set energy.baseline_seconds=0 > "$out/log" 2>&1 ||
        { cat "$out/log" >&2; exit 1; }
    frugal=$(tail -n 1 "$out/acc-$name/metrics.csv" | cut -d, -f5)
    torch=nan
    [ -n "$python" ] && torch=$("$python" tools/torch_train.py "examples/$job" 8192 2 "$workers" \
        --test | sed -n 's/.*test_acc=\([0-9.]*\).*/\1/p')
    printf 'bench train accuracy %s epochs=2 frugal_test_acc=%.4f torch_test_acc=%s\n' "$name" \
        "$frugal" "$torch"
done
