"""Faults injected into one node of the namespaced Slurm (tests/slurm/netns.py), each undone on exit.

    with injected(cluster, BlockedPort("n1", action="DROP")):
        res = cluster.step(torchrun(script), bound=60)

Each fault acts where a real node's would, and only there: in the node's TaskProlog (variables for
every task on the node, or a task that never starts its program), in the iptables of the node's
own network namespace, or in the node's own /etc/hosts (rewritten in place: it is bind-mounted
into the node's mount namespace, so a new file, as ``sed -i`` writes, would go unseen). Nothing
here touches this namespace's iptables or /etc/hosts. Each applies to any job on the cluster, a
generated sbatch included, since the TaskProlog runs for every task.

``FAULTS`` is the one catalogue the baselines walk (tests/slurm/test_netns.py,
benchmarks/bench_network_faults.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from tests.slurm.netns import ISOLATED_IFACE, RDZV_PORT, NetnsCluster

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Fault(Protocol):
    @property
    def node(self) -> str: ...

    @property
    def key(self) -> str:
        """A short stable id (table rows, test ids): ``iface-missing@n2``."""
        ...

    def describe(self) -> str:
        """What is wrong, in a user's words."""
        ...

    def apply(self, cluster: NetnsCluster) -> None: ...

    def revert(self, cluster: NetnsCluster) -> None: ...


@contextmanager
def injected(cluster: NetnsCluster, *faults: Fault) -> Iterator[None]:
    """Each fault applied for the block's duration, then reverted (last first), even on failure."""
    done: list[Fault] = []
    try:
        for fault in faults:
            fault.apply(cluster)
            done.append(fault)
        yield
    finally:
        for fault in reversed(done):
            fault.revert(cluster)


def task_env_lines(env: Mapping[str, str]) -> list[str]:
    """The TaskProlog's lines for ``env``; Slurm takes the rest of the line as the value, unquoted.

    >>> task_env_lines({"GLOO_SOCKET_IFNAME": "ens9"})
    ['export GLOO_SOCKET_IFNAME=ens9']
    """
    for name, value in env.items():
        if not _ENV_NAME.fullmatch(name) or "\n" in value or "\r" in value:
            raise ValueError(f"not a task environment entry: {name}={value!r}")
    return [f"export {name}={value}" for name, value in env.items()]


def _add_lines(path: Path, lines: list[str]) -> None:
    old = path.read_text().splitlines() if path.exists() else []
    path.write_text("".join(f"{line}\n" for line in [*old, *lines]))


def _remove_lines(path: Path, lines: list[str]) -> None:
    if not path.exists():
        return
    old = path.read_text().splitlines()
    for line in lines:
        if line in old:
            old.remove(line)
    path.write_text("".join(f"{line}\n" for line in old))


def rewrite_in_place(path: Path, text: str) -> None:
    """``text`` into ``path`` keeping its inode: a bind mount of it sees the new content."""
    with open(path, "r+") as f:
        f.write(text)
        f.truncate()


@dataclass(frozen=True)
class NodeEnv:
    """Variables in every task on ``node`` (its TaskProlog), for faults that are a variable."""

    node: str
    env: Mapping[str, str]
    key: str = "env"

    def describe(self) -> str:
        return f"{' '.join(task_env_lines(self.env))} on {self.node}"

    def apply(self, cluster: NetnsCluster) -> None:
        _add_lines(cluster.node(self.node).dir / "task-env", task_env_lines(self.env))

    def revert(self, cluster: NetnsCluster) -> None:
        _remove_lines(cluster.node(self.node).dir / "task-env", task_env_lines(self.env))


@dataclass(frozen=True)
class WrongInterface:
    """GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME name ``ifname`` on ``node``: one it lacks
    (``ens9``), or ISOLATED_IFACE, which it has, up and addressed, but which reaches no other node."""

    node: str = "n2"
    ifname: str = "ens9"

    @property
    def key(self) -> str:
        return f"iface-{'isolated' if self.ifname == ISOLATED_IFACE else 'missing'}@{self.node}"

    def describe(self) -> str:
        what = "up but reaching no other node" if self.ifname == ISOLATED_IFACE else "which it lacks"
        return f"GLOO/NCCL_SOCKET_IFNAME={self.ifname} on {self.node} ({what})"

    def _env(self) -> NodeEnv:
        return NodeEnv(self.node, {"GLOO_SOCKET_IFNAME": self.ifname, "NCCL_SOCKET_IFNAME": self.ifname})

    def apply(self, cluster: NetnsCluster) -> None:
        self._env().apply(cluster)

    def revert(self, cluster: NetnsCluster) -> None:
        self._env().revert(cluster)


