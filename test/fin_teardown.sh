#!/usr/bin/env bash
# fin_teardown.sh NP MPIRUN-ARGS...: jobs that must exit 0 from MPI_Finalize,
# repeated (a teardown that goes wrong in one job out of a few must show):
# RUNS jobs (default 10) that call MPI_Finalize right after MPI_Init (the
# endpoints made during MPI_Init still wiring up), then 2 of fin_teardown's
# traffic (every flavor, epoch kind and derived datatype) with the first and
# the last rank only, and with every rank.  A job that printed its success
# line and then failed is reported with its exit status and the first
# lines of UCX's message.  run-tests.sh runs it from core.list.
set -u
np=$1; shift
bindir=${TEST_BINDIR:-$(pwd)}
runs=${RUNS:-10}
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

job() {   # job ARGS...: one mpirun of fin_teardown
    timeout -k 5 120 mpirun "${mpirun_args[@]}" -np "$np" "$bindir/fin_teardown" "$@" >"$log" 2>&1
    local rc=$?
    if [ $rc != 0 ]; then
        failed=$((failed + 1))
        if grep -q 'fin_teardown: ok' "$log"; then
            echo "FAILED: fin_teardown $* exited $rc after its success line"
        else
            echo "FAILED: fin_teardown $* exited $rc"
        fi
        grep -m 3 -E 'Assertion|UCX +(ERROR|FATAL)|Caught signal|check failed' "$log" | cut -c1-300
        tail -n 5 "$log"
    fi
}
mpirun_args=("$@")
for ((i = 0; i < runs; i++)); do job --rounds 0 --pair; done
job --pair --rounds 8
job --rounds 8
echo "fin_teardown.sh: $((runs + 2)) jobs at $np ranks, $failed failed"
[ $failed = 0 ]
