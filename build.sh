#!/usr/bin/env bash
# frugal's one entry point for building, testing, benchmarking and the quick start.
#
#   ./build.sh            build ./frugal (static, baseline x86-64)
#   ./build.sh portable   build build/portable/frugal, which starts on any glibc from 2.17 on
#                         (CentOS 7, RHEL 8, Debian 10 and later; zig from PyPI)
#   ./build.sh test-portable
#                         its checks: the glibc floor, training in an old Debian userland
#                         (debootstrap), and under an emulated Core 2 Duo (qemu)
#   ./build.sh install [PREFIX]
#                         build, then install PREFIX/bin/frugal, the example jobs in
#                         PREFIX/share/frugal/examples and the docs in PREFIX/share/doc/frugal
#                         (PREFIX: /usr/local as root, else ~/.local)
#   ./build.sh train [JOB.cfg] [frugal train options]
#                         install what is missing, build, train (default: DAHL's CNN on Fashion-MNIST)
#   ./build.sh test       build and run every test (optimised build), and the layout checks
#   ./build.sh test-sanitizers
#                         the tests again under ASan+UBSan, and those with threads under TSan
#                         (less long scenarios that repeat shorter tests' code: ASAN_TESTS, TSAN_TESTS)
#   ./build.sh bench WHAT run a benchmark: runtime (and a device task chain's hops), ops, f6 (tiles
#                         of 6 against frugal's F(4x4)),
#                         train [NAME ...] (frugal against PyTorch;
#                         NAME: 28x28x1, vgg-small, ...: those workloads only), opencl,
#                         gpu (frugal's OpenCL path against PyTorch CUDA on an NVIDIA GPU),
#                         cluster (a coordinator and a node through tools/netproxy), placement
#                         (fixed configurations against each policy's choice), gossip, simulate
#                         (frugal simulate on 10,000 machines), green (participation policies on
#                         2020 grid traces of France and Great Britain), operating-point (power
#                         caps searched against the machine's own limits; needs root),
#                         ab [REV] [CALLS] (the working tree's CPU kernels against REV's, default
#                         HEAD, call by call in one process), pair [REV] [PAIRS] [JOB] [--set ..]
#                         (the working tree's frugal against REV's, both training at once)
#   ./build.sh fuzz [SECONDS]
#                         libFuzzer (clang, ASan+UBSan) on every decoder, SECONDS each (30)
#   ./build.sh fixtures   regenerate tests/fixtures from PyTorch (Debian's python3-torch)
#   ./build.sh deps       install the Debian packages frugal's tests and quick start use
#   ./build.sh clean
set -euo pipefail
cd "$(dirname "$0")"

JOBS=$(nproc 2>/dev/null || echo 2)
# Debian packages: compiler and static libraries; PyTorch only for fixtures and benchmarks.
# Building needs OpenCL's headers and CLBlast's static library; the binary does not need OpenCL
# to run (it loads it at run time). PoCL is the OpenCL device the tests run on; Fashion-MNIST
# is the data set of the quick start and of a test.
PACKAGES_BUILD="gcc make libc6-dev zlib1g-dev libsodium-dev opencl-c-headers ocl-icd-opencl-dev libclblast-dev pocl-opencl-icd dataset-fashion-mnist"
PACKAGES_FUZZ="clang libclang-rt-14-dev"
# The portable binary's checks: objdump, an old Debian userland, an emulated old CPU.
PACKAGES_PORTABLE="binutils debootstrap qemu-user"
# zig (PyPI's ziglang, into build/zig) compiles the portable binary against glibc 2.17's symbols.
ZIG_VERSION=0.17.1
# Optional too: Chromium renders the HTML report in a test, python3-venv holds TensorBoard
# (from PyPI, build/pyenv) whose reader a test runs on frugal's event files, and Slurm runs a
# one-machine cluster in a test for one real `srun frugal train` (none of its daemons is started
# by installing it: the test starts its own, on loopback).
PACKAGES_OPTIONAL="python3-torch chromium python3-venv slurmctld slurmd slurm-client"

have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }

deps() {
    debian_deps
    tensorboard_env
    zig_toolchain
}

zig_toolchain() {
    [ -x build/zig/ziglang/zig ] && [ "$(build/zig/ziglang/zig version)" = "$ZIG_VERSION" ] && return 0
    echo "build.sh: installing zig $ZIG_VERSION (PyPI's ziglang) into build/zig"
    rm -rf build/zig
    { [ -x build/pyenv/bin/pip ] || python3 -m venv build/pyenv; } &&
        build/pyenv/bin/pip install -q --target build/zig "ziglang==$ZIG_VERSION" ||
        echo "build.sh: zig not installed (PyPI unreachable?): ./build.sh portable cannot build" >&2
}

