#!/usr/bin/env bash
# The portable binary's checks (./build.sh test-portable), each counted as a test:
#   floor      objdump: no glibc symbol newer than 2.17, no library but glibc's own
#   userland   it trains in Debian 11's base system (glibc 2.31; debootstrap, kept in
#              build/oldroot), where the release binary built here refuses to start
#   old cpu    under qemu's Core 2 Duo (no AVX) it picks the portable kernels and trains to the
#              weights the portable kernels give natively
#   unwind     the unwinder CLBlast's exceptions use walks a stack, linked as the binary is
#   entropy    with the getrandom system call refused (a kernel before 3.17), libsodium and
#              the stand-ins still draw random bytes, linked as the binary is
#   opencl     where the ordinary build finds an OpenCL device whose CLBlast passes its
#              self-check (PoCL here), the portable binary does too (its C++ runs)
# The ordinary build (build/release/frugal) is the reference of the userland and opencl checks.
# Ends with "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/portable/frugal}
[ -x build/release/frugal ] || { echo "check_portable: build/release/frugal is missing (./build.sh)" >&2; exit 1; }
root=build/oldroot/bullseye
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0 fail=0
ok() { echo "PASS portable_$1"; pass=$((pass + 1)); }
ko() { echo "FAIL portable_$1: $2"; fail=$((fail + 1)); }
small="--set data.limit=2048 --set data.test_limit=512 --set job.epochs=2 --set energy.baseline_seconds=0"

check_floor() {
    local newest libs
    newest=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)
    libs=$(objdump -p "$bin" | awk '/NEEDED/ { print $2 }' | sort | tr '\n' ' ')
    echo "  $bin: newest glibc symbol $newest; needs $libs"
    if [ "$(printf '%s\n' "$newest" GLIBC_2.17 | sort -V | tail -n 1)" != GLIBC_2.17 ]; then
        ko floor "$newest is newer than GLIBC_2.17"
    elif [ -n "$(echo "$libs" | tr ' ' '\n' | grep -vE '^(|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|ld-linux-x86-64\.so\.2)$')" ]; then
        ko floor "it needs more than glibc: $libs"
    else
        ok floor
    fi
}

# Debian 11's minimal base system, made once (about 30 s and 200 MB).
old_root() {
    [ -x "$root/bin/sh" ] && return 0
    [ "$(id -u)" = 0 ] || { echo "  debootstrap and chroot need root"; return 1; }
    command -v debootstrap >/dev/null || { echo "  debootstrap is not installed (./build.sh deps)"; return 1; }
    rm -rf "$root" && mkdir -p "$(dirname "$root")"
    debootstrap --variant=minbase bullseye "$root" http://deb.debian.org/debian > "$work/debootstrap.log" 2>&1 ||
        { tail -n 5 "$work/debootstrap.log"; rm -rf "$root"; return 1; }
}

check_userland() {
    old_root || { ko userland "no Debian 11 userland"; return; }
    local glibc
    glibc=$(chroot "$root" /lib/x86_64-linux-gnu/libc.so.6 | head -n 1)
    echo "  $root: $glibc"
    mkdir -p "$root/job" "$root/usr/share/datasets"
    cp -r /usr/share/datasets/fashion-mnist "$root/usr/share/datasets/"
    cp "$bin" "$root/job/frugal"
    cp build/release/frugal "$root/job/frugal-release"
    cp examples/dahl-fashion-mnist.cfg "$root/job/"
    # shellcheck disable=SC2086 # the settings are words
    if ! chroot "$root" /usr/bin/env -i /job/frugal train /job/dahl-fashion-mnist.cfg --overwrite \
        --set job.output=/job/run $small > "$work/userland.log" 2>&1 || ! grep -q '^epoch 2/2' "$work/userland.log"; then
        ko userland "it did not train there: $(tail -n 3 "$work/userland.log")"
    elif chroot "$root" /job/frugal-release --version > "$work/release.log" 2>&1; then
        ko userland "the release binary starts there too: the check proves nothing"
    else
        echo "  $(grep '^epoch 2/2' "$work/userland.log")"
        echo "  the release binary there: $(head -n 1 "$work/release.log")"
        ok userland
    fi
}

