"""The in-container NUMA placement check (``numa``).

The topology comes from the one reader both sides use (:mod:`envkit.harness.probes.numa`): sysfs
shows the host's nodes inside the container too, and ``/proc/self/status`` (``Cpus_allowed_list``,
``Mems_allowed_list``) says what ``--cpuset-cpus`` / ``--cpuset-mems`` granted; ``run.numa``
names the node (:func:`envkit.harness.probes.numa.resolve_node`).

Example:
    >>> check_numa({"numa": "none"}) is None
    True
"""

from __future__ import annotations

import os
from pathlib import Path

from ..probes.cpulist import format_cpulist
from ..probes.env import read_text
from ..probes.numa import allowed, read_topology, resolve_node
from ..expectation import ExpectRun
from ..report import FAIL, PASS, SKIP, WARN, Check, make_check


def check_numa(run: ExpectRun, root: str | os.PathLike = "/") -> Check | None:
    """The harness's ``numa`` check; None when the expectation asserts no placement (``run.numa`` none/absent)."""
    numa = run.get("numa")
    if numa in (None, "none"):
        return None
    topo = read_topology(root)
    got = allowed(read_text(Path(root) / "proc/self/status") or "")
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
