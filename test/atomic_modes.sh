#!/usr/bin/env bash
# atomic_modes.sh NP MPIRUN-ARGS...: processes whose UCX applies atomics
# differently (a device in some, the CPU in others) cannot keep UCX atomics
# on one word atomic with each other (docs/atomics.md).  Runs mixed_tls
# over UCX_TLS=tcp,self without direct mappings (the test hook direct=0:
# state words not mapped, as across nodes) with rank 0 pretending
# its UCX uses device atomics (OSC_UCXX_TEST_DEVICE_ATOMICS=1, a test hook):
# the job must pass and say so (the component's verbose line at level 1:
# locks managed by the target, singles by the stripes); with every rank
# pretending, it must pass without.  run-tests.sh runs it
# from active.list.
set -u
np=$1; shift
bindir=${TEST_BINDIR:-$(pwd)}
hook=OSC_UCXX_TEST_DEVICE_ATOMICS=1
run() { timeout -k 5 120 mpirun --mca osc_ucxx_verbose 1 -x OSC_UCXX_TEST_TUNE=direct=0 "$@" 2>&1; }
mixed=$(run "$@" -x UCX_TLS=tcp,self -np 1 -x $hook "$bindir/mixed_tls" -i 10 : \
            -np $((np - 1)) "$bindir/mixed_tls" -i 10)
rc=$?
same=$(run "$@" -x UCX_TLS=tcp,self -x $hook -np "$np" "$bindir/mixed_tls" -i 10)
rc2=$?
printf '%s\n' "$mixed" | grep -E "mixed_tls:|apply atomics differently" | sed 's/window [0-9]*/window N/' |
    sort | uniq -c
fail=0
[ $rc = 0 ] || { echo "atomic_modes.sh: FAILED: mixed modes: exit $rc"; fail=1; }
[ $rc2 = 0 ] || { echo "atomic_modes.sh: FAILED: one mode: exit $rc2"; fail=1; }
printf '%s\n' "$mixed" | grep -q "apply atomics differently" ||
    { echo "atomic_modes.sh: FAILED: no warning with mixed modes"; fail=1; }
printf '%s\n' "$same" | grep -q "apply atomics differently" &&
    { echo "atomic_modes.sh: FAILED: a warning with one mode"; fail=1; }
[ $fail = 0 ] && echo "atomic_modes: ok"
exit $fail
