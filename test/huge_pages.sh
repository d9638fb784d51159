#!/usr/bin/env bash
# huge_pages.sh NP MPIRUN-ARGS...: reserve huge pages for the job (the
# hugetlb pool: /proc/sys/vm/nr_hugepages; root only, skipped otherwise),
# run huge_pages, which checks that no rank maps any of them, and give the
# pool back its old size.  run-tests.sh runs it from core.list.
set -u
np=$1; shift
bindir=${TEST_BINDIR:-$(pwd)}
pool=/proc/sys/vm/nr_hugepages
if [ "$(id -u)" != 0 ] || [ ! -w "$pool" ]; then
    echo "huge_pages.sh: skipped: reserving huge pages needs root"; exit 0
fi
old=$(cat "$pool")
want=$((old + 32))
echo "$want" > "$pool" 2>/dev/null
got=$(cat "$pool")
trap 'echo "$old" > "$pool"' EXIT
if [ "$got" -le "$old" ]; then
    echo "huge_pages.sh: skipped: the kernel gave no huge pages ($old -> $got)"; exit 0
fi
echo "huge_pages.sh: hugetlb pool $old -> $got pages"
timeout -k 5 120 mpirun "$@" -np "$np" "$bindir/huge_pages"
