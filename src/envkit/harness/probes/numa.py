"""NUMA topology: nodes, their CPUs and each NVIDIA GPU's node (sysfs), and what a process may use (/proc).

One reader for both sides: ``envkit doctor`` reads the host's topology with it, and the harness
reads the same sysfs files inside the container (sysfs shows the host's nodes there).
``run.numa`` in the profile: ``none`` (no placement), a node id (``--cpuset-mems=N``
and the profile's cpuset, which must lie in node N), or ``auto`` (the node of the
first GPU the container gets; it is resolved where the host is visible, by
``envkit doctor`` on the host and by the harness's check inside the container, because
generate runs where the target host may not be): :func:`resolve_node`.

Example:
    >>> topo = {"nodes": {0: (0, 1), 1: (2, 3)}, "gpus": [{"pci": "0000:41:00.0", "node": 1}]}
    >>> resolve_node("auto", topo)
    (1, 'the node of GPU 0000:41:00.0')
    >>> allowed("Cpus_allowed_list:\\t0-3,8\\nMems_allowed_list:\\t0\\n")
    {'cpus': (0, 1, 2, 3, 8), 'mems': (0,)}
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .cpulist import parse_cpulist
from .env import read_text

NVIDIA_VENDOR = "0x10de"
GPU_CLASSES = ("0x0300", "0x0302")  # VGA controller, 3D controller (data-center GPUs)


def read_topology(root: str | os.PathLike = "/") -> dict:
    """``{"nodes": {id: cpus}, "gpus": [{"pci", "node"}]}`` from sysfs under ``root`` (node None: unknown)."""
    root = Path(root)
    nodes = {}
    for d in sorted((root / "sys/devices/system/node").glob("node[0-9]*")):
        m = re.fullmatch(r"node(\d+)", d.name)
        text = read_text(d / "cpulist")
        if m and text is not None:
            nodes[int(m.group(1))] = parse_cpulist(text)
    gpus = []
    for d in sorted((root / "sys/bus/pci/devices").glob("*")):
        if read_text(d / "vendor") != NVIDIA_VENDOR or (read_text(d / "class") or "")[:6] not in GPU_CLASSES:
            continue
        node = read_text(d / "numa_node")
        gpus.append({"pci": d.name, "node": int(node) if node and int(node) >= 0 else None})
    return {"nodes": nodes, "gpus": gpus}


def resolve_node(numa, topo: dict) -> tuple[int | None, str]:
    """The node ``run.numa`` means on this topology, and why (None: no placement)."""
    if numa in (None, "none"):
        return None, "run.numa is none"
    if numa != "auto":
        return int(numa), f"run.numa is {numa}"
    gpus = [g for g in topo["gpus"] if g["node"] is not None]
    if gpus:
        return gpus[0]["node"], f"the node of GPU {gpus[0]['pci']}"
    if len(topo["nodes"]) <= 1:
        return (min(topo["nodes"]) if topo["nodes"] else None), "a single NUMA node: nothing to place"
    return None, "auto: no GPU with a known NUMA node is visible"


def allowed(status_text: str) -> dict:
    """``Cpus_allowed_list`` and ``Mems_allowed_list`` of a /proc/<pid>/status text, as id tuples."""
    out: dict[str, tuple[int, ...]] = {"cpus": (), "mems": ()}
    for line in status_text.splitlines():
        key, _, value = line.partition(":")
        if key == "Cpus_allowed_list":
            out["cpus"] = parse_cpulist(value)
        elif key == "Mems_allowed_list":
            out["mems"] = parse_cpulist(value)
    return out
