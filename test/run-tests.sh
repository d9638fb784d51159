#!/usr/bin/env bash
# Runs the osc/ucxx test suite: every program listed in test/*.list, for each
# rank count it names, under each UCX transport set, with `--mca osc $OSC`.
#
# List line format (test/*.list):   program  NPLIST  [args...]
#   e.g.  putget  2,4  --iters 100
# `--mca NAME VALUE` among the args is an MCA parameter of the run: it goes
# to mpirun (before the program; `--mca osc LIST` replaces $OSC for the
# line); `--tune NAME=VALUE` changes one of the
# component's internal settings (OSC_UCXX_TEST_TUNE, a test hook: see
# osc_ucxx_component.c); the other args go to the program.
# A program named *.sh is a script in test/ that runs mpirun itself; it gets
# NP and the mpirun arguments (and finds the programs in $TEST_BINDIR).
# Lines starting with '#' are comments.
#
# Environment:
#   OSC=ucxx            the osc component to force (run the suite against a stock one to check a test)
#   TRANSPORTS="shm tcp" transport sets: shm = UCX defaults, tcp = UCX_TLS=tcp,self
#   TESTS=REGEX         run only programs whose name matches
#   TEST_NPS=16,32      run only these rank counts of the lines (default: all)
#   TU_FLAVORS=create,allocate,dynamic,shared   window flavors the tests loop over
#                       (shared: only tests that do MPI_Win_allocate_shared)
#   TEST_TIMEOUT=180    seconds per mpirun
#   HOSTS=N             run every job across the N simulated hosts of hosts.sh
#                       (which must be up: `hosts.sh with N run-tests.sh` does
#                       that), ranks placed round-robin (--map-by node), UCX's
#                       default transports: shared memory inside a host, TCP
#                       between hosts.  The transport set is then "hostsN";
#                       scripts (*.sh) that run mpirun themselves are skipped.
#                       With a delay between the hosts (hosts.sh --delay;
#                       HOSTS_DELAY_US, else what `hosts.sh delay` says) the
#                       jobs get TU_DELAY_US (wire_delay checks it).
#   MPIRUN_ARGS=...     extra mpirun arguments
# Prints one PASS/FAIL line per run and the closing line "N passed, N failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
# Programs: TEST_BINDIR if given, else the current directory (the build
# tree under `make check`), else the source directory.
if [ -n "${TEST_BINDIR:-}" ]; then
    bindir=$TEST_BINDIR
else
    bindir=$(pwd)
    [ -x "$bindir/$(awk '!/^#/ && NF {print $1; exit}' "$here"/*.list 2>/dev/null)" ] || bindir=$here
fi
OSC=${OSC:-ucxx}
# Window flavors the tests loop over (see testutil.h)
export TU_FLAVORS=${TU_FLAVORS:-create,allocate,dynamic,shared}
HOSTS=${HOSTS:-0}
mpirun_cmd=(mpirun)
delay_env=()
if [ "$HOSTS" -gt 1 ]; then
    TRANSPORTS=hosts$HOSTS
    mpirun_cmd=("$here/hosts.sh" mpirun --map-by node)
    delay=${HOSTS_DELAY_US:-$("$here/hosts.sh" delay)}
    [ -n "$delay" ] && delay_env=(-x TU_DELAY_US="$delay")
fi
TRANSPORTS=${TRANSPORTS:-"shm tcp"}
TESTS=${TESTS:-.}
TEST_TIMEOUT=${TEST_TIMEOUT:-180}
logdir=${TEST_LOGDIR:-$bindir/results}
mkdir -p "$logdir"

root_args=()
[ "$(id -u)" = 0 ] && root_args=(--allow-run-as-root)

