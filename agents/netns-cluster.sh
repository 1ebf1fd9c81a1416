#!/usr/bin/env bash
# Separate test hosts on one machine: N network namespaces on one bridge, each with its own
# address, and a dltui agent in each. Needs root and iproute2. Traffic stays on the bridge.
#
#   agents/netns-cluster.sh up N                 namespaces PREFIX-1..N at SUBNET.11..(10+N)
#   agents/netns-cluster.sh start N [ARGS...]    an agent in each: dltui agent --listen ADDR:7070 ARGS
#   agents/netns-cluster.sh cut I | heal I       take host I's link down (a partition) or up
#   agents/netns-cluster.sh shape I RATE [DELAY] host I's link at RATE each way (tc tbf: 1gbit,
#                                                300mbit...; DELAY needs netem), or "off"
#   agents/netns-cluster.sh down N               stop the agents, delete namespaces and bridge
#
# Environment: PREFIX (default dltui; at most 10 characters), SUBNET (default 198.18.0, the
# range set aside for benchmarking), PORT (7070), DLTUI (how to run dltui, default "dltui",
# e.g. "python3 -m dltui"), RUN_DIR (agent logs and pids, default /tmp/PREFIX-netns), CPU_QUOTA
# (each host's agent and everything it starts held to this many CPUs, e.g. 0.5, through a
# cgroup of its own: hosts on one machine then compute as separate machines would), OWN_CPUS
# (with CPU_QUOTA, 1 keeps each host's threads to CPUs of its own, dealt round the machine's).
set -euo pipefail

PREFIX=${PREFIX:-dltui}
SUBNET=${SUBNET:-198.18.0}
PORT=${PORT:-7070}
DLTUI=${DLTUI:-dltui}
RUN_DIR=${RUN_DIR:-/tmp/$PREFIX-netns}
BRIDGE=$PREFIX-br

usage() { sed -n '2,17p' "$0" >&2; exit 2; }
count() { [[ ${1:-} =~ ^[1-9][0-9]?$ ]] || usage; echo "$1"; }
address() { echo "$SUBNET.$((10 + $1))"; }

up() {
    local n; n=$(count "${1:-}")
    ip link add "$BRIDGE" type bridge
    ip addr add "$SUBNET.1/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up
    for i in $(seq 1 "$n"); do
        local ns=$PREFIX-$i
        ip netns add "$ns"
        ip link add "$ns-h" type veth peer name "$ns-n"
        ip link set "$ns-h" master "$BRIDGE" up
        ip link set "$ns-n" netns "$ns"
        ip -n "$ns" link set "$ns-n" name eth0
        ip -n "$ns" addr add "$(address "$i")/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" link set lo up
        ip -n "$ns" route add default via "$SUBNET.1"
        # The host's DNS server is out of reach from the bridge: each lookup would wait for
        # its timeout (10 s for Gloo's every getaddrinfo). Here a lookup fails at once instead,
        # as on a network whose DNS answers. `ip netns exec` mounts this over /etc/resolv.conf.
        mkdir -p "/etc/netns/$ns"
        echo "nameserver 127.0.0.1" >"/etc/netns/$ns/resolv.conf"
    done
}

start() {
    local n; n=$(count "${1:-}"); shift
    mkdir -p "$RUN_DIR"
    for i in $(seq 1 "$n"); do
        local join="" group
        if [ -n "${CPU_QUOTA:-}" ]; then
            group=$(cpu_group "$i")
            join="echo \$\$ >$group/cgroup.procs && "
            [ -z "${OWN_CPUS:-}" ] || join+="taskset -pc $(host_cpus "$i") \$\$ >/dev/null && "
            # Inside the namespace /sys/fs/cgroup is out of sight: say the quota in threads.
            OMP_NUM_THREADS=$(awk -v q="$CPU_QUOTA" 'BEGIN { n = int(q); print (n < 1 ? 1 : n) }')
            export OMP_NUM_THREADS
        fi
        # $DLTUI is split into words on purpose ("python3 -m dltui"); the rest is argv. The
        # shell joins the host's cgroup before `ip netns exec` (which hides /sys/fs/cgroup), so
        # the agent and its workers start inside it.
        setsid sh -c "${join}exec ip netns exec $PREFIX-$i $DLTUI agent \"\$@\"" agent \
            --listen "$(address "$i"):$PORT" "$@" >"$RUN_DIR/agent-$i.log" 2>&1 </dev/null &
        echo $! >"$RUN_DIR/agent-$i.pid"
    done
}

