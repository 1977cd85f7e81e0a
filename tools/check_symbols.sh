#!/usr/bin/env bash
# Every global name frugal defines carries its module's prefix (Redis's ae*/anet*, SQLite's
# sqlite3*), so a name says where it lives. Lists the global symbols of the objects of a build
# (nm) and fails on one that starts with none of:
#   its file's name, or that name's first word (engine/cluster/sync_deal.o: sync_)
#   its folder's prefix: runtime/ rt_, ops/ ops_, energy/ energy_, opencl/ ocl_, netio/ netio_,
#   common/ common_, an engine/ wing its wing's name (engine/cluster/: cluster_)
# The OpenCL API itself (cl*, forwarded by opencl/loader.c) is exempt. Run by ./build.sh test.
# usage: tools/check_symbols.sh [BUILD_DIR]   (default build/release)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
folder_prefix() {
    case "$1" in
    runtime) echo rt ;; opencl) echo ocl ;; engine/*) echo "${1#engine/}" ;; *) echo "$1" ;;
    esac
}
bad=0 checked=0
while IFS= read -r obj; do
    rel=${obj#"$build"/}
    [ -f "${rel%.o}.c" ] || continue   # left from a file since renamed
    dir=$(dirname "$rel") stem=$(basename "$rel" .o)
    prefixes=("$stem" "${stem%%_*}" "$(folder_prefix "$dir")")
    while read -r _ kind sym; do
        checked=$((checked + 1))
        ok=0
        for p in "${prefixes[@]}"; do
            [[ $sym == "$p" || $sym == "${p}_"* ]] && { ok=1; break; }
        done
        [[ $rel == opencl/loader.o && $sym == cl[A-Z]* ]] && ok=1
        if [ $ok -eq 0 ]; then
            echo "check_symbols: $rel: '$sym' has no module prefix (${prefixes[*]/%/_})" >&2
            bad=1
        fi
    done < <(nm -g --defined-only "$obj" | awk '$2 ~ /^[TDBRVW]$/')
done < <(find "$build"/common "$build"/runtime "$build"/ops "$build"/energy "$build"/opencl \
              "$build"/netio "$build"/engine -name '*.o' | sort)
[ $checked -gt 0 ] || { echo "check_symbols: no symbols found under $build (not built?)" >&2; exit 1; }
[ $bad -eq 0 ] && echo "check_symbols: the $checked global names under $build carry their module's prefix"
exit $bad
