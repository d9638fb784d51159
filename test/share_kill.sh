#!/usr/bin/env bash
# share_kill.sh NP MPIRUN-ARGS...: run share_kill (a rank SIGKILLs itself
# after attaching memory), then check that the /dev/shm directories of
# osc/ucxx's shared objects that it printed are all gone: the PMIx server
# removes them when their process ends.  run-tests.sh runs it from dyn.list.
set -u
np=$1; shift
bindir=${TEST_BINDIR:-$(pwd)}
out=$(timeout -k 5 60 mpirun "$@" -np "$np" "$bindir/share_kill" 2>&1)
rc=$?
dirs=$(printf '%s\n' "$out" | awk '$1 == "shm-dir" && $2 != "none" {print $2}')
n=$(printf '%s\n' "$dirs" | grep -c . || true)
echo "mpirun exit $rc; directories: $n"
printf '%s\n' "$dirs"
if [ "$rc" = 0 ] || [ "$rc" = 124 ]; then
    echo "FAILED: expected the job to end with the killed rank (exit $rc)"; exit 1
fi
if [ "$n" != "$np" ]; then
    printf '%s\n' "$out" | tail -20
    echo "FAILED: expected $np directories (memory not moved?)"; exit 1
fi
sleep 1
left=0
for d in $dirs; do
    if [ -e "$d" ]; then echo "FAILED: $d is still there"; ls -la "$d"; left=1; fi
done
[ $left = 0 ] && echo "share_kill: ok"
exit $left