# TensorBoard in build/pyenv for the event-file test; without it (offline) that test checks the
# files' framing only, and says so.
tensorboard_env() {
    [ -x build/pyenv/bin/python3 ] && build/pyenv/bin/python3 -c 'import tensorboard' 2>/dev/null && return 0
    echo "build.sh: installing TensorBoard (PyPI) into build/pyenv"
    { python3 -m venv --system-site-packages build/pyenv && build/pyenv/bin/pip install -q tensorboard; } ||
        echo "build.sh: optional TensorBoard not installed (no python3-venv, or PyPI unreachable)" >&2
}

debian_deps() {
    local missing=()
    for p in $PACKAGES_BUILD $PACKAGES_FUZZ $PACKAGES_PORTABLE $PACKAGES_OPTIONAL; do
        have_pkg "$p" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null; then sudo="sudo"; else
            echo "build.sh: missing Debian packages: ${missing[*]} (run as root to install them)" >&2
            return 0
        fi
    fi
    echo "build.sh: installing ${missing[*]}"
    $sudo apt-get update -qq
    # Required ones must install; optional ones (large, only for reference runs) may fail.
    for p in $PACKAGES_BUILD $PACKAGES_FUZZ $PACKAGES_PORTABLE; do
        have_pkg "$p" || DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$p"
    done
    for p in $PACKAGES_OPTIONAL; do
        have_pkg "$p" || DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$p" ||
            echo "build.sh: optional package $p not installed" >&2
    done
}

build() {
    make -s -j"$JOBS" VARIANT=release all
    cp build/release/frugal ./frugal
    echo "build.sh: built ./frugal (a copy of build/release/frugal; the tests are in build/release)"
}

portable() {
    make -s -j"$JOBS" VARIANT=portable all
    local floor
    floor=$(objdump -T build/portable/frugal | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)
    echo "build.sh: built build/portable/frugal (the newest glibc symbol it needs: $floor)"
}

