#!/usr/bin/env bash
# Start a real two-node Slurm on this machine, in one folder. Root only.
#
#   docker/slurm-up.sh DIR      (stop it with docker/slurm-down.sh DIR)
#
# - installs slurm-wlm, munge and runc with apt-get when they are missing;
# - munged with a fresh key and its own socket, slurmctld, and two slurmd (nodes n1, n2) on
#   one host, each with 2 CPUs, 8 GiB and two fake GPUs (GRES on character devices made with
#   mknod: --gpus-per-node is honoured and sets CUDA_VISIBLE_DEVICES);
# - Slurm's OCI container support through runc (oci.conf), containers under DIR/runc;
# - with ENVKIT_SLURM_ROOTLESS=1, oci.conf is the rootless runc example of SchedMD's containers
#   guide (runc --rootless=true, run as the job's user, a state root per user under
#   DIR/runc-users/USER, made 0700 for that user by a root Prolog before the job's first step,
#   as a login manager makes /run/user/UID), and DIR is readable by every user, so any local
#   user can submit;
# - every file (config, state, spool, logs, pid files) under DIR; ports chosen free.
# - with ENVKIT_SLURM_NETNS=1, each node in its own network namespace (docker/slurm-netns.sh): its own
#   address in 198.18.0.0/15, hostname (n1, n2), /etc/hosts (DIR/nodes/nN/hosts) and port 6818, the
#   namespaces joined by a bridge in a "hub" namespace of their own, no default route; slurmctld and
#   srun stay in this namespace, on one more veth into the hub. A TaskProlog gives every task on
#   node nN the environment in DIR/nodes/nN/task-env (faults: tests/slurm/faults.py). Root only;
#   not with ENVKIT_SLURM_ROOTLESS=1;
# - with ENVKIT_SLURM_OWNER=PID, a watchdog runs slurm-down.sh DIR once that process is gone, so a
#   killed test session leaves no daemon (and no namespace) behind.
# Prints `export SLURM_CONF=DIR/slurm.conf` on stdout; progress on stderr.
# Exit codes: 0 both nodes idle; 1 could not start (the logs under DIR say why); 2 usage.
set -euo pipefail

if [ "$#" -ne 1 ]; then echo "usage: $0 DIR" >&2; exit 2; fi
say() { echo "slurm-up: $*" >&2; }
if [ "$(id -u)" -ne 0 ]; then say "needs root (slurmd runs as root to start containers)"; exit 1; fi

mkdir -p "$1"
DIR=$(cd "$1" && pwd)
WAIT=${ENVKIT_SLURM_WAIT:-30}

missing=()
for tool in slurmctld:slurm-wlm slurmd:slurm-wlm munged:munge runc:runc; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool#*:}")
done
if [ "${#missing[@]}" -gt 0 ]; then
    say "installing ${missing[*]} (apt-get) ..."
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
fi
RUNC=$(command -v runc)

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
mkdir -p "$DIR/state" "$DIR/spool/n1" "$DIR/spool/n2" "$DIR/runc" "$DIR/dev"
ROOTLESS=${ENVKIT_SLURM_ROOTLESS:-0}
case "$ROOTLESS" in 0|1) ;; *) say "ENVKIT_SLURM_ROOTLESS must be 0 or 1, not $ROOTLESS"; exit 2 ;; esac
NETNS=${ENVKIT_SLURM_NETNS:-0}
case "$NETNS" in 0|1) ;; *) say "ENVKIT_SLURM_NETNS must be 0 or 1, not $NETNS"; exit 2 ;; esac
if [ "$NETNS" = 1 ] && [ "$ROOTLESS" = 1 ]; then
    say "ENVKIT_SLURM_NETNS=1 and ENVKIT_SLURM_ROOTLESS=1 together are not supported"; exit 2
fi
chmod 700 "$DIR"
# munge: a fresh key, never readable by anyone but root, even for an instant (it forges any user).
[ -f "$DIR/munge.key" ] || (umask 077 && dd if=/dev/urandom bs=1 count=1024 of="$DIR/munge.key" 2>/dev/null)
chmod 400 "$DIR/munge.key"
PROLOG=""
if [ "$ROOTLESS" = 1 ]; then
    # Only root writes here: each user's state root is made by the Prolog (below), so nobody can
    # plant another user's folder or a link in its place.
    mkdir -p "$DIR/runc-users"
    chmod 755 "$DIR/runc-users"
    cat >"$DIR/prolog.sh" <<'EOF'
