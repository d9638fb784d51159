#!/usr/bin/env bash
# hosts.sh: simulated hosts on this machine, so that MPI jobs span "nodes".
#
# Each host is a network namespace (ucxx-h1, ucxx-h2, ...) whose processes
# also get their own UTS namespace (the host's name as hostname), IPC
# namespace and /dev/shm, so Open MPI sees one node per host: peers on other
# hosts are not OPAL_PROC_ON_LOCAL_NODE, the component maps nothing of
# theirs, and UCX reaches them over TCP (its shared-memory transports reach
# only peers in the same IPC namespace).  Ranks on the same host still share
# memory.  The hosts are joined by veth
# pairs to a bridge in a namespace of its own (ucxx-sw); every address is
# inside those namespaces (10.213.77.0/24), nothing touches the machine's
# own network.  /etc/netns/<host>/hosts (ip netns bind-mounts it over
# /etc/hosts) lets each host resolve the others' names.
#
# With a delay (--delay D or HOSTS_DELAY=D) the hosts are joined instead by
# a wire with latency: hosts_wire (hosts_wire.c, built here with cc on
# first use, or HOSTS_WIRE=path), a switch in user space that makes each
# host's eth0 a TAP device and holds every frame D before it delivers it
# (this kernel has no sch_netem).  A round trip between two hosts then takes
# 2D plus the wire's own small cost.  The wire ends with the hosts; its
# summary (frames, drops, how late frames left) is printed by `down`.
#
# mpirun runs inside host 1 with a hostfile of all hosts; it starts its
# daemons on the other hosts through this script as its launch agent
# (plm_rsh_agent), which enters the host's namespaces and runs the command
# line the way ssh would (one shell-parsed string).
#
# Usage (root: creating namespaces needs CAP_SYS_ADMIN):
#   hosts.sh up [N] [--delay D]
#                             create N hosts (default 2; at most 8); D: the
#                             one-way delay between hosts, e.g. 250us, 0.5ms
#                             or 250 (microseconds); default HOSTS_DELAY, or
#                             none (veth pairs and a kernel bridge)
#   hosts.sh down             remove every host this script created
#   hosts.sh mpirun ARGS...   mpirun inside host 1 across all hosts
#                             (add --map-by node to place ranks round-robin;
#                             ranks are not bound unless ARGS say --bind-to)
#   hosts.sh mpiexec ARGS...  MPICH's mpiexec.mpich (hydra) inside host 1
#                             across all hosts, ranks round-robin, its
#                             launcher this script (as for mpirun)
#   hosts.sh exec HOST CMD... run a command on a host (e.g. ucxx-h2)
#   hosts.sh with N [--delay D] CMD...
#                             up N, run CMD with HOSTS=N (and HOSTS_DELAY_US
#                             when delayed) exported, down (also when CMD
#                             fails or is interrupted)
#   hosts.sh delay            the hosts' one-way delay in microseconds (nothing
#                             when they have none)
#   hosts.sh check            exit 0 if hosts can be created here, else say why
#   hosts.sh agent HOST CMD   the launch agent (mpirun calls it)
# Exit status 77 means "cannot create namespaces here" (skip, with a message).
set -u
PREFIX=ucxx-h
SWITCH=ucxx-sw
NET=10.213.77
STATE=/run/ucxx-hosts
here=$(cd "$(dirname "$0")" && pwd)
self=$here/$(basename "$0")

die() { echo "hosts.sh: $*" >&2; exit 1; }

# Can this process create network and UTS namespaces?
can_create() {
    if [ "$(id -u)" != 0 ]; then
        echo "hosts.sh: not root: network namespaces cannot be created (run as root)"; return 77
    fi
    for t in ip unshare nsenter; do
        command -v $t >/dev/null || { echo "hosts.sh: '$t' missing (Debian: iproute2, util-linux)"; return 77; }
    done
    if ! ip netns add ucxx-probe$$ 2>/dev/null; then
        echo "hosts.sh: 'ip netns add' fails here (no CAP_SYS_ADMIN, or namespaces disabled)"; return 77
    fi
    ip netns del ucxx-probe$$
    # the namespaces on_host creates, and the tmpfs it mounts
    if ! unshare --uts --ipc --mount -- mount -t tmpfs probe /dev/shm 2>/dev/null; then
        echo "hosts.sh: 'unshare --uts --ipc --mount' with a tmpfs /dev/shm fails here"; return 77
    fi
    return 0
}

nhosts() { cat "$STATE/count" 2>/dev/null || echo 0; }

down() {
    local n
    n=$(nhosts)
    stop_wire
    # daemons and ranks left behind by a killed job
    for ns in $(ip netns list 2>/dev/null | awk -v p="$PREFIX" 'index($1, p) == 1 {print $1}'); do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -n "$pids" ] && kill -9 $pids 2>/dev/null
        ip netns del "$ns" 2>/dev/null
        rm -rf "/etc/netns/$ns"
    done
    ip netns del "$SWITCH" 2>/dev/null
    rm -rf "$STATE"
    [ "$n" -gt 0 ] && echo "hosts.sh: removed $n hosts"
    return 0
}

