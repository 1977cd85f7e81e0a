#!/usr/bin/env bash
# The working tree's CPU kernels against REV's (default HEAD), in one process
# (./build.sh bench ab [REV] [CALLS]): each tree's ops/ and common/ compiled as its own Makefile
# compiles them for the release binary, plus -fPIC, into a shared library; tools/ab_harness.c
# loads both and times the fused convolution passes of the bench's layers (and of DAHL's first
# layers on bytes) with one, then the other, call by call, the fastest of CALLS (default 100)
# each. Made for hosts whose speed
# drifts over minutes (docs/kernels.md: 25% on machine A), where whole runs one after another
# cannot tell a few percent apart. REV's ops/conv.h and ops/layers.h must be the working
# tree's (the harness calls both libraries through them). AB_BASE_ISA and AB_NEW_ISA
# (portable, avx2, avx512) hold REV's or the working tree's kernels to that instruction set:
# `AB_NEW_ISA=avx2 ./build.sh bench ab HEAD` times one tree's AVX2 paths against its best.
# AB_ONLY=NAME: only the layers whose name contains NAME.
# Prints: bench ab LAYER PASS base_us=A new_us=B speedup=A/B
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:-HEAD}
calls=${2:-100}
out=$PWD/build/ab
if ! git diff --quiet "$rev" -- ops/conv.h ops/layers.h; then
    echo "bench ab: ops/conv.h or ops/layers.h differ from $rev's; the harness needs one API" >&2
    exit 1
fi
rm -rf "$out"
mkdir -p "$out/base"
git archive "$rev" Makefile ops common | tar -x -C "$out/base"

# kernels_so TREE LIB: TREE's ops/*.c and common/*.c as one shared library.
kernels_so() {
    local tree=$1 lib=$2 objs=$2.objs src obj cmd
    mkdir -p "$objs/ops" "$objs/common"
    for src in $(cd "$tree" && ls ops/*.c common/*.c); do
        obj=build/release/${src%.c}.o
        cmd=$(make -s -C "$tree" -n -B VARIANT=release "$obj" | grep -F -- "-c -o $obj")
        cmd=${cmd/-Werror/}   # a measurement, not a check: an old tree's warnings under -fPIC
        echo "cd $tree && ${cmd/-o $obj/-fPIC -o $objs/${src%.c}.o}"
    done | xargs -d '\n' -P "${JOBS:-2}" -n 1 sh -c
    gcc -shared -Wl,-Bsymbolic -o "$lib" "$objs"/*/*.o -lm -lpthread -ldl
}

kernels_so "$out/base" "$out/base.so"
kernels_so "$PWD" "$out/new.so"
gcc -std=c17 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -I. -o "$out/ab_harness" tools/ab_harness.c -ldl
echo "bench ab base=$(git rev-parse --short "$rev") new=working tree calls=$calls"
"$out/ab_harness" "$calls" "$out/base.so" "$out/new.so"
