#!/usr/bin/env bash
# AddressSanitizer run of the threaded and progress-thread tests.
#
# Builds a second copy of the project with `configure --enable-asan` (the
# component and libmpix_ucxx instrumented; the test programs are not),
# installs it into a private prefix and a private component directory, and
# runs the tests named by ASAN_TESTS through run-tests.sh with the ASan
# runtime preloaded into every rank.  An ASan report aborts the rank, so its
# test fails.  Prints run-tests.sh's PASS/FAIL lines, the start of every ASan
# report, and last the line "N passed, N failed"; exits non-zero when a test
# fails (or nothing ran).
#
# Why the preload: mpirun starts programs that are not linked with ASan and
# Open MPI dlopen()s the instrumented component later.  The ASan runtime must
# be the first library of the process (it replaces malloc and friends before
# anything allocates), so it refuses to be loaded as a dependency of a dlopen'ed
# library ("ASan runtime does not come first in initial library list") unless
# LD_PRELOAD puts it first.
#
# Usage: test/asan-check.sh            (from anywhere; about 5 minutes after the first build)
# Environment:
#   ASAN_TESTS=REGEX   tests to run (default below: the threaded and
#                      progress-thread tests, large: the copy loop and
#                      the prefault chunk bits, win_reuse: rkeys that
#                      workers keep across windows, win_comm:
#                      communicators kept across windows, --mt among them,
#                      win_alive: state arenas, win_early: active
#                      messages for windows still being created,
#                      alloc_layout, win_nomem: window allocations, and
#                      those the address space refuses, um_edges and
#                      um_cma: user memory, cross-memory attach and its
#                      accumulate buffers, dyn_table: a dynamic window's
#                      region table, read where its owner rewrites it)
#   ASAN_DIR=DIR       work directory (default build-asan/ in the source tree):
#                      src/ (copy of the sources), build/, prefix/,
#                      components/, results/ (one log per run)
#   ASAN_OPTIONS=...   default detect_leaks=0:abort_on_error=1:allocator_may_return_null=1
#                      (Open MPI itself does not free everything at finalize;
#                      a request the allocator cannot meet returns NULL, as
#                      without ASan: alloc_layout and win_nomem test that)
#   TRANSPORTS, TEST_TIMEOUT, MPIRUN_ARGS   passed on to run-tests.sh
set -euo pipefail

# The tests run under ASan: programs of test/*.list whose name matches.
ASAN_TESTS=${ASAN_TESTS:-'^(threads|large|alloc_layout|win_nomem|win_reuse|win_comm|win_alive|win_early|at_barrier|um_edges|um_cma|dyn_hot|dyn_regions_mt|dyn_table|lockall_excl|lock_race|ucx_start|ext_scope|info_state|mt_.*|progress_.*|rreq_.*|acc_am_order|am_threads|am_concurrent|am_progress)$'}

top=$(cd "$(dirname "$0")/.." && pwd)
work=${ASAN_DIR:-$top/build-asan}
mkdir -p "$work"
work=$(cd "$work" && pwd)
build=$work/build prefix=$work/prefix compdir=$work/components
asan_options=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:allocator_may_return_null=1}
jobs=$(nproc 2>/dev/null || echo 2)
say() { echo "asan-check: $*"; }
die() { echo "asan-check: $*" >&2; exit 1; }

# 1. Sources.  configure refuses to build outside the source directory once
# the source directory is configured itself (as it is after ./configure &&
# make check), so then build from a copy in $work/src: the working tree's
# files (tracked and untracked, not ignored) in a git checkout, else the
# distribution files (make distdir).  Only files whose content differs are
# copied (with the current time), so make rebuilds just what changed.
sync_files() {    # sync_files FROM: NUL-separated paths relative to FROM on stdin
    local f
    while IFS= read -r -d '' f; do
        [ -f "$1/$f" ] || continue
        cmp -s "$1/$f" "$src/$f" && continue
        mkdir -p "$src/$(dirname "$f")" && cp --preserve=mode "$1/$f" "$src/$f"
    done
}
if [ ! -f "$top/config.status" ]; then
    src=$top
elif git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    src=$work/src
    git -C "$top" ls-files -z --cached --others --exclude-standard | sync_files "$top"
else
    src=$work/src
    rm -rf "$work/dist"
    make -C "$top" distdir distdir="$(realpath -m --relative-to="$top" "$work/dist")" \
        >"$work/distdir.log" 2>&1 || die "make distdir in $top failed (see $work/distdir.log)"
    (cd "$work/dist" && find . -type f -print0) | sync_files "$work/dist"
    rm -rf "$work/dist"