install_frugal() {
    local prefix=${1:-}
    if [ -z "$prefix" ]; then
        if [ "$(id -u)" = 0 ]; then prefix=/usr/local; else prefix=$HOME/.local; fi
    fi
    build
    install -D -m 755 build/release/frugal "$prefix/bin/frugal"
    install -d "$prefix/share/frugal/examples" "$prefix/share/doc/frugal/docs"
    install -m 644 examples/*.cfg "$prefix/share/frugal/examples/"
    install -m 644 README.md "$prefix/share/doc/frugal/"
    install -m 644 docs/*.md "$prefix/share/doc/frugal/docs/"
    echo "build.sh: installed $prefix/bin/frugal, its examples in $prefix/share/frugal/examples" \
         "and docs in $prefix/share/doc/frugal"
    case ":$PATH:" in
    *":$prefix/bin:"*) ;;
    *) echo "build.sh: $prefix/bin is not on PATH: add it (export PATH=\"$prefix/bin:\$PATH\")" ;;
    esac
}

# The layout's rules: engine/'s wings include one another one way, every global name carries
# its module's prefix (on the release objects just built). Each counts as a test.
check_layout() {
    local script
    for script in tools/check_wings.sh "tools/check_symbols.sh build/release"; do
        # shellcheck disable=SC2086 # a script and its argument
        if $script; then layout_pass=$((layout_pass + 1)); else layout_fail=$((layout_fail + 1)); fi
    done
}

# The sanitizer runs. Each test-name prefix must name a test (tests/main.c refuses one that does
# not); -PREFIX leaves tests out. Left out are long scenarios whose code shorter tests in the same
# run go through: a sanitizer finds a bad access or a race on the first pass through the code,
# not the fortieth, and CI must end within 45 minutes on a host three times slower than usual
# (the run of 2026-12-01 took 86 minutes, TSan alone about 40).
# ASan+UBSan: every test but
#   real clusters the simulator is compared with (the cluster_* tests run those clusters),
#   four gossip peers to an accuracy, and peers of their own classes (gossip_survives_*,
#   gossip_half_*, gossip_refuses_*: the same peers' code), the placement tuner and the
#   cluster's energy policy and a node's power budget driven for a minute (the placement_*
#   units, and cluster_averaging_shares_chunks_*), a coordinator killed or paused and resumed
#   (resuming is train_resume_* and cluster_averaging_overlapped_coordinator_killed_*), nodes
#   leaving and joining (cluster_slots_*, cluster_node_leaves_*,
#   cluster_averaging_loses_just_the_rounds_*),
#   a probe under way at the end (cluster_far_node_*), the operating points' search and
#   windows over short epochs (op_limits_*, op_node_*, op_train_value_* stay), and links broken
#   by tools/netproxy (the hub_stream fuzzer feeds a real hub frames cut anywhere).
ASAN_TESTS="-simulate_predicts_loopback -simulate_synchronous_cluster -gossip_four_peers
    -gossip_peers_with_classes -placement_energy_keeps -placement_budget_below_one_core
    -cluster_energy_policy -cluster_coordinator_killed
    -cluster_node_rejoins_a_coordinator_paused -cluster_nodes_leave_and_join
    -cluster_averaging_every_4_steps -cluster_node_ends_cleanly_with_a_probe -op_windows
    -cluster_node_keeps_its_own_power -op_train_auto -cluster_broken_links"
# TSan: the tests with threads (the runtime, training, the resize, the sensors' sampler,
# OpenCL's device workers, netio, clusters, gossip, green rounds, launchers, operating points),
# less the scenarios whose threads a shorter test in the run goes through. Of the clusters stay: 1, 2 and
# 3 nodes, a steal, OpenCL nodes, the cipher, a coordinator stopped by SIGINT, and averaging
# (compressed, overlapped with a late node); strangers are netio_strangers_*'s; the
# messages a node sends out of turn are decoded on one thread (the ASan run has them). Of gossip,
# a peer killed and one joining; of the launchers, the ranks' units; of green rounds, the backup's
# and the budget's; the placement and operating-point searches driven for a minute are left to
# the ASan run (their units and op_limits_*, op_node_* stay), and so are OpenCL training to an
# accuracy and the placement's calibration (one step, cpu+opencl and a failing device stay).
TSAN_TESTS="runtime run_ train energy opencl_train cluster gossip green netio placement trace op_
    dataset_resize_on_threads
    launch_ -cluster_coordinator_killed -cluster_node_rejoins_a_coordinator_paused
    -cluster_broken_links -cluster_averaging_every_4_steps -cluster_node_keeps_its_own_power
    -cluster_nodes_leave_and_join -cluster_energy_policy -cluster_node_ends_cleanly_with_a_probe
    -cluster_says_when_the_weights -cluster_averaging_compressed_takes_a_late_node
    -cluster_averaging_overlapped_survives -cluster_averaging_drops_a_node_stalled
    -cluster_refuses_results_out_of_turn -cluster_idle_node_takes_back
    -cluster_idle_coordinator_takes_back -cluster_refuses_gradients -cluster_far_node
    -cluster_averaging_overlapped_coordinator_killed -cluster_chunk_sent_again
    -cluster_averaging_shares_chunks -cluster_averaging_centered_clip -cluster_slots_of_nodes
    -cluster_averaging_every_step -cluster_node_joins_while_strangers -gossip_four_peers
    -gossip_peers_with_classes -gossip_half_participation -gossip_refuses_strangers
    -launch_oar -launch_wrong_environment -launch_real_srun -launch_nodes_prove
    -green_postponed_sync -placement_energy_keeps -placement_budget_below_one_core -op_train_auto
    -op_windows -op_train_value_out_of_range -op_train_without_permission
    -opencl_train_dahl_cnn_within_a_point
    -opencl_train_calibrates_the_placement_figures -cluster_refuses_strangers
    -cluster_stalled_node -cluster_averaging_loses_just_the_rounds -cluster_node_leaves_on_sigint
    -green_node_whose_grid -launch_slurm_ranks"

# run_tests RUN...: each RUN is "variant|test filter|FRUGAL_TEST_SCALE" (sanitizers run fewer
# seeds); the layout checks count with the first. Ends with "N passed, M failed".
run_tests() {
    local total_pass=0 total_fail=0 line layout_pass=0 layout_fail=0
    if [ "$1" = "release||1" ]; then
        echo "== layout"
        check_layout
        total_pass=$layout_pass total_fail=$layout_fail
    fi
    for run in "$@"; do
        IFS='|' read -r variant filter scale <<<"$run"
        echo "== tests [$variant]"
        make -s -j"$JOBS" VARIANT="$variant" tests
        set +e
        # shellcheck disable=SC2086 # the filter is a list of test-name prefixes
        FRUGAL_TEST_VARIANT=$variant FRUGAL_TEST_SCALE=$scale \
            TSAN_OPTIONS="halt_on_error=1" ./build/"$variant"/frugal_tests $filter | tee build/"$variant"/test.log
        set -e
        line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' build/"$variant"/test.log | tail -1)
        if [ -z "$line" ]; then
            echo "build.sh: the $variant test run ended without a summary" >&2
            total_fail=$((total_fail + 1))
            continue
        fi
        total_pass=$((total_pass + $(echo "$line" | cut -d' ' -f1)))
        total_fail=$((total_fail + $(echo "$line" | cut -d' ' -f3)))
    done
    echo "$total_pass passed, $total_fail failed"
    [ "$total_fail" -eq 0 ]
}

# Each target for SECONDS, two at a time, from the stored inputs (tests/fuzz/corpus/TARGET, which
# the ordinary tests replay); what the fuzzer finds new stays in build/fuzz/corpus, a crash is
# written next to the stored inputs (commit it: it becomes a test) and fails the run.
fuzz() {
    local seconds=${1:-30}
    make -s -j"$JOBS" VARIANT=fuzz fuzzers
    local targets
    targets=$(make -s --no-print-directory print-fuzz-targets)
    # shellcheck disable=SC2016 # expanded by the inner shell
    printf '%s\n' $targets | xargs -P 2 -I{} sh -c '
        mkdir -p build/fuzz/corpus/{} tests/fuzz/corpus/{}
        ./build/fuzz/fuzz_{} -max_total_time='"$seconds"' -print_final_stats=1 -rss_limit_mb=4096 \
            -artifact_prefix=tests/fuzz/corpus/{}/crash- build/fuzz/corpus/{} tests/fuzz/corpus/{} \
            > build/fuzz/{}.log 2>&1
        rc=$?
        runs=$(sed -n "s/^stat::number_of_executed_units: *//p" build/fuzz/{}.log)
        if [ $rc -eq 0 ]; then echo "fuzz {}: ${runs:-?} executions in '"$seconds"' s, no finding"
        else echo "fuzz {}: FINDING after ${runs:-?} executions (build/fuzz/{}.log):"; tail -n 30 build/fuzz/{}.log; exit 1; fi'
}

