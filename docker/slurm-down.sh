#!/usr/bin/env bash
# Stop the Slurm started by docker/slurm-up.sh DIR: its clients left running (srun, sbatch, salloc
# whose environment names DIR/slurm.conf), its runc containers, then slurmd, slurmctld
# and munged, each by the pid it recorded under DIR (never by name), and (ENVKIT_SLURM_NETNS=1) the
# namespaces, veths and bridge DIR/netns.env records, with whatever still runs in them. Idempotent.
#
#   docker/slurm-down.sh DIR
set -uo pipefail

if [ "$#" -ne 1 ]; then echo "usage: $0 DIR" >&2; exit 2; fi
[ -d "$1" ] || exit 0
DIR=$(cd "$1" && pwd)

# Clients of this cluster (srun, sbatch --wait, salloc) that a killed session left behind: their
# environment names this cluster's slurm.conf. Once slurmctld is gone they would wait forever.
for environ in /proc/[0-9]*/environ; do
    pid=${environ#/proc/}
    pid=${pid%/environ}
    case "$(cat "/proc/$pid/comm" 2>/dev/null)" in srun | sbatch | salloc) ;; *) continue ;; esac
    if tr '\0' '\n' 2>/dev/null <"$environ" | grep -qxF "SLURM_CONF=$DIR/slurm.conf"; then
        kill -KILL "$pid" 2>/dev/null
    fi
done

# Root's state root, then each user's (rootless mode): root may act on a user's rootless container.
if command -v runc >/dev/null 2>&1; then
    for root in "$DIR/runc" "$DIR"/runc-users/*/; do
        # Only real folders: root must not follow a link a user planted to another runtime's state.
        [ -d "$root" ] && [ ! -L "${root%/}" ] || continue
        for c in $(runc --root="$root" list -q 2>/dev/null); do
            runc --root="$root" kill "$c" KILL 2>/dev/null
            runc --root="$root" delete --force "$c" 2>/dev/null
        done
    done
fi

stop() {  # PIDFILE: TERM, then KILL after 5 s
    local pid
    [ -f "$1" ] || return 0
    pid=$(cat "$1")
    rm -f "$1"
    # Only a daemon of this cluster: its command line names DIR (a recycled pid is someone else's).
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$DIR" || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
}
stop "$DIR/slurmd-n1.pid"
stop "$DIR/slurmd-n2.pid"
# After slurmd: a node's namespace goes once nothing runs in it (slurm-netns.sh kills what is left).
if [ -f "$DIR/netns.env" ]; then
    bash "$(dirname "${BASH_SOURCE[0]}")/slurm-netns.sh" down "$DIR"
fi
stop "$DIR/slurmctld.pid"
stop "$DIR/munged.pid"
exit 0
