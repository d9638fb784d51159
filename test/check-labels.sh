#!/usr/bin/env bash
# check-labels.sh: every active-message label the tree cites (S1-S30
# semantics, T tests, B benchmarks, as in "S21" or "design T3") is defined
# in docs/active-messages.md (a **S21** item, or a | T3 | or | B9 | row),
# and no source, test, bench file or README.md points at the design note
# outside the tree.  Run by
# run-tests.sh (test/static.list), which passes NP and mpirun arguments;
# they are ignored.  Exit 0 or 1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
doc=$top/docs/active-messages.md
problems=0
problem() { echo "check-labels.sh: $*"; problems=$((problems + 1)); }

[ -r "$doc" ] || { echo "check-labels.sh: no $doc"; exit 1; }
# the sources, tests and benchmarks, not the documents that define or quote
files=$(cd "$top" && find ompi mpix test bench -type f \
            \( -name '*.[ch]' -o -name '*.am' -o -name '*.list' -o -name '*.sh' \
               -o -name run -o -name README \) ! -name check-labels.sh | sort; echo README.md)
cited=$(cd "$top" && grep -ohE '\b[STB][0-9]{1,2}\b' $files | sort -u)
for label in $cited; do
    grep -qE "\*\*$label\*\*|^\| $label \|" "$doc" ||
        problem "$label is cited ($(cd "$top" && grep -lwE "$label" $files | head -3 | tr '\n' ' ')) but not defined in docs/active-messages.md"
done
for f in $(cd "$top" && grep -l 'shared/design' $files bench/*.md 2>/dev/null); do
    problem "$f points at shared/design/, outside the tree (docs/ has the maintained notes)"
done
echo "check-labels.sh: $(wc -w <<<"$cited") labels cited in $(wc -l <<<"$files") files, $problems problem(s)"
[ "$problems" = 0 ]
