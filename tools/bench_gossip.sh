#!/usr/bin/env bash
# Decentralized training against the star (./build.sh bench gossip): the cifar-shaped job
# (examples/cifar-shaped-fashion-mnist.cfg, 8192 images, 1000 test images after every epoch), on
# PEERS machines of 1 worker each (FRUGAL_BENCH_PEERS, default 4: 8 processes on a 2-core host
# would measure nothing but contention; 4 already share its cores, so img/s here is not what 4
# machines would give), every machine's inbound traffic through its own tools/netproxy at an
# emulated WAN (50 ms one way, 100 Mb/s) and LAN (0.1 ms, 10 Gb/s):
#   sync       a coordinator and PEERS-1 nodes (`frugal join`), one machine's weights
#   average    the same with [cluster] sync_every = 8
#   ring, exponential   [cluster] mode = gossip, every = 4, each peer a shard (shard = auto)
# Prints: bench gossip LINK MODE seconds=T (the first machine's training seconds over the epochs)
#         seconds_to_85=S (training seconds of the first epoch whose test
#         accuracy, of the coordinator's model or gossip peer 0's own, reaches 85%; "never")
#         test_acc=A (after the last epoch; gossip: the peers' final average) bytes_per_peer=B
#         busiest_bytes=C (both ways, through the machine that carried most) joules=J (every
#         machine, estimated here by the fallback model unless sensors are found)
set -euo pipefail
cd "$(dirname "$0")/.."
peers=${FRUGAL_BENCH_PEERS:-4}
epochs=${FRUGAL_BENCH_EPOCHS:-5}
out=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$out"' EXIT
base=$((30000 + $$ % 200 * 12))
./frugal keygen "$out/key" > /dev/null
job=examples/cifar-shaped-fashion-mnist.cfg
common=(--overwrite --set job.epochs="$epochs" --set execution.workers=1
        --set energy.baseline_seconds=0 --set data.test_limit=1000
        --set data.test_images=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
        --set data.test_labels=/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz)
echo "bench gossip: $peers machines of 1 worker on $(nproc) cores, $epochs epochs of $job"

proxy() {   # listen port, target port, rate, delay
    ./build/release/netproxy "127.0.0.1:$1" "127.0.0.1:$2" --rate "$3" --delay "$4" \
        --duration 3000 2> /dev/null &
    pids+=($!)
}

# The figures of the runs in $out/NAME* (the first is the coordinator or peer 0).
figures() {
    "${PYTHON:-/usr/bin/python3}" - "$out" "$1" <<'PY'
import csv, glob, json, os, sys
out, name = sys.argv[1], sys.argv[2]
runs = sorted(d for d in glob.glob(os.path.join(out, name + "-*")) if os.path.isdir(d))
def summary(d): return json.load(open(os.path.join(d, "summary.json")))
def metrics(d): return list(csv.DictReader(open(os.path.join(d, "metrics.csv"))))
first = metrics(runs[0])
t, reached = 0.0, None
for row in first:
    t += float(row["seconds"])
    if reached is None and float(row["test_acc"]) >= 0.85:
        reached = t
s0 = summary(runs[0])
if "gossip" in s0:
    acc = s0["gossip"]["final_test_acc"]
    per = [summary(d)["gossip"]["bytes_sent"] + summary(d)["gossip"]["bytes_received"] for d in runs]
else:
    acc = float(first[-1]["test_acc"])
    nodes = s0["cluster"]["nodes"]
    per = [n["bytes_sent"] + n["bytes_received"] for n in nodes]
    per.append(sum(per))   # the coordinator carries every node's traffic
joules = sum(sum(float(r["energy_j"]) + float(r["test_energy_j"] or 0) for r in metrics(d)) for d in runs)
if "cluster" in s0:
    joules = s0["cluster"]["joules_every_machine"]
print("seconds=%.1f seconds_to_85=%s test_acc=%.4f bytes_per_peer=%d busiest_bytes=%d joules=%.0f" % (
    t, "never" if reached is None else "%.1f" % reached, acc, sum(per) / len(per), max(per), joules))
PY
}

star() {   # link name, rate, delay, extra sets
    local link=$1 name=$2 rate=$3 delay=$4 port=$base
    shift 4
    base=$((base + 2))
    proxy $((port + 1)) "$port" "$rate" "$delay"
    local nodes=()
    for ((i = 1; i < peers; i++)); do
        ./frugal join "127.0.0.1:$((port + 1))" --key "$out/key" --workers 1 > "$out/$name.node$i" 2>&1 &
        pids+=($!) nodes+=($!)
    done
    ./frugal train "$job" "${common[@]}" --set "job.output=$out/$name-0" --listen "127.0.0.1:$port" \
        --key "$out/key" --wait-for $((peers - 1)) "$@" > "$out/$name.log" 2>&1 ||
        { cat "$out/$name.log" >&2; exit 1; }
    for p in "${nodes[@]}"; do wait "$p" || true; done
    echo "bench gossip $link $name $(figures "$name")"
}

gossip() {   # link, topology, rate, delay
    local link=$1 topo=$2 rate=$3 delay=$4 first=$base
    base=$((base + 2 * peers))
    for ((i = 0; i < peers; i++)); do
        proxy $((first + 2 * i + 1)) $((first + 2 * i)) "$rate" "$delay"
    done
    local run=()
    for ((i = 0; i < peers; i++)); do
        ./frugal train "$job" "${common[@]}" --set "job.output=$out/$topo-$i" \
            --set cluster.mode=gossip --set gossip.topology="$topo" --set gossip.every=4 \
            --set gossip.peers="$peers" --set data.shard=auto \
            --listen "127.0.0.1:$((first + 2 * i))" --advertise "127.0.0.1:$((first + 2 * i + 1))" \
            --peer "127.0.0.1:$((first + 1))" --key "$out/key" > "$out/$topo-$i.log" 2>&1 &
        run+=($!)
    done
    for p in "${run[@]}"; do wait "$p" || { cat "$out"/"$topo"-*.log >&2; exit 1; }; done
    echo "bench gossip $link $topo $(figures "$topo")"
    rm -rf "${out:?}"/"$topo"-*
}

for link in "WAN 100 50" "LAN 10000 0.1"; do
    read -r name rate delay <<< "$link"
    star "$name" sync "$rate" "$delay"
    star "$name" average "$rate" "$delay" --set cluster.sync_every=8
    gossip "$name" ring "$rate" "$delay"
    gossip "$name" exponential "$rate" "$delay"
    rm -rf "${out:?}"/sync-* "${out:?}"/average-*
    kill "${pids[@]}" 2>/dev/null || true
    pids=()
done