check_old_cpu() {
    command -v qemu-x86_64 >/dev/null || { ko old_cpu "qemu-x86_64 is not installed (./build.sh deps)"; return; }
    # shellcheck disable=SC2086 # the settings are words
    FRUGAL_ISA=portable "$bin" train examples/dahl-fashion-mnist.cfg --set "job.output=$work/native" \
        $small > "$work/native.log" 2>&1 &&
    qemu-x86_64 -cpu core2duo "$bin" train examples/dahl-fashion-mnist.cfg \
        --set "job.output=$work/core2duo" $small > "$work/core2duo.log" 2>&1
    local rc=$?
    if [ $rc -ne 0 ]; then
        ko old_cpu "a run failed: $(tail -n 3 "$work/native.log" "$work/core2duo.log")"
    elif ! grep -q 'kernels portable' "$work/core2duo.log"; then
        ko old_cpu "under a Core 2 Duo it did not pick the portable kernels: $(grep -m1 kernels "$work/core2duo.log")"
    elif ! cmp -s "$work/native/model.bin" "$work/core2duo/model.bin"; then
        ko old_cpu "its weights differ from the native portable run's"
    else
        echo "  core2duo: $(grep '^epoch 2/2' "$work/core2duo.log")"
        ok old_cpu
    fi
}

# portable/NAME_check.c linked as the portable binary is, into $work/NAME; 0, or 1 (said).
link_check() {
    local name=$1 gcc_lib sys_lib
    gcc_lib=$(dirname "$(gcc -print-libgcc-file-name)")
    sys_lib=/usr/lib/$(gcc -print-multiarch)
    build/zig/ziglang/zig cc -target x86_64-linux-gnu.2.17 -D_GNU_SOURCE -O1 -funwind-tables \
        -isystem build/portable/include -o "$work/$name" "portable/${name}_check.c" \
        build/portable/portable/glibc_compat.o "$gcc_lib/libgcc_eh.a" "$sys_lib/libsodium.a" \
        -lm -ldl -lpthread > "$work/$name.log" 2>&1 && return 0
    ko "$name" "it does not link: $(tail -n 3 "$work/$name.log")"
    return 1
}

check_entropy() {
    link_check entropy || return
    if "$work/entropy" > "$work/entropy.out" 2>&1; then
        echo "  $(cat "$work/entropy.out")"
        ok entropy
    else
        ko entropy "$(cat "$work/entropy.out")"
    fi
}

check_unwind() {
    link_check unwind || return
    if ! "$work/unwind" > "$work/unwind.out" 2>&1 || [ "$(sed -n 's/^frames //p' "$work/unwind.out")" -lt 4 ]; then
        ko unwind "the backtrace stopped short: $(cat "$work/unwind.out")"
    else
        echo "  $(cat "$work/unwind.out") (third, second, first, main and below)"
        ok unwind
    fi
}

check_opencl() {
    build/release/frugal info > "$work/info-release.log" 2>&1
    "$bin" info > "$work/info.log" 2>&1
    local want got
    want=$(grep -c 'CLBlast: SGEMM self-check passed' "$work/info-release.log")
    got=$(grep -c 'CLBlast: SGEMM self-check passed' "$work/info.log")
    if [ "$want" -eq 0 ]; then
        echo "  no OpenCL device whose CLBlast passes here: nothing to compare"
        ok opencl
    elif [ "$got" -ne "$want" ]; then
        ko opencl "$want devices pass CLBlast's self-check with the ordinary build, $got with it: $(grep -A3 OpenCL "$work/info.log")"
    else
        echo "  $got OpenCL device(s): CLBlast's SGEMM self-check passed"
        ok opencl
    fi
}

check_floor
check_opencl
check_userland
check_old_cpu
check_unwind
check_entropy
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