@dataclass(frozen=True)
class BlockedPort:
    """TCP ``port`` blocked for other nodes by the iptables of ``node``'s own namespace (as a host
    firewall does: its own loopback stays open). DROP: connects hang; REJECT: refused (TCP reset)."""

    node: str = "n1"
    port: int = RDZV_PORT
    action: Literal["DROP", "REJECT"] = "DROP"

    @property
    def key(self) -> str:
        return f"port-{self.action.lower()}@{self.node}"

    def describe(self) -> str:
        return f"port {self.port} {self.action} in {self.node}'s iptables"

    def _rule(self) -> list[str]:
        rule = ["INPUT", "!", "-i", "lo", "-p", "tcp", "--dport", str(self.port), "-j", self.action]
        return [*rule, "--reject-with", "tcp-reset"] if self.action == "REJECT" else rule

    def apply(self, cluster: NetnsCluster) -> None:
        res = cluster.in_node(self.node, "iptables", "-w", "-I", *self._rule())
        if res.returncode != 0:
            raise RuntimeError(f"iptables in {self.node}: {res.stderr.strip()}")

    def revert(self, cluster: NetnsCluster) -> None:
        cluster.in_node(self.node, "iptables", "-w", "-D", *self._rule())


@dataclass(frozen=True)
class HostnameToLoopback:
    """``node``'s own /etc/hosts maps its hostname to ``addr`` (Debian's installer writes 127.0.1.1;
    some images 127.0.0.1), so whatever takes its address from the hostname (gloo) takes loopback.
    The other nodes still resolve it correctly."""

    node: str = "n2"
    addr: str = "127.0.1.1"

    @property
    def key(self) -> str:
        return f"hostname-{self.addr}@{self.node}"

    def describe(self) -> str:
        return f"{self.node}'s hostname resolves to {self.addr} in its own /etc/hosts"

    def _swap(self, cluster: NetnsCluster, old: str, new: str) -> None:
        node = cluster.node(self.node)
        lines = node.hosts.read_text().splitlines()
        if f"{old} {node.name}" not in lines:
            raise RuntimeError(f"{node.hosts} has no line {old!r} {node.name!r}: {lines}")
        rewrite_in_place(node.hosts, "".join(f"{new} {node.name}\n" if line == f"{old} {node.name}" else f"{line}\n"
                                             for line in lines))

    def apply(self, cluster: NetnsCluster) -> None:
        self._swap(cluster, cluster.node(self.node).addr, self.addr)

    def revert(self, cluster: NetnsCluster) -> None:
        self._swap(cluster, self.addr, cluster.node(self.node).addr)


@dataclass(frozen=True)
class NeverStarts:
    """``node``'s task never runs its program: ``sleep`` holds it (its TaskProlog sleeps an hour, so
    the node never arrives while the others wait), ``exit`` fails it before it starts (exit 1)."""

    node: str = "n2"
    how: Literal["sleep", "exit"] = "sleep"

    @property
    def key(self) -> str:
        return f"never-starts-{self.how}@{self.node}"

    def describe(self) -> str:
        return f"{self.node} never starts its program ({'held' if self.how == 'sleep' else 'fails before it'})"

    def apply(self, cluster: NetnsCluster) -> None:
        (cluster.node(self.node).dir / "hold").write_text("sleep 3600\n" if self.how == "sleep" else "exit 1\n")

    def revert(self, cluster: NetnsCluster) -> None:
        (cluster.node(self.node).dir / "hold").unlink(missing_ok=True)


@dataclass(frozen=True)
class RdmaDeclared:
    """An RDMA fabric declared for ``node``, which has none (no /dev/infiniband in its namespace):
    ``env`` is how the job declares it, in every task there. The default is what a user writes for
    NCCL; the network stage passes its own declaration (the profile's fabric) here. Plain gloo
    never reads it."""

    node: str = "n2"
    env: Mapping[str, str] = field(default_factory=lambda: {"NCCL_IB_HCA": "mlx5_0"})

    @property
    def key(self) -> str:
        return f"rdma-missing@{self.node}"

    def describe(self) -> str:
        return f"an RDMA fabric declared ({' '.join(task_env_lines(self.env))}), {self.node} has no /dev/infiniband"

    def apply(self, cluster: NetnsCluster) -> None:
        res = cluster.in_node(self.node, "test", "-e", "/dev/infiniband")
        if res.returncode == 0:
            raise RuntimeError(f"{self.node} has /dev/infiniband: declaring RDMA there is no fault")
        NodeEnv(self.node, self.env).apply(cluster)

    def revert(self, cluster: NetnsCluster) -> None:
        NodeEnv(self.node, self.env).revert(cluster)


# Every fault of issue 38 with its variants; the store's host (n1) is the node where a blocked
# port matters, the other node (n2) for the rest, as on a real cluster where rank 0 is healthy.
FAULTS: tuple[Fault, ...] = (
    WrongInterface("n2", "ens9"),
    WrongInterface("n1", ISOLATED_IFACE),
    WrongInterface("n2", ISOLATED_IFACE),
    BlockedPort("n1", RDZV_PORT, "DROP"),
    BlockedPort("n1", RDZV_PORT, "REJECT"),
    HostnameToLoopback("n2", "127.0.1.1"),
    HostnameToLoopback("n2", "127.0.0.1"),
    NeverStarts("n2", "sleep"),
    NeverStarts("n2", "exit"),
    RdmaDeclared("n2"),
)


def fault(key: str) -> Fault:
    """The catalogue's fault named ``key``."""
    for f in FAULTS:
        if f.key == key:
            return f
    raise KeyError(f"no fault {key!r} (faults: {', '.join(f.key for f in FAULTS)})")
