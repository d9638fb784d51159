#!/usr/bin/env bash
# info_state.sh NP MPIRUN-ARGS...: info_state with the window's info keys
# subscribed in one pass (osc_ucxx_info.c) and through Open MPI's subscriber
# (the test hook's info_direct=0); each run checks the values the window
# honours, and what MPI_Win_get_info reports must then agree exactly, pair
# by pair and in order.  On Open MPI 4.1 the component must have found the
# one pass possible (osc_ucxx_verbose 10 says so), else both runs would be
# Open MPI's subscriber.  run-tests.sh runs it from core.list.
set -u
np=$1; shift
bindir=${TEST_BINDIR:-$(pwd)}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
rc=0
timeout -k 5 120 mpirun "$@" --mca osc_ucxx_verbose 10 -np "$np" "$bindir/info_state" \
    --dump "$dir/direct" >"$dir/direct.log" 2>&1 || { echo "FAILED: one pass"; rc=1; }
timeout -k 5 120 mpirun "$@" -x OSC_UCXX_TEST_TUNE=info_direct=0 -np "$np" \
    "$bindir/info_state" --dump "$dir/subscriber" >"$dir/subscriber.log" 2>&1 ||
    { echo "FAILED: Open MPI's subscriber"; rc=1; }
grep -v 'osc/ucxx:' "$dir/direct.log" | tail -n 5
tail -n 5 "$dir/subscriber.log"
if ompi_info --version 2>/dev/null | grep -q 'v4\.' &&
   ! grep -q 'info keys subscribed directly' "$dir/direct.log"; then
    echo "FAILED: Open MPI 4.1, and the one-pass subscription is off"; rc=1
fi
if ! diff -u "$dir/subscriber" "$dir/direct" >"$dir/diff"; then
    echo "FAILED: the one pass and Open MPI's subscriber report differently:"
    head -n 40 "$dir/diff"; rc=1
fi
[ $rc = 0 ] && echo "info_state.sh: ok ($(grep -c '^##' "$dir/direct") lists agree)"
exit $rc
