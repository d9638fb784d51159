#!/usr/bin/env bash
# check-shape.sh: the project's shape stays what a maintainer would merge
# (issue 53): at most 12 MCA parameters (ompi_info --param osc ucxx
# --level 9, where the installed component is visible), a README.md of at
# most 400 lines.  Run by run-tests.sh (test/static.list), which passes NP
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
echo "check-shape.sh: README.md $lines lines, $problems problem(s)"
[ "$problems" = 0 ]
