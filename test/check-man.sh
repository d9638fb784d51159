#!/usr/bin/env bash
# check-man.sh: the MPIX man pages are complete and installed.
#   - every MPIX_ function libmpix_ucxx exports (nm -D) or mpix_ucxx.h
#     declares, and every MPIX_ callback type the header declares, has a page
#     docs/man/man3/NAME.3 (a page that is `.so man3/OTHER.3` needs OTHER.3);
#   - Makefile.am installs every page (dist_man3_MANS);
#   - the pages lint clean (mandoc -Tlint, else groff -ww; skipped, and said
#     so, where neither is installed);
#   - every osc_ucxx_ MCA parameter a page names is registered by the
#     component (a page must not outlive a parameter).
# Run by run-tests.sh (test/static.list), which passes NP and mpirun
# arguments; they are ignored.  Finds libmpix_ucxx in the build tree
# ($TEST_BINDIR/../.libs) unless MPIX_LIB names it.  Exit 0 or 1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
mandir=$top/docs/man/man3
header=$top/mpix/mpix_ucxx.h
lib=${MPIX_LIB:-${TEST_BINDIR:-$here}/../.libs/libmpix_ucxx.so}
problems=0
problem() { echo "check-man.sh: $*"; problems=$((problems + 1)); }

[ -r "$lib" ] || { echo "check-man.sh: no $lib (build first, or set MPIX_LIB)"; exit 1; }
command -v nm >/dev/null || { echo "check-man.sh: nm not found (binutils)"; exit 1; }

exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" && $3 ~ /^MPIX_/ { print $3 }')
declared=$(sed -n 's/^int \(MPIX_[A-Za-z0-9_]*\)(.*/\1/p' "$header")
# typedef int NAME(...)  or  typedef int (*NAME)(...)
callbacks=$(tr '\n' ' ' <"$header" | grep -oE 'typedef [^;(]*\(?\*?[[:space:]]*MPIX_[A-Za-z0-9_]+\)?[[:space:]]*\(' |
            grep -oE 'MPIX_[A-Za-z0-9_]+')
[ -n "$exported" ] || problem "$lib exports no MPIX_ function"
[ -n "$callbacks" ] || problem "$header declares no MPIX_ callback type (did its form change?)"
for f in $declared; do
    grep -qx "$f" <<<"$exported" || problem "$f is declared in mpix_ucxx.h but $lib does not export it"
done

names=$(printf '%s\n' $exported $declared $callbacks | sort -u)
for name in $names; do
    page=$mandir/$name.3
    if [ ! -f "$page" ]; then
        problem "$name has no man page (docs/man/man3/$name.3)"
        continue
    fi
    target=$(sed -n '1s/^\.so man3\/\(.*\)$/\1/p' "$page")
    if [ -n "$target" ] && [ ! -f "$mandir/$target" ]; then
        problem "$name.3 sources man3/$target, which does not exist"
    fi
done

for page in "$mandir"/*.3; do
    f=${page##*/}
    grep -q "docs/man/man3/$f\b" "$top/Makefile.am" ||
        problem "$f is not in Makefile.am's dist_man3_MANS (make install would not install it)"
done

# Lint: mandoc's warnings (but for its advice against .so, Open MPI's way of
# pointing several names at one page), else groff's.
if command -v mandoc >/dev/null; then
    out=$(cd "$top/docs/man" && mandoc -Tlint -W warning man3/*.3 2>&1 | grep -v '\.so is fragile')
    [ -z "$out" ] || problem "mandoc -Tlint:"$'\n'"$out"
elif command -v groff >/dev/null; then
    out=$(cd "$top/docs/man" && for p in man3/*.3; do groff -man -ww -z "$p" 2>&1 | sed "s|^|$p: |"; done)
    [ -z "$out" ] || problem "groff -ww:"$'\n'"$out"
else
    echo "check-man.sh: neither mandoc nor groff is installed: pages not linted"
fi

for p in $(grep -ohE 'osc_ucxx_[a-z0-9_]+' "$mandir"/*.3 | sort -u); do
    grep -q "\"${p#osc_ucxx_}\"" "$top"/ompi/mca/osc/ucxx/*.c ||
        problem "a man page names MCA parameter $p, which the component does not register"
done

echo "check-man.sh: $(wc -w <<<"$names") MPIX names, $(ls "$mandir"/*.3 | wc -l) pages, $problems problem(s)"
[ "$problems" = 0 ]
