#!/usr/bin/env bash
# The network of a namespaced local Slurm (docker/slurm-up.sh with ENVKIT_SLURM_NETNS=1). Root only.
#
#   docker/slurm-netns.sh up DIR     make it; records what it made in DIR/netns.env
#   docker/slurm-netns.sh down DIR   remove what DIR/netns.env records (idempotent)
#
# Topology, for cluster number K (the first 0..255 whose hub namespace name is free):
#
#   root namespace: envkitK (198.19.K.1/24) ---veth---> hub namespace envkit-K-hub: bridge br0
#   node namespace envkit-K-nI: eth0 (198.19.K.1I/24) ---veth---> br0 (port nI in the hub)
#                               eth1 (198.18.K.1I/24) ---veth---> nIx in the hub, on no bridge:
#                               up and addressed, but it reaches nothing (the "wrong interface")
#
# eth1's addresses sort below every eth0 address on purpose: of two gloo peers, the one with the
# lower address listens and the other connects (gloo transport/tcp/pair.cc, Pair::connect), so a
# node advertising eth1 is always connected to, and the fault shows. With eth1 above, the node
# would always be the connecting side, and gloo would never notice its wrong interface.
#
# The bridge lives in a namespace of its own because the root namespace's FORWARD chain is
# Docker's (policy DROP, with bridge-nf-call-iptables=1 every bridged frame goes through it); the
# hub's own tables are empty. Node namespaces get no default route: nothing they send leaves
# 198.19.K.0/24 and 198.18.K.0/24. This namespace reaches the nodes as the endpoint of its veth
# (never forwarding), so Docker's FORWARD policy does not apply. No iptables rule is made here.
# Each node's hosts file DIR/nodes/nI/hosts names the controller and every node; slurm-up.sh
# bind-mounts it on /etc/hosts in that node's mount namespace.
# Exit codes: 0 done; 1 failed (stderr says why; `down DIR` removes what was made); 2 usage.
set -euo pipefail

usage() { echo "usage: $0 up|down DIR" >&2; exit 2; }
[ "$#" -eq 2 ] || usage
say() { echo "slurm-netns: $*" >&2; }
NODES=(n1 n2)

up() {
    local dir=$1 k hub rv i n ns
    if [ -e "$dir/netns.env" ]; then say "$dir already has a network ($dir/netns.env)"; return 1; fi
    # `ip netns add` fails when the name exists: claiming the hub's name claims K, race-free.
    for k in $(seq 0 255); do
        if ip netns add "envkit-$k-hub" 2>/dev/null; then break; fi
        k=""
    done
    if [ -z "$k" ]; then say "no free cluster number (envkit-0-hub .. envkit-255-hub all exist)"; return 1; fi
    hub="envkit-$k-hub"
    rv="envkit$k"
    # Recorded before anything else is made, so that `down` finds whatever a failure leaves.
    {
        echo "NETNS_K=$k"
        echo "NETNS_HUB=$hub"
        echo "NETNS_ROOT_VETH=$rv"
        echo "NETNS_CTL_ADDR=198.19.$k.1"
        echo "NETNS_NODES=\"${NODES[*]}\""
        i=1
        for n in "${NODES[@]}"; do
            echo "NETNS_${n}=envkit-$k-$n"
            echo "NETNS_${n}_ADDR=198.19.$k.1$i"
            echo "NETNS_${n}_ISOLATED_ADDR=198.18.$k.1$i"
            i=$((i + 1))
        done
    } >"$dir/netns.env"
    ip -n "$hub" link set lo up
    ip -n "$hub" link add br0 type bridge
    ip -n "$hub" link set br0 up
    ip link add "$rv" type veth peer name root netns "$hub"
    ip -n "$hub" link set root master br0 up
    ip addr add "198.19.$k.1/24" dev "$rv"
    ip link set "$rv" up
    i=1
    for n in "${NODES[@]}"; do
        ns="envkit-$k-$n"
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        ip -n "$hub" link add "$n" type veth peer name eth0 netns "$ns"
        ip -n "$hub" link set "$n" master br0 up
        ip -n "$ns" addr add "198.19.$k.1$i/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$hub" link add "${n}x" type veth peer name eth1 netns "$ns"
        ip -n "$hub" link set "${n}x" up
        ip -n "$ns" addr add "198.18.$k.1$i/24" dev eth1
        ip -n "$ns" link set eth1 up
        mkdir -p "$dir/nodes/$n"
        : >"$dir/nodes/$n/task-env"
        i=$((i + 1))
    done
    for n in "${NODES[@]}"; do
        {
            echo "127.0.0.1 localhost"
            echo "::1 localhost ip6-localhost ip6-loopback"
            echo "198.19.$k.1 $(hostname -s) slurmctld"
            i=1
            for m in "${NODES[@]}"; do echo "198.19.$k.1$i $m"; i=$((i + 1)); done
        } >"$dir/nodes/$n/hosts"
    done
    say "namespaces $hub, ${NODES[*]/#/envkit-$k-} (198.19.$k.0/24; this namespace is 198.19.$k.1 on $rv)"
}

down() {
    local dir=$1 ns pid var NETNS_HUB="" NETNS_ROOT_VETH="" NETNS_NODES=""
    [ -f "$dir/netns.env" ] || return 0
    # shellcheck disable=SC1091  # written by up() above, in root's folder
    . "$dir/netns.env"
    local all=()
    for n in $NETNS_NODES; do var="NETNS_$n"; all+=("${!var:-}"); done
    all+=("$NETNS_HUB")
    for ns in "${all[@]}"; do
        # Only a name up() makes: never another namespace, whatever the file says.
        [[ "$ns" =~ ^envkit-[0-9]+-(hub|n[0-9]+)$ ]] || continue
        [ -e "/run/netns/$ns" ] || continue
        # Whatever still runs in a node's namespace is this cluster's (a step slurmd left, a rank):
        # the namespace, its veth and its address live as long as one process is in it.
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
        for _ in $(seq 50); do [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break; sleep 0.1; done
        ip netns delete "$ns" || say "could not delete namespace $ns"
    done
    # Deleting the hub deletes this end's peer, and so this end; it stays when the hub was never made.
    if [[ "$NETNS_ROOT_VETH" =~ ^envkit[0-9]+$ ]] && ip link show "$NETNS_ROOT_VETH" >/dev/null 2>&1; then
        ip link delete "$NETNS_ROOT_VETH" || say "could not delete $NETNS_ROOT_VETH"
    fi
    rm -f "$dir/netns.env"
}

[ "$(id -u)" -eq 0 ] || { say "needs root"; exit 1; }
[ -d "$2" ] || { say "no folder $2"; exit 1; }
DIR=$(cd "$2" && pwd)
case "$1" in
    up) up "$DIR" ;;
    down) down "$DIR" ;;
    *) usage ;;
esac