fi
if [ ! -x "$src/configure" ]; then
    say "autogen.pl in $src"
    (cd "$src" && ./autogen.pl) >"$work/autogen.log" 2>&1 ||
        { tail -n 20 "$work/autogen.log"; die "autogen.pl failed (see $work/autogen.log)"; }
fi

# 2. Configure (once; afterwards make reruns what changed) and install the
# component and libmpix_ucxx (SUBDIRS=.: not the benchmarks).
mkdir -p "$build"
if [ ! -f "$build/Makefile" ] ||
   [ "$(sed -n 's/^abs_top_srcdir = //p' "$build/Makefile")" != "$src" ]; then
    rm -rf "$build" && mkdir -p "$build"
    say "configuring $build"
    (cd "$build" && "$src/configure" -q --enable-asan --prefix="$prefix" \
        --with-component-dir="$compdir") >"$work/configure.log" 2>&1 ||
        { tail -n 20 "$work/configure.log"; die "configure failed (see $work/configure.log)"; }
fi
say "building and installing into $prefix and $compdir"
make -C "$build" -j"$jobs" SUBDIRS=. install >"$work/build.log" 2>&1 ||
    { tail -n 30 "$work/build.log"; die "build failed (see $work/build.log)"; }
grep -q __asan_report < <(nm -D "$compdir/mca_osc_ucxx.so") ||
    die "$compdir/mca_osc_ucxx.so is not instrumented"

# 3. The test programs the selected list lines need (a *.sh entry runs the
# program of the same name).
progs=$(cat "$top"/test/*.list | awk '!/^#/ && NF {print $1}' | sort -u |
        while read -r p; do if [[ $p =~ $ASAN_TESTS ]]; then echo "${p%.sh}"; fi; done | sort -u)
[ -n "$progs" ] || die "no test in test/*.list matches ASAN_TESTS='$ASAN_TESTS'"
# shellcheck disable=SC2086
make -C "$build/test" -j"$jobs" $progs >>"$work/build.log" 2>&1 ||
    { tail -n 30 "$work/build.log"; die "building the tests failed (see $work/build.log)"; }

# 4. A private component directory that is a complete search path alone:
# every Open MPI component except an installed osc/ucxx (loading two would
# make Open MPI pick either), and our instrumented one.
ompi_pkglibdir=$(ompi_info --path pkglibdir | sed -n 's/.*Pkglibdir: *//p')
[ -d "$ompi_pkglibdir" ] || die "cannot find Open MPI's component directory (ompi_info --path pkglibdir)"
find "$compdir" -maxdepth 1 -xtype l -delete    # components gone since the last run
for f in "$ompi_pkglibdir"/*; do
    case $(basename "$f") in mca_osc_ucxx*) ;; *) ln -sf "$f" "$compdir/" ;; esac
done

# 5. Run: every rank gets the private component path, the ASan runtime first
# and the private libmpix_ucxx.
cc=$(sed -n 's/^CC = //p' "$build/Makefile")
libasan=$(${cc:-gcc} -print-file-name=libasan.so)
[ -f "$libasan" ] || die "no libasan.so for ${cc:-gcc}"
rm -rf "$work/results"
say "tests matching $ASAN_TESTS: $(tr "\n" " " <<<"$progs")"
rc=0
MPIRUN_ARGS="${MPIRUN_ARGS:-} -x OMPI_MCA_mca_base_component_path=$compdir \
 -x LD_PRELOAD=$libasan -x ASAN_OPTIONS=$asan_options \
 -x LD_LIBRARY_PATH=$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
TEST_BINDIR=$build/test TEST_LOGDIR=$work/results TESTS=$ASAN_TESTS \
    "$top/test/run-tests.sh" | tee "$work/run-tests.out" || rc=$?

# The reports themselves (run-tests.sh shows only the end of a failed log),
# then run-tests.sh's summary again as the last line.
reports=$(grep -l 'ERROR: AddressSanitizer' "$work"/results/*.log 2>/dev/null || true)
if [ -n "$reports" ]; then
    for log in $reports; do
        # ranks report at once, so lines interleave: every rank's SUMMARY
        # line, then the first 25 lines from the first report on
        echo "ASan reports in $log:"
        grep -h 'SUMMARY: AddressSanitizer' "$log" | sort | uniq -c | sed 's/^ */    /'
        awk '/ERROR: AddressSanitizer/ {on = 1} on && n < 25 {print "    " $0; n++}' "$log"
    done
    tail -n 1 "$work/run-tests.out"
    rc=1
fi
exit $rc
