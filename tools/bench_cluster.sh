#!/usr/bin/env bash
# Training across machines on this one (./build.sh bench cluster): DAHL's CNN at 116x158x3 and
# 270x360x3, 2048 images. The reference is one process with 2 workers; the cluster is a
# coordinator with 1 worker and a node with 1 worker (`frugal join`), their link emulated by
# tools/netproxy at 10 Gb/s with 0.1 ms and at 1 Gb/s with 0.5 ms one way. Then the node made 2x
# slower (join --slowdown 2), against the sum of the two machines' solo speeds (each alone with
# 1 worker, the slow one at --slowdown 2): what an even split would waste shows there.
# The synchronous run at 10 Gb/s is repeated with the node pinned to at least one chunk of every
# batch ([placement] all_nodes = on), against which the deal's own choice can be judged.
# Periodic averaging ([cluster] sync_every = 8) runs at 1 Gb/s beside the synchronous run, both
# evaluated on 1000 test images after every epoch: their last test accuracies are printed; then
# the same with the models sent as half-precision deltas ([cluster] compress = on), and then
# with each round's average travelling while the next round trains ([cluster] overlap = on).
# img/s is the fastest epoch's (metrics.csv); bytes per image counts both directions.
# FRUGAL_BENCH_WORKERS=N gives each machine N workers (the reference 2N). Where the host has
# 2N+1 cores or more, each machine is pinned to cores of its own (taskset) and the proxy to one
# more, so that the two machines do not share cores as they must on a 2-core host.
# Prints: bench cluster WORKLOAD LINK MODE img_per_s=N single_img_per_s=N efficiency=X bytes_per_image=N
#         nodes_share=S (the share of the chunks the nodes computed: the deal gives a node none when
#         its round trip costs more than computing its chunks here)
#         (and at 1 Gb/s test_acc=A, with sync_every=8 also sync_test_acc=B; with the node
#         2x slower, best_split_efficiency=E: the best whole-chunk split with a free network;
#         with the node pinned, crypto_bound=C: the efficiency that split could reach were
#         sealing and opening its bytes, at the speed `frugal info` measures, its only cost)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$out"' EXIT   # the processes may be gone already
epochs=3
workers=${FRUGAL_BENCH_WORKERS:-1}
pinned=no
if command -v taskset > /dev/null && [ "$(nproc)" -gt $((2 * workers)) ]; then pinned=yes; fi
echo "bench cluster: $workers worker(s) per machine, the reference $((2 * workers));" \
    "each machine on cores of its own: $pinned"

# Becomes its arguments, on cores FIRST to FIRST+COUNT-1 where machines are pinned; called in a
# subshell, so that a process started in the background has $! as its own pid (and is killed
# by it, not left running).
on_cores() {
    local first=$1 count=$2
    shift 2
    if [ $pinned = yes ]; then exec taskset -c "$first-$((first + count - 1))" "$@"; else exec "$@"; fi
}
base=$((30000 + $$ % 300 * 8))   # with its ~60 ports, below the ephemeral range (32768 up)
./frugal keygen "$out/key" > /dev/null
# GB/s one core seals and opens with the cipher the cluster uses (AES-256-GCM where there is
# AES-NI: the line's first figure)
cipher=$(./frugal info |
    awk '/^cluster traffic/ { for (i = 1; i < NF; i++) if ($(i + 1) == "GB/s") { print $i; exit } }')
echo "bench cluster: traffic sealed and opened at $cipher GB/s by one core (frugal info)"

# The fastest epoch's img/s of a finished run's metrics.csv.
fastest() { tail -n +2 "$1/metrics.csv" | sort -t, -k7 -g | tail -n 1 | cut -d, -f7; }

# frugal train with the workload's settings on the first machine's cores (COUNT of them);
# extra arguments follow.
train() {
    local name=$1 count=$2
    shift 2
    (on_cores 0 "$count" ./frugal train "examples/$job" --overwrite --set job.epochs=$epochs \
        --set "job.output=$out/$name" \
        --set data.test_limit=1 --set energy.baseline_seconds=0 "$@") > "$out/$name.log" 2>&1 ||
        { cat "$out/$name.log" >&2; exit 1; }
}

# A coordinator and a node (join options in $4), each with $workers workers, through the proxy;
# more arguments go to the coordinator.
cluster() {
    local name=$1 rate=$2 delay=$3 node_opts=$4 port=$((base + runs * 2))
    shift 4
    runs=$((runs + 1))
    (on_cores $((2 * workers)) 1 ./build/release/netproxy "127.0.0.1:$((port + 1))" \
        "127.0.0.1:$port" --rate "$rate" --delay "$delay" --duration 3000) 2> "$out/$name.proxy" &
    pids+=($!)
    # shellcheck disable=SC2086
    (on_cores "$workers" "$workers" ./frugal join "127.0.0.1:$((port + 1))" --key "$out/key" \
        --workers "$workers" $node_opts) > "$out/$name.node" 2>&1 &
    pids+=($!)
    train "$name" "$workers" --set execution.workers="$workers" --listen "127.0.0.1:$port" \
        --key "$out/key" --wait-for 1 "$@"
    wait "${pids[-1]}" || { cat "$out/$name.node" >&2; exit 1; }
    kill "${pids[-2]}" 2>/dev/null || true
}

