#!/usr/bin/env bash
# Separate test hosts on one machine: N network namespaces on one bridge, each with its own
# address, and a dltui agent in each. Needs root and iproute2. Traffic stays on the bridge.
#
#   agents/netns-cluster.sh up N                 namespaces PREFIX-1..N at SUBNET.11..(10+N)
#   agents/netns-cluster.sh start N [ARGS...]    an agent in each: dltui agent --listen ADDR:7070 ARGS
#   agents/netns-cluster.sh cut I | heal I       take host I's link down (a partition) or up
#   agents/netns-cluster.sh down N               stop the agents, delete namespaces and bridge
#
# Environment: PREFIX (default dltui; at most 10 characters), SUBNET (default 198.18.0, the
# range set aside for benchmarking), PORT (7070), DLTUI (how to run dltui, default "dltui",
# e.g. "python3 -m dltui"), RUN_DIR (agent logs and pids, default /tmp/PREFIX-netns).
set -euo pipefail

PREFIX=${PREFIX:-dltui}
SUBNET=${SUBNET:-198.18.0}
PORT=${PORT:-7070}
DLTUI=${DLTUI:-dltui}
RUN_DIR=${RUN_DIR:-/tmp/$PREFIX-netns}
BRIDGE=$PREFIX-br

usage() { sed -n '2,14p' "$0" >&2; exit 2; }
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
        # $DLTUI is split into words on purpose ("python3 -m dltui"); the rest is argv.
        # shellcheck disable=SC2086
        ip netns exec "$PREFIX-$i" setsid $DLTUI agent --listen "$(address "$i"):$PORT" "$@" \
            >"$RUN_DIR/agent-$i.log" 2>&1 </dev/null &
        echo $! >"$RUN_DIR/agent-$i.pid"
    done
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
    done
    ip link del "$BRIDGE" 2>/dev/null || true
}

case "${1:-}" in
    up) up "${2:-}" ;;
    start) shift; start "$@" ;;
    cut) link "${2:-}" down ;;
    heal) link "${2:-}" up ;;
    down) down "${2:-}" ;;
    *) usage ;;
esac
