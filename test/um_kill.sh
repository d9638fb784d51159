#!/usr/bin/env bash
# um_kill.sh NP MPIRUN-ARGS...: start um_kill, SIGKILL its mpirun once every
# rank has made its windows, then check that nothing osc/ucxx or UCX made in
# /dev/shm (files the ranks mapped under /dev/shm/osc_ucxx* or /dev/shm/ucx*,
# still linked) or in System V shared memory (segments the ranks mapped) is
# left once the ranks are gone.  Ranks that outlive mpirun are killed with
# SIGKILL too, as a resource manager would.  run-tests.sh runs it from
# dyn.list.
set -u
np=$1; shift
bindir=${TEST_BINDIR:-$(pwd)}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
mpirun "$@" -np "$np" "$bindir/um_kill" >"$out" 2>&1 &
mpirun_pid=$!
for _ in $(seq 600); do
    [ "$(grep -c '^ready$' "$out")" -ge "$np" ] && break
    kill -0 "$mpirun_pid" 2>/dev/null || break
    sleep 0.1
done
if [ "$(grep -c '^ready$' "$out")" -lt "$np" ]; then
    kill -9 "$mpirun_pid" 2>/dev/null
    tail -20 "$out"
    echo "FAILED: the ranks did not get ready"; exit 1
fi
kill -9 "$mpirun_pid"
wait "$mpirun_pid" 2>/dev/null
pids=$(awk '$1 == "pid" {print $2}' "$out")
for _ in $(seq 50); do
    alive=0
    for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
done
for p in $pids; do
    if kill -0 "$p" 2>/dev/null; then echo "rank pid $p outlived mpirun: killed"; kill -9 "$p"; fi
done
sleep 1
left=0
files=$(awk '$1 == "shm-file" {print $2}' "$out" | sort -u)
segs=$(awk '$1 == "sysv" {print $2}' "$out" | sort -u)
echo "mpirun killed; ranks mapped $(echo "$files" | grep -c .) linked file(s), $(echo "$segs" | grep -c .) SysV segment(s)"
for f in $files; do
    if [ -e "$f" ]; then echo "FAILED: $f is still there"; ls -la "$f"; left=1; fi
done
live=$(ipcs -m | awk 'NR > 3 && $2 ~ /^[0-9]+$/ {print $2}')
for s in $segs; do
    if printf '%s\n' "$live" | grep -qx "$s"; then
        echo "FAILED: SysV segment $s is still there"; ipcs -m | awk -v s="$s" '$2 == s'; left=1
    fi
done
[ $left = 0 ] && echo "um_kill: ok"
exit $left