# Bytes both ways over the images of the run, and the share of the chunks the nodes computed.
traffic_and_share() {
    "${PYTHON:-/usr/bin/python3}" - "$out/$1/summary.json" "$2" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
nodes = s["cluster"]["nodes"]
total = sum(n["bytes_sent"] + n["bytes_received"] for n in nodes)
print("bytes_per_image=%d nodes_share=%.2f" % (round(total / float(sys.argv[2])), sum(n["share"] for n in nodes)))
EOF
}

# What the best split of whole chunks between the two machines would give, against their solo
# speeds added, were the network free: chunks are the unit of work (a batch's gradient is summed
# chunk by chunk in a fixed order), so with few chunks per batch no split is near the speeds'.
best_split() {   # fast img/s, slow img/s, run name
    "${PYTHON:-/usr/bin/python3}" - "$1" "$2" "$out/$3/summary.json" <<'EOF'
import json, sys
fast, slow = float(sys.argv[1]), float(sys.argv[2])
n = json.load(open(sys.argv[3]))["execution"]["chunks_per_batch"]
best = max(1 / max((n - k) / n / fast, k / n / slow) for k in range(n))
print("%.2f" % (best / (fast + slow)))
EOF
}

# The efficiency a split could reach were the CPU time that sealing and opening its bytes take
# (bytes per image, at $cipher) its only cost: the reference's cores compute an image in
# 2 x workers / its img/s, the cluster's as many cores add the cipher's time to that.
crypto_bound() {   # bytes per image, reference img/s
    awk -v b="$1" -v r="$2" -v w="$workers" -v s="$cipher" 'BEGIN {
        if (s > 0) printf "%.2f", 1 / (1 + b * r / (2 * w * s * 1e9)); else printf "unmeasured" }'
}

# The last epoch's test accuracy.
test_acc() { tail -n 1 "$1/metrics.csv" | cut -d, -f5; }

line() {   # workload link mode img/s reference name [more fields]
    local eff
    eff=$(awk -v a="$4" -v b="$5" 'BEGIN { printf "%.2f", a / b }')
    printf 'bench cluster %s %s %s img_per_s=%.0f single_img_per_s=%.0f efficiency=%s %s%s\n' \
        "$1" "$2" "$3" "$4" "$5" "$eff" "$(traffic_and_share "$6" $((2048 * epochs)))" "${7:-}"
}

runs=0
while read -r shape job; do
    train single $((2 * workers)) --set execution.workers=$((2 * workers))
    single=$(fastest "$out/single")
    cluster 10g 10000 0.1 ""
    line "$shape" 10Gb/s sync "$(fastest "$out/10g")" "$single" 10g
    # the same with the node pinned to a chunk of every batch: what the deal's choice avoids
    cluster 10g-pinned 10000 0.1 "" --set placement.all_nodes=on
    pinned_bytes=$(traffic_and_share 10g-pinned $((2048 * epochs)) |
        sed 's/bytes_per_image=\([0-9]*\).*/\1/')
    line "$shape" 10Gb/s sync-node-pinned "$(fastest "$out/10g-pinned")" "$single" 10g-pinned \
        " crypto_bound=$(crypto_bound "$pinned_bytes" "$single")"
    tested=(--set data.test_images=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
            --set data.test_labels=/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz
            --set data.test_limit=1000)
    cluster 1g 1000 0.5 "" "${tested[@]}"
    line "$shape" 1Gb/s sync "$(fastest "$out/1g")" "$single" 1g " test_acc=$(test_acc "$out/1g")"
    cluster 1g-avg 1000 0.5 "" "${tested[@]}" --set cluster.sync_every=8
    line "$shape" 1Gb/s sync_every=8 "$(fastest "$out/1g-avg")" "$single" 1g-avg \
        " test_acc=$(test_acc "$out/1g-avg") sync_test_acc=$(test_acc "$out/1g")"
    cluster 1g-half 1000 0.5 "" "${tested[@]}" --set cluster.sync_every=8 --set cluster.compress=on
    line "$shape" 1Gb/s sync_every=8,compress "$(fastest "$out/1g-half")" "$single" 1g-half \
        " test_acc=$(test_acc "$out/1g-half") sync_test_acc=$(test_acc "$out/1g")"
    cluster 1g-late 1000 0.5 "" "${tested[@]}" --set cluster.sync_every=8 --set cluster.compress=on \
        --set cluster.overlap=on
    line "$shape" 1Gb/s sync_every=8,compress,overlap "$(fastest "$out/1g-late")" "$single" 1g-late \
        " test_acc=$(test_acc "$out/1g-late") sync_test_acc=$(test_acc "$out/1g")"
    # heterogeneous: the node 2x slower, against the two machines' solo speeds added
    train solo-fast "$workers" --set execution.workers="$workers"
    train solo-slow "$workers" --set execution.workers="$workers" --set execution.slowdown=2
    solos=$(awk -v a="$(fastest "$out/solo-fast")" -v b="$(fastest "$out/solo-slow")" 'BEGIN { print a + b }')
    cluster slow-node 10000 0.1 "--slowdown 2"
    line "$shape" 10Gb/s sync-node-2x-slower "$(fastest "$out/slow-node")" "$solos" slow-node \
        " best_split_efficiency=$(best_split "$(fastest "$out/solo-fast")" "$(fastest "$out/solo-slow")" slow-node)"
done <<'EOF_WORKLOADS'
116x158x3 dahl-fashion-mnist-116x158x3.cfg
270x360x3 dahl-fashion-mnist-270x360x3.cfg
EOF_WORKLOADS