# A delay (250us, 0.5ms, 1s, 250 = microseconds) in whole microseconds on
# stdout; empty for none (0).
delay_us() {
    local d=$1 v u
    [[ $d =~ ^([0-9]+(\.[0-9]+)?)(us|ms|s)?$ ]] || die "bad delay '$d' (e.g. 250us, 0.5ms)"
    v=${BASH_REMATCH[1]} u=${BASH_REMATCH[3]:-us}
    awk -v v="$v" -v u="$u" 'BEGIN { m = u == "s" ? 1e6 : u == "ms" ? 1e3 : 1; x = v * m;
        if (x > 1e6) exit 1; if (x >= 0.5) printf "%d\n", x + 0.5 }' || die "delay '$d' over 1 s"
}

# The wire's program: HOSTS_WIRE, else hosts_wire.c built into $STATE.
wire_program() {
    if [ -n "${HOSTS_WIRE:-}" ]; then
        [ -x "$HOSTS_WIRE" ] || die "HOSTS_WIRE=$HOSTS_WIRE is not executable"
        echo "$HOSTS_WIRE"; return
    fi
    command -v cc >/dev/null || die "a delay needs a C compiler (cc) to build hosts_wire.c"
    cc -O2 -o "$STATE/hosts_wire" "$here/hosts_wire.c" >&2 || die "cannot build hosts_wire.c"
    echo "$STATE/hosts_wire"
}

stop_wire() {
    local pid i
    pid=$(cat "$STATE/wire.pid" 2>/dev/null) || return 0
    kill "$pid" 2>/dev/null
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.02; done
    rm -f "$STATE/wire.pid"
    [ -s "$STATE/wire.log" ] && sed 's/^hosts_wire/hosts.sh: wire/' "$STATE/wire.log" >&2
    return 0
}

up() {
    local n=2 i us="" wire
    while [ $# -gt 0 ]; do
        case $1 in
        --delay) [ $# -ge 2 ] || die "--delay needs a value"; us=$(delay_us "$2") || exit 1; shift 2 ;;
        --delay=*) us=$(delay_us "${1#--delay=}") || exit 1; shift ;;
        *) n=$1; shift ;;
        esac
    done
    [ -z "$us" ] && [ -n "${HOSTS_DELAY:-}" ] && { us=$(delay_us "$HOSTS_DELAY") || exit 1; }
    [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 8 ] || die "host count must be 1..8"
    can_create || exit $?
    down >/dev/null 2>&1
    mkdir -p "$STATE"
    if [ -n "$us" ]; then
        [ -c /dev/net/tun ] || die "a delay needs /dev/net/tun (TAP devices)"
        wire=$(wire_program) || exit 1
    else
        ip netns add "$SWITCH" || die "cannot create $SWITCH"
        ip -n "$SWITCH" link add br0 type bridge
        ip -n "$SWITCH" link set br0 up
    fi
    : >"$STATE/hostfile"
    : >"$STATE/hostfile.mpich"
    # hydra's launcher takes a program, not a command line: one that is the agent
    printf '#!/bin/sh\nexec "%s" agent "$@"\n' "$self" >"$STATE/agent"
    chmod +x "$STATE/agent"
    local hosts="127.0.0.1 localhost"$'\n'
    for ((i = 1; i <= n; i++)); do hosts+="$NET.$i $PREFIX$i"$'\n'; done
    for ((i = 1; i <= n; i++)); do
        ip netns add "$PREFIX$i" || { down; die "cannot create $PREFIX$i"; }
    done
    if [ -n "$us" ]; then
        # every host's eth0 is a TAP device of the wire
        "$wire" -d "$us" -P "$STATE/wire.pid" -L "$STATE/wire.log" \
            $(for ((i = 1; i <= n; i++)); do echo "$PREFIX$i"; done) || { down; die "the wire did not start"; }
        echo "$us" >"$STATE/delay_us"
    fi
    for ((i = 1; i <= n; i++)); do
        h=$PREFIX$i
        if [ -z "$us" ]; then
            ip -n "$SWITCH" link add "p$i" type veth peer name eth0 netns "$h"
            ip -n "$SWITCH" link set "p$i" master br0 up
        fi
        ip -n "$h" addr add "$NET.$i/24" dev eth0
        ip -n "$h" link set eth0 up
        ip -n "$h" link set lo up
        mkdir -p "/etc/netns/$h"
        printf '%s' "$hosts" >"/etc/netns/$h/hosts"
        echo "$h slots=64" >>"$STATE/hostfile"
        echo "$h:1" >>"$STATE/hostfile.mpich"
    done
    echo "$n" >"$STATE/count"
    # the bridge forwards once its ports are up: wait until host 1 reaches the last
    for ((i = 0; i < 50; i++)); do
        ip netns exec "${PREFIX}1" ping -c1 -W1 "$NET.$n" >/dev/null 2>&1 && break
        sleep 0.1
    done
    echo "hosts.sh: $n hosts up: $(awk '{printf "%s ", $1}' "$STATE/hostfile")($NET.0/24)${us:+, $us us each way}"
}

