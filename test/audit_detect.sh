#!/usr/bin/env bash
# audit_detect.sh NP MPIRUN-ARGS...: the atomics audit must catch a word
# changed by two kinds of atomics.  Runs audit_mixed (processes that
# disagree on acc_single_intrinsic) under OSC_UCXX_AUDIT_ATOMICS=1 and
# expects the job to fail with the audit's report; then without the audit,
# where it must pass.  Two kinds meet only where the window's single
# elements take lock-free CPU atomics (every process maps every other's
# memory: UCX's shared-memory transports), so the check is skipped over
# UCX_TLS=tcp.  run-tests.sh runs it from acc.list.
set -u
np=$1; shift
bindir=${TEST_BINDIR:-$(pwd)}
case " $* " in
    *UCX_TLS=tcp*) echo "audit_detect.sh: skipped over tcp (no lock-free kind there)"; exit 0 ;;
esac
out=$(timeout -k 5 120 mpirun "$@" -x OSC_UCXX_AUDIT_ATOMICS=1 -np "$np" "$bindir/audit_mixed" 2>&1)
rc=$?
printf '%s\n' "$out" | grep -E "audit|FAILED" | head -5
if [ $rc = 0 ] || [ $rc = 124 ]; then
    echo "audit_detect.sh: FAILED: the audited run ended with $rc, expected a failure"; exit 1
fi
if ! printf '%s\n' "$out" | grep -q "osc/ucxx atomics audit: window .*window memory at +0: CPU atomics (rank 0) and stripe-locked writes"; then
    printf '%s\n' "$out" | tail -20
    echo "audit_detect.sh: FAILED: no audit report of the counter"; exit 1
fi
# (an audited suite run passes the audit in: left out here)
plain=()
for a in "$@"; do
    case $a in OSC_UCXX_AUDIT_ATOMICS=*) unset 'plain[-1]' ;; *) plain+=("$a") ;; esac
done
env -u OSC_UCXX_AUDIT_ATOMICS timeout -k 5 120 mpirun "${plain[@]}" -np "$np" \
    "$bindir/audit_mixed" >/dev/null 2>&1 || {
    echo "audit_detect.sh: FAILED: audit_mixed failed without the audit"; exit 1; }
echo "audit_detect: ok"
