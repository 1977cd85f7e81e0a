#!/usr/bin/env bash
# frugal on a GPU through OpenCL against PyTorch CUDA on the same GPU (./build.sh bench gpu):
# DAHL's four workloads at batch 32 and the three deeper CNNs at their job's batch, the same job
# files, data and batch on both sides. frugal: `devices = opencl` (every task a device can run
# runs on it; the data set is copied to it once), the fastest of E epochs (metrics.csv), and its
# --verbose table of task times by kind kept in $BENCH_GPU_LOGS when that is set. PyTorch:
# tools/torch_train.py --device cuda, the best of eager, channels_last and torch.compile with
# CUDA graphs (mode="reduce-overhead": one replay for the whole forward and backward), the
# fastest epoch of the best mode. Plain torch.compile is left out by default: on an H200 it was
# slower than with CUDA graphs on both jobs tried (28x28x1 20,469 against 25,562 img/s,
# vgg-small 22,943 against 40,595) and it compiles as long; BENCH_GPU_TORCH_MODES adds it.
# Needs an OpenCL GPU (`frugal info`) and a Python whose torch sees a CUDA GPU ($PYTHON, default
# build/torch-venv/bin/python, else python3); without the latter frugal runs alone.
# Knobs: FRUGAL (the binary, default ./frugal, built if missing), BENCH_GPU_ONLY (names of the
# workloads to run, space-separated), BENCH_GPU_TORCH_MODES (--modes for torch_train.py),
# BENCH_GPU_SET (more --set options for frugal, e.g. "execution.grain=32"), BENCH_GPU_TYPE (the
# OpenCL device type to take, default GPU; CPU tries the script on PoCL), BENCH_GPU_TRACE (a
# folder: frugal's --trace of each job there, every task and copy on its worker's track).
# Prints: bench gpu device=NAME torch=VERSION
#         bench gpu NAME batch=B frugal_img_per_s=N torch_img_per_s=N torch_mode=M ratio=X
set -euo pipefail
cd "$(dirname "$0")/.."
FRUGAL=${FRUGAL:-./frugal}
[ -x "$FRUGAL" ] || ./build.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
python=${PYTHON:-}
if [ -z "$python" ]; then
    python=build/torch-venv/bin/python
    [ -x "$python" ] || python=python3
fi
if ! "$python" -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
    echo "bench gpu: $python has no PyTorch that sees a CUDA GPU: frugal only" >&2
    python=
fi
gpu=$("$FRUGAL" info 2>&1 | awk -v type=" ${BENCH_GPU_TYPE:-GPU}, " '/^  \[[0-9]+\]/ { name = $0 } $0 ~ type { print name; exit }' |
      sed 's/^  \[\([0-9]*\)\] /\1 /')
if [ -z "$gpu" ]; then
    echo "bench gpu: no OpenCL GPU (frugal info below)" >&2
    "$FRUGAL" info >&2 || true
    exit 1
fi
index=${gpu%% *}
echo "bench gpu device=\"${gpu#* }\" opencl_index=$index torch=$([ -n "$python" ] &&
    "$python" -c 'import torch; print(torch.__version__, torch.cuda.get_device_name())' | tr ' ' _)"

extra=()
for s in ${BENCH_GPU_SET:-}; do extra+=(--set "$s"); done
while read -r name job n epochs; do
    case " ${BENCH_GPU_ONLY:-$name} " in *" $name "*) ;; *) continue ;; esac
    batch=$(sed -n 's/^batch *= *//p' "examples/$job")
    trace=()
    [ -n "${BENCH_GPU_TRACE:-}" ] && trace=(--trace "$BENCH_GPU_TRACE/trace-$name.json")
    "$FRUGAL" train "examples/$job" --overwrite --verbose --devices opencl \
        --set execution.device="$index" --set job.epochs="$epochs" --set "job.output=$out/run" \
        --set "data.limit=$n" --set data.test_limit=1 --set energy.baseline_seconds=0 \
        "${extra[@]}" "${trace[@]}" > "$out/log" 2>&1 || { tail -n 20 "$out/log" >&2; rm -rf "$out/run"; }
    [ -n "${BENCH_GPU_LOGS:-}" ] && cp "$out/log" "$BENCH_GPU_LOGS/frugal-$name.log"
    frugal=$( (tail -n +2 "$out/run/metrics.csv" 2>/dev/null || true) | cut -d, -f7 | sort -g |
              tail -n 1)
    torch=nan mode=none ratio=nan
    if [ -n "$python" ]; then
        line=$("$python" tools/torch_train.py "examples/$job" "$n" "$epochs" 1 --device cuda \
            --modes "${BENCH_GPU_TORCH_MODES:-eager,channels_last,compile_cudagraphs}" \
            2> "$out/torch.err") || true
        sed 's/^/  /' "$out/torch.err" | grep -v Warning >&2 || true
        torch=$(sed -n 's/^img_per_s=\([0-9.]*\) .*/\1/p' <<< "$line")
        mode=$(sed -n 's/.* mode=\([a-z_]*\) .*/\1/p' <<< "$line")
        [ -n "$torch" ] && [ "$mode" != None ] || torch=nan mode=none
    fi
    [ -n "$frugal" ] || frugal=nan
    [ "$torch" != nan ] && [ "$frugal" != nan ] &&
        ratio=$(awk -v a="$frugal" -v b="$torch" 'BEGIN { printf "%.2f", a / b }')
    printf 'bench gpu %s batch=%s frugal_img_per_s=%.0f torch_img_per_s=%s torch_mode=%s ratio=%s\n' \
        "$name" "$batch" "$frugal" "$torch" "$mode" "$ratio"
done <<'EOF_WORKLOADS'
28x28x1 dahl-fashion-mnist.cfg 8192 3
62x84x3 dahl-fashion-mnist-62x84x3.cfg 4096 3
116x158x3 dahl-fashion-mnist-116x158x3.cfg 2048 3
270x360x3 dahl-fashion-mnist-270x360x3.cfg 2048 3
cifar-shaped cifar-shaped-fashion-mnist.cfg 8192 3
vgg-small vgg-small-fashion-mnist.cfg 4096 3
wide-28 wide-28-fashion-mnist.cfg 8192 3
EOF_WORKLOADS
