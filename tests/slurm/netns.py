"""A two-node Slurm whose nodes are network namespaces, and job steps run on it, bounded.

``start(folder, owner=pid)`` runs docker/slurm-up.sh with ``ENVKIT_SLURM_NETNS=1``: munged and
slurmctld here, each slurmd in its own network, mount and UTS namespace (docker/slurm-netns.sh):
node ``n1`` is ``198.19.K.11`` on ``eth0``, its hostname is ``n1``, its /etc/hosts is
``folder/nodes/n1/hosts``; ``eth1`` (``198.18.K.11``) is up and addressed but reaches nothing.
``stop(cluster)`` (docker/slurm-down.sh) removes the daemons, namespaces, veths and bridge; so does
the watchdog once ``owner`` is gone.

``cluster.step(command, env=..., bound=60)`` is ``srun -N2 --ntasks-per-node=1 --kill-on-bad-exit=1``
of ``command`` on both nodes, stopped by the caller's bound (``scancel``) when it is still running
then; each node's output is its own (``StepResult.outputs["n1"]``). Per-node differences (faults)
come from each node's TaskProlog (tests/slurm/faults.py), so they reach any job, sbatch included.

No pytest here: benchmarks/bench_network_faults.py uses it too.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
CLUSTER_IFACE = "eth0"  # every node's interface on the cluster network (the hub's bridge)
ISOLATED_IFACE = "eth1"  # every node has it, up and addressed, and it reaches no other node
RDZV_PORT = 29500  # torchrun's default rendezvous port; every namespace has its own ports
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


# The distributed check every node runs: a gloo all_reduce of (rank + 1) over the whole world.
ALLREDUCE = '''\
import os, sys, time
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
print(f"allreduce rank={rank} world={world} sum={t.item():g}", flush=True)
if "--sleep" in sys.argv:
    time.sleep(float(sys.argv[sys.argv.index("--sleep") + 1]))
dist.destroy_process_group()
'''


class ClusterUnavailable(RuntimeError):
    """The namespaced Slurm could not be started here (the message says why)."""


@dataclass(frozen=True)
class Node:
    name: str  # its Slurm node name and its hostname (in its own UTS namespace)
    netns: str  # /run/netns/<netns>
    addr: str  # on CLUSTER_IFACE
    isolated_addr: str  # on ISOLATED_IFACE
    dir: Path  # its hosts file, task-env and hold (the TaskProlog reads them)

    @property
    def hosts(self) -> Path:
        """The file bind-mounted on the node's /etc/hosts: rewrite it in place (same inode) only."""
        return self.dir / "hosts"


@dataclass(frozen=True)
class StepResult:
    """One ``srun`` step on every node, as the caller's bound left it."""

    returncode: int | None  # srun's exit status; None: still running at the bound, cancelled
    seconds: float  # from srun's start to its exit (or to the bound)
    outputs: Mapping[str, str]  # node -> its task's stdout and stderr until its end or the bound ("": never started)
    srun: str  # srun's own stderr: "srun: error: n2: task 1: Exited with exit code 1", ...
    failed_at: Mapping[str, float] = field(default_factory=dict)  # node -> seconds at which srun saw its task fail

    @property
    def bounded(self) -> bool:
        """True when the step was still running at the bound (the test stopped it, not torch)."""
        return self.returncode is None

    def message(self, node: str) -> str:
        """The first line of ``node``'s output that says what went wrong ("" if none did)."""
        return first_error(self.outputs.get(node, ""))

    def text(self) -> str:
        """Everything, per node, for an assertion message."""
        parts = [f"--- {name} ---\n{out}" for name, out in self.outputs.items()]
        return "\n".join([*parts, f"--- srun ---\n{self.srun}"])


