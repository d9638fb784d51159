#!/usr/bin/env bash
# mixed_tls.sh NP MPIRUN-ARGS... [-- PROGRAM-ARGS...]: run mixed_tls with
# rank 0 on UCX_TLS=tcp,self and the other NP-1 ranks on UCX's defaults
# (MPMD), so that the processes of one window see different transports:
# rank 0 maps no peer's memory and no peer maps rank 0's.  Every process
# must still agree on one kind of atomics per word (docs/atomics.md); before
# they did, the first closing fence hung (half the ranks in the state-segment
# barrier, half in the communicator's).  run-tests.sh runs it from
# active.list; MIXED_TIMEOUT (default 120 s) bounds the run.
set -u
np=$1; shift
mpi_args=(); prog_args=()
while [ $# -gt 0 ]; do
    if [ "$1" = -- ]; then shift; prog_args=("$@"); break; fi
    mpi_args+=("$1"); shift
done
bindir=${TEST_BINDIR:-$(pwd)}
[ "$np" -ge 2 ] || { echo "mixed_tls.sh: needs 2 or more ranks"; exit 2; }
timeout -k 5 "${MIXED_TIMEOUT:-120}" mpirun "${mpi_args[@]}" \
    -np 1 -x UCX_TLS=tcp,self "$bindir/mixed_tls" "${prog_args[@]}" : \
    -np $((np - 1)) "$bindir/mixed_tls" "${prog_args[@]}"
rc=$?
[ $rc = 124 ] && echo "mixed_tls.sh: FAILED: timed out (a hang)"
exit $rc