#!/bin/sh
# Slurm's Prolog (root, on each node, before the job's first step there): the job user's runc
# state root, 0700 and theirs. A link or anything not theirs in its place is replaced.
set -eu
dir="$(dirname "$0")/runc-users/$SLURM_JOB_USER"
if [ -L "$dir" ] || { [ -e "$dir" ] && [ "$(stat -c %u "$dir")" != "$SLURM_JOB_UID" ]; }; then rm -rf "$dir"; fi
install -d -m 0700 -o "$SLURM_JOB_UID" -g "$SLURM_JOB_GID" "$dir"
EOF
    chmod 755 "$DIR/prolog.sh"
    PROLOG="Prolog=$DIR/prolog.sh"
fi

# Fake GPUs: any character device will do for GRES bookkeeping (/dev/null's numbers).
for i in 0 1; do [ -e "$DIR/dev/nvidia$i" ] || mknod "$DIR/dev/nvidia$i" c 1 3; done

if [ -n "${ENVKIT_SLURM_OWNER:-}" ]; then
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    # Started before anything is made, so that even a start that fails half-way is undone.
    # shellcheck disable=SC2016  # expanded by the inner bash, from its arguments
    setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 2; done; exec bash "$2/slurm-down.sh" "$3"' \
        watchdog "$ENVKIT_SLURM_OWNER" "$here" "$DIR" </dev/null >/dev/null 2>&1 &
fi

HOST=$(hostname -s)
TASK_PROLOG=""
if [ "$NETNS" = 1 ]; then
    bash "$(dirname "${BASH_SOURCE[0]}")/slurm-netns.sh" up "$DIR"
    # shellcheck disable=SC1091  # written by slurm-netns.sh up
    . "$DIR/netns.env"
    CTLD_ADDR=$NETNS_CTL_ADDR
    CTLD_PORT=$(free_port)
    NODE_LINES=""
    for n in $NETNS_NODES; do
        addr="NETNS_${n}_ADDR"
        # Every node has its own ports: slurmd's default port on each.
        NODE_LINES+="NodeName=$n NodeHostname=$n NodeAddr=${!addr} Port=6818 CPUs=2 RealMemory=8192 Gres=gpu:2 State=UNKNOWN
"
    done
    cat >"$DIR/task-prolog.sh" <<'EOF'
#!/bin/sh
# Slurm's TaskProlog, on each node before each task: the "export NAME=VALUE" lines it prints join the
# task's environment; a non-zero exit fails the task before its program starts. Node N's faults
# (tests/slurm/faults.py) are in nodes/N, so they reach every task there however the job started:
# task-env, lines for every task; hold, "sleep SECONDS" (the program starts that late: a node that
# never arrives) or "exit CODE" (it never starts).
d="$(dirname "$0")/nodes/$SLURMD_NODENAME"
if [ -f "$d/hold" ]; then
    read -r how arg <"$d/hold"
    case "$how" in
        sleep) sleep "$arg" ;;
        exit) exit "$arg" ;;
    esac
fi
cat "$d/task-env" 2>/dev/null
exit 0
EOF
    chmod 755 "$DIR/task-prolog.sh"
    TASK_PROLOG="TaskProlog=$DIR/task-prolog.sh"
else
    CTLD_ADDR=127.0.0.1
    CTLD_PORT=$(free_port); N1_PORT=$(free_port); N2_PORT=$(free_port)
    NODE_LINES="NodeName=n1 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$N1_PORT CPUs=2 RealMemory=8192 Gres=gpu:2 State=UNKNOWN
NodeName=n2 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$N2_PORT CPUs=2 RealMemory=8192 Gres=gpu:2 State=UNKNOWN
"
fi

