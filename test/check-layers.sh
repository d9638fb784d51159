#!/usr/bin/env bash
# check-layers.sh: no file of the component uses a function (or variable)
# that a file of a higher layer defines, but for the known exceptions.
#
# docs/architecture.md says it all: under "## Layers", a table whose rows
# start with a layer number and name the files of that layer (the .c files
# count here); under "## Uses across the layers by design", the
# exceptions, one row per pair of files: the file that uses, the file that
# defines (or `*`: any file uses), the names (without the ompi_osc_ucxx_
# prefix), why.  A file may use what its own layer and the layers below
# define.  Every name listed as an exception must still be used that way: one
# that no longer is fails the check too, so that the list only shrinks.
#
# Who uses what comes from the compiled objects' symbol tables (nm): what
# each object defines, and what it uses that another object defines.  That
# is exact for calls and for functions named as values (a module table); a
# header's inline function counts for the .c files it is compiled into.
# The objects are those of the .c files ompi/mca/osc/ucxx/sources.am lists,
# in the build tree (${TEST_BINDIR}/.. or OBJDIR).
#
# Run by run-tests.sh (test/static.list), which passes NP and mpirun
# arguments; they are ignored.  Environment: DOC (default
# docs/architecture.md), OBJDIR (the build's ompi/mca/osc/ucxx), NM.
# Exit 0 or 1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
doc=${DOC:-$top/docs/architecture.md}
objdir=${OBJDIR:-${TEST_BINDIR:-$here}/../ompi/mca/osc/ucxx}
sources=$top/ompi/mca/osc/ucxx/sources.am
NM=${NM:-nm}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check-layers.sh: $*"; exit 1; }

[ -r "$doc" ] || fail "no $doc"
[ -r "$sources" ] || fail "no $sources"
command -v "${NM%% *}" >/dev/null || fail "nm not found (binutils)"

# The two tables: "file layer", and "from to symbol" per listed name.
awk -v layers="$tmp/layers" -v known="$tmp/known" '
    /^## / { section = $0; next }
    /^\|/ {
        n = split($0, cell, "|")
        for (i = 2; i < n; ++i) gsub(/^[ \t]+|[ \t]+$/, "", cell[i])
        if (section ~ /^## Layers/ && cell[2] ~ /^[0-9]+$/) {
            rest = cell[3]
            while (match(rest, /osc_ucxx_[a-z0-9_]+\.c/)) {
                print substr(rest, RSTART, RLENGTH), cell[2] > layers
                rest = substr(rest, RSTART + RLENGTH)
            }
        } else if (section ~ /^## Uses across the layers by design/) {
            from = cell[2]; to = cell[3]; gsub(/`/, "", from); gsub(/`/, "", to)
            if (from !~ /^(\*|osc_ucxx_.*\.c)$/ || to !~ /^osc_ucxx_.*\.c$/) next
            m = split(cell[4], name, ",")
            for (i = 1; i <= m; ++i) {
                gsub(/[` ]/, "", name[i])
                if (name[i] == "") continue
                if (name[i] !~ /^(ompi|mca)_/) name[i] = "ompi_osc_ucxx_" name[i]
                print from, to, name[i] > known
            }
        }
    }' "$doc"
touch "$tmp/layers" "$tmp/known"
[ -s "$tmp/layers" ] || fail "no layer table (## Layers) in $doc"

# Symbols: "file F -" per object, "file D symbol" for what it defines,
# "file U symbol" for what it uses.
srcs=$(sed -n 's|^[[:space:]]*%reldir%/\(osc_ucxx_[a-z0-9_]*\.c\).*|\1|p' "$sources")
[ -n "$srcs" ] || fail "no .c file in $sources"
for src in $srcs; do
    lo=$objdir/mca_osc_ucxx_la-${src%.c}.lo
    [ -r "$lo" ] || fail "no $lo (build first, or set OBJDIR)"
    pic=$(sed -n "s/^pic_object='\(.*\)'$/\1/p" "$lo")
    [ -n "$pic" ] && [ "$pic" != none ] || pic=$(sed -n "s/^non_pic_object='\(.*\)'$/\1/p" "$lo")
    echo "$src F -"
    $NM -P -g "$objdir/$pic" | awk -v f="$src" '
        $2 == "U" { print f, "U", $1; next }
        $2 ~ /^[A-TV-Z]$/ { print f, "D", $1 }'
done >"$tmp/symbols" || fail "$NM failed"

awk -v doc="$doc" '
    FILENAME ~ /layers$/ { layer[$1] = $2; next }
    FILENAME ~ /known$/ { key = $1 " " $2 " " $3; known[key] = 1; order[++nknown] = key; next }
    $2 == "F" { files[$1] = 1; nfiles++; next }
    $2 == "D" { def[$3] = $1; next }
    { use[++nuse] = $1 " " $3 }
    END {
        for (f in files) if (!(f in layer)) {
            printf "check-layers.sh: %s has no layer in %s\n", f, doc; bad = 1
        }
        for (f in layer) if (!(f in files)) {
            printf "check-layers.sh: %s has a layer in %s but is not built\n", f, doc; bad = 1
        }
        if (bad) exit 1
        if (nuse == 0) { print "check-layers.sh: nm printed nothing"; exit 1 }
        for (i = 1; i <= nuse; ++i) {
            split(use[i], u, " ")
            from = u[1]; sym = u[2]
            if (!(sym in def) || def[sym] == from) continue   # Open MPI, UCX, libc, itself
            to = def[sym]
            refs++
            if (layer[to] <= layer[from]) continue
            if ((from " " to " " sym) in known) { seen[from " " to " " sym] = 1; debt++; continue }
            if (("* " to " " sym) in known) { seen["* " to " " sym] = 1; continue }
            printf "up-call: %s (layer %d) uses %s of %s (layer %d)\n", from, layer[from], sym,
                   to, layer[to]
            up++
        }
        for (i = 1; i <= nknown; ++i) if (!(order[i] in seen)) {
            split(order[i], k, " ")
            printf "gone: %s no longer uses %s of %s: delete it from %s\n", k[1], k[3], k[2], doc
            gone++
        }
        printf "check-layers.sh: %d files, %d uses across files; up the layers: %d new, " \
               "%d known\n", nfiles, refs, up, debt
        if (up > 0)
            print "check-layers.sh: a file may use only what its own layer and the layers " \
                  "below define: register a handler or a hook instead"
        if (gone > 0)
            print "check-layers.sh: the known exceptions must shrink with the code"
        if (up + gone > 0) exit 1
    }' "$tmp/layers" "$tmp/known" "$tmp/symbols"
