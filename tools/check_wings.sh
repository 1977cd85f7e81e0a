#!/usr/bin/env bash
# Checks that engine/'s wings include each other only as engine/README.md allows: one line per
# wing there, "- `WING/` may include: `OTHER/` ...". An #include of engine/OTHER/ from a wing
# that may not include OTHER fails the check, naming the file and line. Run by ./build.sh test.
set -euo pipefail
cd "$(dirname "$0")/.."
declare -A allowed
while IFS= read -r line; do
    wing=$(sed -E 's/^- `([a-z_]+)\/` may include.*/\1/' <<<"$line")
    allowed[$wing]=" $(sed -E 's/^[^:]*://' <<<"$line" | { grep -oE '`[a-z_]+/`' || true; } | tr -d '`/' | tr '\n' ' ') "
done < <(grep -E '^- `[a-z_]+/` may include' engine/README.md)

bad=0
for dir in engine/*/; do
    wing=$(basename "$dir")
    if [ -z "${allowed[$wing]+set}" ]; then
        echo "check_wings: engine/$wing/ has no rule in engine/README.md" >&2; bad=1; continue
    fi
    while IFS=: read -r file lineno text; do
        other=$(sed -E 's/.*"engine\/([a-z_]+)\/.*/\1/' <<<"$text")
        [ "$other" = "$wing" ] && continue
        case "${allowed[$wing]}" in *" $other "*) continue ;; esac
        echo "check_wings: $file:$lineno: $wing/ may not include $other/ ($text)" >&2
        bad=1
    done < <(grep -nH '#include "engine/' "$dir"*.[ch] || true)
done
[ ${#allowed[@]} -gt 0 ] || { echo "check_wings: no rules found in engine/README.md" >&2; exit 1; }
[ $bad -eq 0 ] && echo "check_wings: engine/'s ${#allowed[@]} wings include one another as engine/README.md allows"
exit $bad
