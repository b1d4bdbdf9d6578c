"""NUMA topology (nodes, their CPUs, each GPU's node) and the in-container placement check.

One reader for both sides: ``envkit doctor`` reads the host's topology with it,
and the harness reads the same sysfs files inside the container (sysfs shows
the host's nodes there) plus ``/proc/self/status`` (``Cpus_allowed_list``,
``Mems_allowed_list``: what ``--cpuset-cpus`` / ``--cpuset-mems`` granted).

``run.numa`` in the profile: ``none`` (no placement), a node id (``--cpuset-mems=N``
and the profile's cpuset, which must lie in node N), or ``auto`` (the node of the
first GPU the container gets; it is resolved where the host is visible, by
``envkit doctor`` on the host and by this check inside the container, because
generate runs where the target host may not be).

Example:
    >>> parse_cpulist("0-3,8,10-11")
    (0, 1, 2, 3, 8, 10, 11)
    >>> topo = {"nodes": {0: (0, 1), 1: (2, 3)}, "gpus": [{"pci": "0000:41:00.0", "node": 1}]}
    >>> resolve_node("auto", topo)
    (1, 'the node of GPU 0000:41:00.0')
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..probes.cpulist import format_cpulist, parse_cpulist
from ..report import FAIL, PASS, SKIP, WARN, make_check

NVIDIA_VENDOR = "0x10de"
GPU_CLASSES = ("0x0300", "0x0302")  # VGA controller, 3D controller (data-center GPUs)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def read_topology(root: str | os.PathLike = "/") -> dict:
    """``{"nodes": {id: cpus}, "gpus": [{"pci", "node"}]}`` from sysfs under ``root`` (node None: unknown)."""
    root = Path(root)
    nodes = {}
    for d in sorted((root / "sys/devices/system/node").glob("node[0-9]*")):
        m = re.fullmatch(r"node(\d+)", d.name)
        text = _read(d / "cpulist")
        if m and text is not None:
            nodes[int(m.group(1))] = parse_cpulist(text)
    gpus = []
    for d in sorted((root / "sys/bus/pci/devices").glob("*")):
        if _read(d / "vendor") != NVIDIA_VENDOR or (_read(d / "class") or "")[:6] not in GPU_CLASSES:
            continue
        node = _read(d / "numa_node")
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


def check_numa(run: dict, root: str | os.PathLike = "/") -> dict | None:
    """The harness's ``numa`` check; None when the expectation asserts no placement (``run.numa`` none/absent)."""
    numa = run.get("numa")
    if numa in (None, "none"):
        return None
    topo = read_topology(root)
    got = allowed(_read(Path(root) / "proc/self/status") or "")
    node, why = resolve_node(numa, topo)
    measured = {"cpus_allowed": format_cpulist(got["cpus"]), "mems_allowed": format_cpulist(got["mems"]),
                "nodes": {str(k): format_cpulist(v) for k, v in topo["nodes"].items()}, "gpus": topo["gpus"]}
    expected = {"numa": numa, "node": node}
    if node is None:
        return make_check("numa", SKIP, measured, expected, f"no placement to check: {why}")
    node_cpus = topo["nodes"].get(node)
    flags = f"--cpuset-cpus={format_cpulist(node_cpus) if node_cpus else '<node CPUs>'} --cpuset-mems={node}"
    if node_cpus is None and topo["nodes"]:
        return make_check("numa", FAIL, measured, expected,
                          f"NUMA node {node} ({why}) does not exist here; nodes: {sorted(topo['nodes'])}",
                          "set run.numa to one of these nodes, or auto")
    problems = []
    if set(got["mems"]) != {node}:
        problems.append(f"memory may come from node(s) {format_cpulist(got['mems'])}, not only node {node}")
    if node_cpus is not None and not set(got["cpus"]) <= set(node_cpus):
        outside = sorted(set(got["cpus"]) - set(node_cpus))
        problems.append(f"CPUs {format_cpulist(outside)} are outside node {node} ({format_cpulist(node_cpus)})")
    if problems:
        return make_check("numa", WARN if len(topo["nodes"]) <= 1 else FAIL, measured, expected,
                          f"placement on node {node} ({why}) not applied: " + "; ".join(problems),
                          f"start the container with {flags}")
    return make_check("numa", PASS, measured, expected,
                      f"CPUs {measured['cpus_allowed']} and memory node {node} ({why})")