@dataclass(frozen=True)
class NetnsCluster:
    dir: Path
    env: Mapping[str, str]  # os.environ with SLURM_CONF
    controller_addr: str  # this namespace's address on the cluster network (slurmctld, srun)
    nodes: tuple[Node, ...]
    hub: str  # the namespace holding the bridge

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"no node {name!r} (nodes: {', '.join(n.name for n in self.nodes)})")

    def run(self, *args: str, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """A Slurm client command (sinfo, squeue, scancel, sbatch) from this namespace."""
        return subprocess.run(list(args), cwd=cwd, env=dict(self.env), capture_output=True, text=True,
                              timeout=timeout)

    def in_node(self, name: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """``args`` as root on node ``name``, outside Slurm: in its slurmd's network, mount and UTS
        namespaces (its interfaces and iptables, its /etc/hosts, its hostname)."""
        pid = (self.dir / f"slurmd-{name}.pid").read_text().strip()
        return subprocess.run(["nsenter", f"--target={pid}", "--net", "--mount", "--uts", *args],
                              capture_output=True, text=True, timeout=timeout)

    def node_state(self) -> dict[str, tuple[str, ...]]:
        """What faults change, per node: its task-env, hold, hosts file (text and inode) and iptables."""
        out = {}
        for n in self.nodes:
            rules = self.in_node(n.name, "iptables", "-w", "-S").stdout
            out[n.name] = (_read(n.dir / "task-env"), _read(n.dir / "hold"), _read(n.hosts),
                           str(n.hosts.stat().st_ino), rules)
        return out

    def processes(self, name: str) -> list[str]:
        """Command lines of what runs in node ``name``'s namespace, its slurmd aside."""
        res = subprocess.run(["ip", "netns", "pids", self.node(name).netns], capture_output=True, text=True)
        out = []
        for pid in res.stdout.split():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                continue
            if cmd and not cmd.startswith("slurmd "):
                out.append(f"{pid}: {cmd}")
        return out

    def step(self, command: Sequence[str], *, env: Mapping[str, str] | None = None, bound: float = 60,
             cwd: Path | None = None, kill_on_bad_exit: bool = True, ntasks_per_node: int = 1) -> StepResult:
        """``command`` once per node (``srun -N<nodes>``), with ``env`` added to srun's environment.

        Stopped by ``scancel`` when still running after ``bound`` seconds (``returncode`` None); srun's
        own ``--time`` (the bound, rounded up to minutes, plus one) is only a backstop. Returns once
        the step is gone from the queue.
        """
        name = f"envkit-step-{uuid.uuid4().hex[:12]}"
        folder = self.dir / "steps" / name
        folder.mkdir(parents=True)
        minutes = int(bound // 60) + 2
        cmd = ["srun", f"-N{len(self.nodes)}", f"--ntasks-per-node={ntasks_per_node}", f"--job-name={name}",
               f"--time={minutes}", f"--output={folder}/%N.out"]
        if kill_on_bad_exit:
            cmd.append("--kill-on-bad-exit=1")
        err_path = folder / "srun.err"
        start = time.monotonic()
        with open(err_path, "w") as err:
            proc = subprocess.Popen([*cmd, *command], cwd=cwd or self.dir, env={**self.env, **(env or {})},
                                    stdin=subprocess.DEVNULL, stdout=err, stderr=err, preexec_fn=_die_with_parent)
            failed_at: dict[str, float] = {}
            returncode: int | None = None
            while True:
                returncode = proc.poll()
                now = time.monotonic() - start
                self._note_failures(err_path, failed_at, now)
                if returncode is not None or now >= bound:
                    break
                time.sleep(0.05)
            seconds = time.monotonic() - start
            # What the nodes printed by their end or by the bound; the files keep what the cancel adds.
            outputs = {n.name: _read(folder / f"{n.name}.out") for n in self.nodes}
            if returncode is None:
                self.run("scancel", f"--name={name}")
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self._wait_gone(name)
        return StepResult(returncode, seconds, outputs, _read(err_path), failed_at)

    def _note_failures(self, err_path: Path, failed_at: dict[str, float], now: float) -> None:
        text = _read(err_path)
        for node in self.nodes:
            if node.name not in failed_at and f"srun: error: {node.name}: task" in text:
                failed_at[node.name] = now

    def _wait_gone(self, name: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.run("squeue", "-h", f"--name={name}").stdout.strip():
                return
            time.sleep(0.2)
        raise RuntimeError(f"step {name} still queued {timeout:g} s after its end")


# Lines every run prints, failing or not, and the ones the test's own cancel causes.
_NOISE = re.compile(r"hostname of the client socket cannot be retrieved|OMP_NUM_THREADS|^\*+$|SignalException|"
                    r"got signal|death signal|closing signal|CANCELLED AT|Terminated|^(File|Traceback)|"
                    r"did not exit normally")
_ERROR = re.compile(r"error|unable|refused|timed? ?out|exception|failed|unreachable|no route", re.IGNORECASE)
_PREFIX = re.compile(r"^(\[[^\]]*[./:][^\]]*\]\s*)+")  # torch's and gloo's "[E1204 ... file.cpp:67] "


def first_error(output: str) -> str:
    r"""The first line of a task's output that says what went wrong, its log prefix dropped.

    >>> first_error("[W1204 socket.cpp:207] [c10d] The hostname of the client socket cannot be retrieved. err=-3\n"
    ...             "[E1204 04:12:52.47 ProcessGroupGloo.cpp:67] Gloo connectFullMesh failed: Connection refused\n")
    'Gloo connectFullMesh failed: Connection refused'
    """
    for line in output.splitlines():
        text = _PREFIX.sub("", line.strip())
        if text and not _NOISE.search(text) and _ERROR.search(text):
            return text
    return ""


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the caller dies (a killed session leaves no srun)."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


def _read_env(path: Path) -> dict[str, str]:
    """slurm-netns.sh's netns.env: KEY=VALUE lines (values may be double-quoted)."""
    out = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key] = value.strip('"')
    return out


def start(folder: Path, *, owner: int | None = None, timeout: float = 900) -> NetnsCluster:
    """docker/slurm-up.sh with ENVKIT_SLURM_NETNS=1 in ``folder``; raises ClusterUnavailable (after
    removing whatever it made) when it does not come up. With ``owner``, a watchdog removes it all
    once that process is gone."""
    if os.geteuid() != 0:
        raise ClusterUnavailable("a namespaced Slurm needs root (network namespaces, slurmd)")
    env = {**os.environ, "ENVKIT_SLURM_NETNS": "1", "ENVKIT_SLURM_ROOTLESS": "0"}
    if owner is not None:
        env["ENVKIT_SLURM_OWNER"] = str(owner)
    up = subprocess.run(["bash", str(ROOT / "docker" / "slurm-up.sh"), str(folder)], capture_output=True,
                        text=True, timeout=timeout, env=env)
    if up.returncode != 0:
        stop_folder(folder)
        raise ClusterUnavailable(f"the namespaced Slurm did not start: {up.stderr.strip()[-1500:]}")
    rec = _read_env(folder / "netns.env")
    nodes = tuple(Node(name, rec[f"NETNS_{name}"], rec[f"NETNS_{name}_ADDR"], rec[f"NETNS_{name}_ISOLATED_ADDR"],
                       folder / "nodes" / name) for name in rec["NETNS_NODES"].split())
    return NetnsCluster(folder, {**os.environ, "SLURM_CONF": str(folder / "slurm.conf")}, rec["NETNS_CTL_ADDR"], nodes,
                        rec["NETNS_HUB"])


def stop_folder(folder: Path) -> None:
    subprocess.run(["bash", str(ROOT / "docker" / "slurm-down.sh"), str(folder)], timeout=180)


def stop(cluster: NetnsCluster) -> list[str]:
    """docker/slurm-down.sh; returns the cluster's namespaces still present afterwards (none expected)."""
    stop_folder(cluster.dir)
    return sorted(name for name in (cluster.hub, *(n.netns for n in cluster.nodes)) if Path("/run/netns", name).exists())


def torchrun(script: Path | str, *args: str, nnodes: int = 2, nproc_per_node: int = 2, endpoint: str = "n1",
             port: int = RDZV_PORT) -> list[str]:
    """Plain torchrun as a user writes it for Slurm: c10d rendezvous at ``endpoint:port``, torch's
    own timeouts, one agent per node (one srun task per node)."""
    return [sys.executable, "-m", "torch.distributed.run", f"--nnodes={nnodes}", f"--nproc-per-node={nproc_per_node}",
            "--rdzv-backend=c10d", f"--rdzv-endpoint={endpoint}:{port}", f"--rdzv-id={uuid.uuid4().hex[:8]}",
            str(script), *args]


# envkit's preflight as the generated sbatch runs it, with the network stage, on both nodes.
PREFLIGHT_PROFILE = """\
envkit: 1
name: netns
image: {{base: "debian:bookworm"}}
loader: {{num_workers: 0, batch_size: 8, sample_shape: [3, 32, 32], pin_memory: false}}
cluster:
  nodes: 2
  procs_per_node: 1
  entrypoint: [train.py]
  network: {{fabric: {fabric}}}
"""
NETWORK_BOUND = 20  # the stage's --network-timeout here: its verdict within this many seconds, whatever the fault


def preflight_expectation(folder: Path, fabric: str = "ethernet") -> Path:
    """The expectation `envkit generate` bakes into the image, for a small two-node profile on ``fabric``."""
    from envkit.planner import build_plan
    from envkit.profile import load_profile

    profile = folder / f"preflight-{fabric}.yaml"
    profile.write_text(PREFLIGHT_PROFILE.format(fabric=fabric))
    path = folder / f"preflight-{fabric}.json"
    path.write_bytes(build_plan(load_profile(profile)).expectation)
    return path


def preflight(cluster: NetnsCluster, expect: Path, *, network: bool = True, job: str = "4242",
              bound: float = NETWORK_BOUND + 40, kill_on_bad_exit: bool = False) -> tuple[StepResult, dict[str, dict]]:
    """The harness on every node (``--quick``, with ``--network --rendezvous n1:29500 --nodes n1,n2 --job-id``
    as the sbatch passes them); each node's JSON report by node name (absent: the node printed none).
    ``kill_on_bad_exit``: as the sbatch runs it, the first node to fail ends the step (the others' reports
    may then be cut short); without it every node reports."""
    import json

    reports = cluster.dir / "steps" / f"reports-{uuid.uuid4().hex[:12]}"
    reports.mkdir(parents=True)
    args = [sys.executable, "-m", "envkit.harness", "--quick", "--expect", str(expect), "--json"]
    if network:
        args += ["--network", "--rendezvous", f"n1:{RDZV_PORT}", "--nodes", ",".join(n.name for n in cluster.nodes),
                 "--job-id", job, "--network-timeout", str(NETWORK_BOUND)]
    res = cluster.step(["sh", "-c", 'exec "$@" > "$REPORTS/$(hostname).json"', "preflight", *args],
                       env={"REPORTS": str(reports)}, bound=bound, kill_on_bad_exit=kill_on_bad_exit)
    out = {}
    for node in cluster.nodes:
        text = _read(reports / f"{node.name}.json")
        if text.strip():
            out[node.name] = json.loads(text)
    return res, out


def network_check(report: dict) -> dict:
    """The ``network`` check of one node's harness report."""
    return next(c for c in report["checks"] if c["name"] == "network")