# A cgroup per host with CPU_QUOTA CPUs (v1's cpu controller, or v2's cpu.max), and a large
# weight, so that other work on the machine cannot take the host's quota from it.
cpu_group() {
    # A 10 ms period, not the default 100: a step's time then does not jump by tens of
    # milliseconds with where the period's quota runs out.
    local period=10000 quota
    quota=$(awk -v q="$CPU_QUOTA" 'BEGIN { if (q + 0 <= 0) exit 1; printf "%d", q * 10000 }') \
        || { echo "CPU_QUOTA must be a positive number of CPUs" >&2; exit 2; }
    if [ -d /sys/fs/cgroup/cpu ] && [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
        local dir=/sys/fs/cgroup/cpu/$PREFIX-$1
        mkdir -p "$dir"
        echo "$period" >"$dir/cpu.cfs_period_us"
        echo "$quota" >"$dir/cpu.cfs_quota_us"
        echo 10240 >"$dir/cpu.shares"  # its quota even on a busy machine (ten times a task's)
    else
        local dir=/sys/fs/cgroup/$PREFIX-$1
        grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control || echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
        mkdir -p "$dir"
        echo "$quota $period" >"$dir/cpu.max"
        echo 1000 >"$dir/cpu.weight"
    fi
    echo "$dir"
}

# Host I's CPUs: as many as its quota needs, the hosts dealt round the CPUs this script may
# use. Not the default: it steadies some of the shaped-network table's rows and unsettles
# others (docs/results/predict-shaped.md).
host_cpus() {
    local cpus need first
    read -ra cpus <<<"$(taskset -pc $$ | sed 's/.*: //' | tr ',' ' ' \
        | awk '{ for (f = 1; f <= NF; f++) { n = split($f, r, "-"); for (c = r[1]; c <= r[n]; c++) printf "%d ", c } }')"
    need=$(awk -v q="$CPU_QUOTA" -v n="${#cpus[@]}" 'BEGIN { c = int(q); if (c < q) c++; print (c > n ? n : c) }')
    first=$(( ($1 - 1) * need ))
    local list=()
    for k in $(seq 0 $((need - 1))); do list+=("${cpus[$(( (first + k) % ${#cpus[@]} ))]}"); done
    (IFS=,; echo "${list[*]}")
}

# Both directions of host I's link: the bridge side's egress is what the host receives, the
# namespace side's what it sends. tbf holds a rate; a delay needs netem, which not every
# kernel has (the script says so rather than run unshaped).
shape() {
    local i; i=$(count "${1:-}")
    local rate=${2:-}; local delay=${3:-}
    [ -n "$rate" ] || usage
    local outside=$PREFIX-$i-h
    if [ "$rate" = off ]; then
        tc qdisc del dev "$outside" root 2>/dev/null || true
        ip netns exec "$PREFIX-$i" tc qdisc del dev eth0 root 2>/dev/null || true
        return
    fi
    local bits; bits=$(rate_bits "$rate")
    # A burst of 4 ms at the rate (at least 16 KB): enough for the timer's granularity,
    # small enough that the rate holds over a transfer of a few hundred KB.
    local burst=$((bits / 8 / 250 > 16384 ? bits / 8 / 250 : 16384))
    local qdisc=(tbf rate "$rate" burst "$burst" latency 200ms)
    if [ -n "$delay" ]; then
        modprobe sch_netem 2>/dev/null || true
        tc qdisc replace dev "$outside" root handle 1: netem delay "$delay" 2>/dev/null \
            || { echo "this kernel has no netem: a delay cannot be set (rate only)" >&2; exit 3; }
        tc qdisc replace dev "$outside" parent 1: handle 2: "${qdisc[@]}"
        ip netns exec "$PREFIX-$i" tc qdisc replace dev eth0 root handle 1: netem delay "$delay"
        ip netns exec "$PREFIX-$i" tc qdisc replace dev eth0 parent 1: handle 2: "${qdisc[@]}"
        return
    fi
    tc qdisc replace dev "$outside" root "${qdisc[@]}"
    ip netns exec "$PREFIX-$i" tc qdisc replace dev eth0 root "${qdisc[@]}"
}

rate_bits() {
    awk -v r="$1" 'BEGIN {
        n = r + 0; u = tolower(substr(r, length(n "") + 1))
        m = (u == "kbit") ? 1e3 : (u == "mbit") ? 1e6 : (u == "gbit") ? 1e9 : (u == "bit") ? 1 : 0
        if (n <= 0 || m == 0) { print "a rate is a number and kbit, mbit or gbit: " r > "/dev/stderr"; exit 1 }
        printf "%d", n * m }' || exit 2
}

link() { ip link set "$PREFIX-$(count "${1:-}")-h" "$2"; }

down() {
    local n; n=$(count "${1:-}")
    for i in $(seq 1 "$n"); do
        if [ -f "$RUN_DIR/agent-$i.pid" ]; then
            kill "$(cat "$RUN_DIR/agent-$i.pid")" 2>/dev/null || true
            rm -f "$RUN_DIR/agent-$i.pid"
        fi
        ip link del "$PREFIX-$i-h" 2>/dev/null || true
        ip netns del "$PREFIX-$i" 2>/dev/null || true
        rm -rf "/etc/netns/$PREFIX-$i"
        # A cgroup goes once its processes have: the agent's workers may take a moment.
        for dir in "/sys/fs/cgroup/cpu/$PREFIX-$i" "/sys/fs/cgroup/$PREFIX-$i"; do
            [ -d "$dir" ] || continue
            for _ in $(seq 50); do rmdir "$dir" 2>/dev/null && break; sleep 0.1; done
        done
    done
    ip link del "$BRIDGE" 2>/dev/null || true
}

case "${1:-}" in
    up) up "${2:-}" ;;
    start) shift; start "$@" ;;
    cut) link "${2:-}" down ;;
    heal) link "${2:-}" up ;;
    shape) shape "${2:-}" "${3:-}" "${4:-}" ;;
    down) down "${2:-}" ;;
    *) usage ;;
esac