bench() {
    case "${1:-}" in
    runtime)
        make -s -j"$JOBS" VARIANT=release build/release/bench_runtime
        shift
        ./build/release/bench_runtime "${@:-2}"
        ;;
    ops)
        make -s -j"$JOBS" VARIANT=release build/release/bench_ops
        ./build/release/bench_ops "${2:-0.3}"
        ;;
    f6)
        make -s -j"$JOBS" VARIANT=release build/release/bench_f6
        ./build/release/bench_f6 "${2:-100}"
        ;;
    train)
        build
        shift
        tools/bench_train.sh "$@"
        ;;
    opencl)
        build
        make -s -j"$JOBS" VARIANT=release build/release/bench_opencl
        tools/bench_opencl.sh "${2:-0.3}"
        ;;
    gpu)
        build
        tools/bench_gpu.sh
        ;;
    cluster)
        build
        make -s -j"$JOBS" VARIANT=release build/release/netproxy
        tools/bench_cluster.sh
        ;;
    placement)
        build
        tools/bench_placement.sh
        ;;
    gossip)
        build
        make -s -j"$JOBS" VARIANT=release build/release/netproxy
        tools/bench_gossip.sh
        ;;
    simulate)
        build
        tools/bench_simulate.sh
        ;;
    green)
        build
        tools/bench_green.sh
        tools/bench_green_loopback.sh
        ;;
    operating-point)
        build
        tools/bench_operating_point.sh
        ;;
    ab)
        shift
        tools/bench_ab.sh "$@"
        ;;
    pair)
        shift
        tools/bench_pair.sh "$@"
        ;;
    *)
        echo "usage: ./build.sh bench runtime [workers] | ops [seconds-per-case] | f6 [calls] | train [NAME ...] | opencl | gpu | cluster | placement | gossip | simulate | green | operating-point | ab [REV] [calls] | pair [REV] [pairs] [job] [--set key=value ...]" >&2
        return 2
        ;;
    esac
}

case "${1:-build}" in
build) build ;;
install) shift; install_frugal "$@" ;;
portable) deps; portable ;;
test-portable) deps; build; portable; tools/check_portable.sh build/portable/frugal ;;
deps) deps ;;
test) deps; build; run_tests "release||1" ;;
test-sanitizers)
    deps
    build
    run_tests "asan|${ASAN_TESTS//$'\n'/ }|4" "tsan|${TSAN_TESTS//$'\n'/ }|4"
    ;;
train)
    shift
    deps
    build
    job=examples/dahl-fashion-mnist.cfg
    if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then job=$1; shift; fi
    ./frugal train "$job" "$@"
    ;;
bench) shift; deps; bench "$@" ;;
fuzz) shift; deps; fuzz "$@" ;;
fixtures) deps; /usr/bin/python3 tools/gen_fixtures.py ;;
clean) make -s clean ;;
*)
    sed -n '2,/^set /p' "$0" | sed -n 's/^# \{0,1\}//p'
    exit 2
    ;;
esac