# Run CMD on HOST: its network namespace, and new UTS, IPC and mount
# namespaces: the host's name as hostname, System V IPC of its own (UCX's
# shared-memory transports reach only peers in the same IPC namespace), and
# a /dev/shm of its own, as on a separate machine.  Every process of a job on
# one host descends from one such call (mpirun on host 1, a daemon elsewhere).
on_host() {
    local h=$1; shift
    ip netns list | awk '{print $1}' | grep -qx "$h" || die "no host '$h' (hosts.sh up first)"
    exec ip netns exec "$h" unshare --uts --ipc --mount -- /bin/sh -c \
        'hostname "$0" && mount -t tmpfs -o mode=1777 "shm-$0" /dev/shm && exec "$@"' "$h" "$@"
}

case "${1:-}" in
check) can_create ;;
delay) cat "$STATE/delay_us" 2>/dev/null; exit 0 ;;
up) shift; up "$@" ;;
down) down ;;
exec) shift; [ $# -ge 2 ] || die "usage: hosts.sh exec HOST CMD..."; on_host "$@" ;;
agent)
    # mpirun's launch agent: HOST, then a command line for a shell (as ssh
    # joins its arguments); ORTE may put options before the host name.
    shift
    while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
    h=$1; shift
    on_host "$h" /bin/sh -c "$*"
    ;;
mpirun)
    shift
    [ "$(nhosts)" -ge 1 ] || die "no hosts (hosts.sh up first)"
    # Open MPI's runtime and TCP traffic on the hosts' own interface; UCX
    # likewise (lo would let UCX pick 127.0.0.1 for a peer on another host).
    # The hosts share this machine's cores, but each daemon sees all of them
    # and so never tells its ranks that they are oversubscribed: ask for
    # yielding when idle, as mpirun does on one oversubscribed node (without
    # it at_fence with 4 ranks on 2 hosts took 22 s instead of 0.7 s).
    # For the same reason each daemon binds its first rank to core 0 (with
    # --bind-to core, or Open MPI's default for few ranks), so that ranks of
    # different hosts share one core while the other idles: no binding
    # unless ARGS or OMPI_MCA_hwloc_base_binding_policy ask for one.
    bind=(--bind-to none)
    for a in "$@"; do
        case $a in -bind-to|--bind-to|--bind-to=*|-bind-to=*|hwloc_base_binding_policy) bind=() ;; esac
    done
    [ -n "${OMPI_MCA_hwloc_base_binding_policy:-}" ] && bind=()
    on_host "${PREFIX}1" mpirun --hostfile "$STATE/hostfile" \
        --mca plm_rsh_agent "$self agent" \
        --mca oob_tcp_if_include eth0 --mca btl_tcp_if_include eth0 \
        --mca mpi_yield_when_idle 1 "${bind[@]}" \
        -x UCX_NET_DEVICES="${UCX_NET_DEVICES:-eth0}" "$@"
    ;;
mpiexec)
    shift
    [ "$(nhosts)" -ge 1 ] || die "no hosts (hosts.sh up first)"
    command -v mpiexec.mpich >/dev/null || die "mpiexec.mpich missing (Debian: mpich)"
    # hydra starts a proxy per host through the agent (as ssh would); one
    # slot per host in its host file places ranks round-robin
    on_host "${PREFIX}1" mpiexec.mpich -launcher ssh -launcher-exec "$STATE/agent" \
        -f "$STATE/hostfile.mpich" -genv UCX_NET_DEVICES "${UCX_NET_DEVICES:-eth0}" "$@"
    ;;
with)
    shift
    n=${1:-}; shift
    delay=()
    case ${1:-} in
    --delay) [ $# -ge 2 ] && delay=(--delay "$2") && shift 2 ;;
    --delay=*) delay=("$1"); shift ;;
    esac
    [ $# -ge 1 ] || die "usage: hosts.sh with N [--delay D] CMD..."
    msg=$(can_create); rc=$?
    if [ $rc != 0 ]; then echo "$msg" >&2; echo "SKIP: multi-host tests need network namespaces" >&2; exit 77; fi
    if { [ ${#delay[@]} -gt 0 ] || [ -n "${HOSTS_DELAY:-}" ]; } && [ ! -c /dev/net/tun ]; then
        echo "hosts.sh: no /dev/net/tun: the delayed wire needs TAP devices" >&2
        echo "SKIP: multi-host tests with a delay need /dev/net/tun" >&2; exit 77
    fi
    trap 'down' EXIT
    trap 'exit 130' INT TERM
    up "$n" "${delay[@]}" || exit 1
    if [ -f "$STATE/delay_us" ]; then
        HOSTS=$n HOSTS_DELAY_US=$(cat "$STATE/delay_us") "$@"
    else
        HOSTS=$n "$@"
    fi
    ;;
*)
    sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//;/^set -u/d' >&2
    exit 2
    ;;
esac
