#!/usr/bin/env bash
# check-shape.sh: the project's shape stays what a maintainer would merge
# (issue 53): at most 12 MCA parameters (ompi_info --param osc ucxx
# --level 9, where the installed component is visible), a README.md of at
# most 400 lines, no source file of more than 900 lines, and no
# measurement figures (times, speed-up factors, percentages) in the
# sources' comments or the README: they are wrong on the next machine and
# belong in commit messages and bench/ docs; and libmpix_ucxx free of Open
# MPI internals.  Run by run-tests.sh (test/static.list), which passes NP
# and mpirun arguments; they are ignored.  Exit 0 or 1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
problems=0
problem() { echo "check-shape.sh: $*"; problems=$((problems + 1)); }

if ompi_info 2>/dev/null | grep -q 'MCA osc: ucxx'; then
    params=$(ompi_info --param osc ucxx --level 9 | grep -c 'parameter "osc_ucxx_')
    [ "$params" -le 12 ] || problem "$params MCA parameters (at most 12): $(ompi_info --param osc ucxx --level 9 | grep -o 'parameter "osc_ucxx_[a-z_]*' | cut -d'"' -f2 | tr '\n' ' ')"
    echo "check-shape.sh: $params MCA parameters"
else
    echo "check-shape.sh: osc/ucxx is not installed where ompi_info looks: parameters not counted"
fi
lines=$(wc -l <"$top/README.md")
[ "$lines" -le 400 ] || problem "README.md has $lines lines (at most 400: design notes go in docs/)"

sources=$(ls "$top"/ompi/mca/osc/ucxx/*.[ch] "$top"/mpix/*.[ch] 2>/dev/null)
for f in $sources; do
    n=$(wc -l <"$f")
    [ "$n" -le 900 ] || problem "${f#$top/} has $n lines (at most 900: one concern per file)"
done
# a number with a time unit, "N x faster/slower", "N %"
figure='[0-9]\s*(µs|us|ns|ms)\b|[0-9]\s*(x|×)\s*(faster|slower|less|more)\b|[0-9.]+×|[0-9]\s*%'
# shellcheck disable=SC2086
hits=$(grep -nE "$figure" $sources "$top/README.md" | sed "s|$top/||")
[ -z "$hits" ] || problem "measurement figures (put them in the commit message or bench/):
$hits"
# libmpix_ucxx (and the table header it shares with the component) uses
# MPI's public API only (docs/windows.md): no Open MPI header, no Open MPI
# internal name (ompi_/opal_ ones but the table's ompi_osc_ucxx_, OBJ_,
# OMPI_/OPAL_ but the header's guard).
lib="$top/mpix/mpix_ucxx.c $top/mpix/mpix_ucxx.h $top/ompi/mca/osc/ucxx/osc_ucxx_ext.h"
internal='#include "(ompi|opal)[/_]|\b(ompi|opal)_[a-z0-9_]+|\bOBJ_[A-Z_]+|\bO(MPI|PAL)_[A-Z_]+'
# shellcheck disable=SC2086
hits=$(grep -nE "$internal" $lib | sed "s|$top/||" |
    sed -E 's/\bompi_osc_ucxx_[a-z0-9_]*//g; s|"ompi/mca/osc/ucxx/osc_ucxx_ext\.h"||; s/OMPI_OSC_UCXX_EXT_H//g' |
    grep -E "$internal")
[ -z "$hits" ] || problem "libmpix_ucxx uses Open MPI internals (the component must do it, through osc_ucxx_ext.h):
$hits"
echo "check-shape.sh: README.md $lines lines, $problems problem(s)"
[ "$problems" = 0 ]