passed=0; failed=0; failures=()
start=$(date +%s)
for transport in $TRANSPORTS; do
    case $transport in
        shm) tls_env=() ;;
        tcp) tls_env=(-x UCX_TLS=tcp,self) ;;
        hosts[0-9]*) tls_env=(-x TU_HOSTS="$HOSTS" "${delay_env[@]}") ;;   # (tests scale down as over tcp)
        *) echo "run-tests.sh: unknown transport set '$transport'" >&2; exit 2 ;;
    esac
    while read -r prog nps args; do
        case "$prog" in ''|'#'*) continue ;; esac
        [[ $prog =~ $TESTS ]] || continue
        # --mca NAME VALUE: to mpirun; everything else: to the program
        read -ra words <<<"$args"
        mca_args=(); prog_args=(); tune=""; line_osc=$OSC
        for ((i = 0; i < ${#words[@]}; i++)); do
            if [ "${words[i]}" = --mca ] && [ "${words[i + 1]:-}" = osc ] &&
               [ $((i + 2)) -lt ${#words[@]} ]; then
                line_osc=${words[i + 2]}; i=$((i + 2))
            elif [ "${words[i]}" = --mca ] && [ $((i + 2)) -lt ${#words[@]} ]; then
                mca_args+=(--mca "${words[i + 1]}" "${words[i + 2]}"); i=$((i + 2))
            elif [ "${words[i]}" = --tune ] && [ $((i + 1)) -lt ${#words[@]} ]; then
                tune=${tune:+$tune,}${words[i + 1]}; i=$((i + 1))
            else
                prog_args+=("${words[i]}")
            fi
        done
        [ -n "$tune" ] && mca_args+=(-x "OSC_UCXX_TEST_TUNE=$tune")
        for np in ${nps//,/ }; do
            [ -n "${TEST_NPS:-}" ] && [[ ",$TEST_NPS," != *",$np,"* ]] && continue
            name="$prog.np$np.$transport${args:+ $args}"
            tag=$(printf '%s' "$args" | tr -c 'A-Za-z0-9' '_' | sed 's/^_*//;s/_*$//')
            log="$logdir/$prog.np$np.$transport${tag:+.$tag}.log"
            t0=$(date +%s.%N)
            mpi_args=("${root_args[@]}" --oversubscribe --bind-to none --mca osc "$line_osc"
                      "${tls_env[@]}" "${mca_args[@]}")
            if [[ $prog == *.sh ]] && [ "$HOSTS" -gt 1 ]; then
                echo "SKIP $name (a script that runs mpirun itself: single host only)"
                continue
            elif [[ $prog == *.sh ]]; then
                # a script that runs mpirun itself: NP, then the mpirun arguments
                # shellcheck disable=SC2086
                TEST_BINDIR=$bindir timeout -k 10 "$TEST_TIMEOUT" "$here/$prog" "$np" \
                    "${mpi_args[@]}" ${MPIRUN_ARGS:-} "${prog_args[@]}" </dev/null >"$log" 2>&1
            else
                # shellcheck disable=SC2086
                timeout -k 10 "$TEST_TIMEOUT" "${mpirun_cmd[@]}" "${mpi_args[@]}" -np "$np" ${MPIRUN_ARGS:-} \
                    "$bindir/$prog" "${prog_args[@]}" </dev/null >"$log" 2>&1
            fi
            rc=$?
            secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
            if [ $rc = 0 ]; then
                passed=$((passed + 1)); echo "PASS $name (${secs}s)"
            else
                failed=$((failed + 1)); failures+=("$name")
                [ $rc = 124 ] && why="timed out after ${TEST_TIMEOUT}s" || why="exit $rc"
                # a program's own verdict is "NAME: ok (0 errors)": a job that
                # printed it and still failed failed in MPI_Finalize or later
                grep -q ': ok (0 errors)$' "$log" && why="$why after its success line"
                echo "FAIL $name ($why, ${secs}s); last lines of $log:"
                # UCX's and the runtime's own words first: they scroll away
                # under a backtrace and mpirun's closing banner
                grep -m 3 -E 'Assertion|UCX +(ERROR|FATAL)|Caught signal|Signal:' "$log" |
                    cut -c1-300 | sed 's/^/    /'
                tail -n 15 "$log" | sed 's/^/    /'
            fi
        done
    done < <(cat "$here"/*.list)
done
echo "suite time: $(( $(date +%s) - start ))s"
for f in "${failures[@]}"; do echo "failed: $f"; done
echo "$passed passed, $failed failed"
[ $failed = 0 ] && [ $passed -gt 0 ]