cat >"$DIR/slurm.conf" <<EOF
ClusterName=envkit
SlurmctldHost=$HOST($CTLD_ADDR)
SlurmctldPort=$CTLD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge.sock
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd-%n.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
GresTypes=gpu
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=30
${NODE_LINES}PartitionName=debug Nodes=n[1-2] Default=YES MaxTime=INFINITE State=UP
$PROLOG
$TASK_PROLOG
EOF
echo "NodeName=n[1-2] Name=gpu File=$DIR/dev/nvidia[0-1]" >"$DIR/gres.conf"
# Slurm's OCI support: each step's container is runc's, named node.user.job.step.task, under DIR/runc.
if [ "$ROOTLESS" = 1 ]; then
    # The guide's "runc using run" example, its state root per user: %U (uid) needs Slurm >= 23.02,
    # so the user's name (%u), which every release replaces.
    R="$RUNC --rootless=true --root=$DIR/runc-users/%u/"
    # The guide's EnvExclude lines only where slurmstepd reads them (23.02 on; 22.05 refuses the file).
    version=$(slurmd -V | sed -n 's/^slurm[^ ]* \([0-9]*\)\.\([0-9]*\).*/\1\2/p')
    EXCLUDE=""
    if [ "${version:-0}" -ge 2302 ]; then
        EXCLUDE='EnvExclude="^(SLURM_CONF|SLURM_CONF_SERVER)="
RunTimeEnvExclude="^(SLURM_CONF|SLURM_CONF_SERVER)="'
    fi
else
    R="$RUNC --root=$DIR/runc"
    EXCLUDE=""
fi
cat >"$DIR/oci.conf" <<EOF
$EXCLUDE
RunTimeQuery="$R state %n.%u.%j.%s.%t"
RunTimeKill="$R kill -a %n.%u.%j.%s.%t"
RunTimeDelete="$R delete --force %n.%u.%j.%s.%t"
RunTimeRun="$R run %n.%u.%j.%s.%t -b %b"
EOF
export SLURM_CONF="$DIR/slurm.conf"
if [ "$ROOTLESS" = 1 ]; then
    # Submitters need slurm.conf, oci.conf and munge's socket: the folder opens only now, with
    # the key in it 0400. slurmctld's state stays root's; the spool is traversed by the jobs.
    chmod 700 "$DIR/state"
    chmod 755 "$DIR"
fi

# munged: --force because DIR is not munge's usual, root-only-checked folder.
# setsid: the daemons must not die with the caller's process group (Ctrl-C in a test run).
setsid munged --force --key-file="$DIR/munge.key" --socket="$DIR/munge.sock" --pid-file="$DIR/munged.pid" \
    --log-file="$DIR/munged.log" --seed-file="$DIR/munge.seed" >&2
setsid slurmctld -i -f "$SLURM_CONF" >&2
if [ "$NETNS" = 1 ]; then
    for n in $NETNS_NODES; do
        ns="NETNS_$n"
        # Its own mount namespace (its hosts file on /etc/hosts), hostname (gloo and torchrun take
        # the node's address from it) and network namespace. nsenter, not `ip netns exec`: that
        # remounts /sys, hiding the cgroup hierarchy ("Unable to initialize cgroup plugin").
        # shellcheck disable=SC2016  # expanded by sh, from its arguments
        setsid unshare --mount --uts --propagation slave sh -c \
            'mount --bind "$1" /etc/hosts && hostname "$2" && exec nsenter --net="/run/netns/$3" slurmd -N "$2" -f "$4"' \
            sh "$DIR/nodes/$n/hosts" "$n" "${!ns}" "$SLURM_CONF" >&2
    done
else
    setsid slurmd -N n1 -f "$SLURM_CONF" >&2
    setsid slurmd -N n2 -f "$SLURM_CONF" >&2
fi

for _ in $(seq "$((WAIT * 4))"); do
    if [ "$(sinfo -h -N -o '%t' 2>/dev/null | grep -c '^idle')" = 2 ]; then
        where="on $HOST"
        [ "$NETNS" = 1 ] && where="in namespaces ${NETNS_n1:-} ${NETNS_n2:-}"
        say "two nodes idle (n1, n2 $where; SLURM_CONF=$SLURM_CONF$([ "$ROOTLESS" = 1 ] && echo "; rootless runc"))"
        echo "export SLURM_CONF=$SLURM_CONF"
        exit 0
    fi
    sleep 0.25
done
say "nodes did not become idle within ${WAIT}s:"
sinfo -N >&2 || true
tail -n 5 "$DIR"/*.log >&2 || true
exit 1
