"""pinned_transfer: NUMA placement from a fixture sysfs, the method labels, and the CPU-only report.

No GPU on the CI machine: the CUDA timing itself runs only where CUDA is (measure_h2d); what decides
where the thread runs and how each number is labelled is tested here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.harness.checks import transfer
from envkit.harness.expectation import resolve_loader
from envkit.harness.checks.transfer import METHODS, check_pinned_transfer, numa_placement

BUS = "0000:1b:00.0"


def _sysfs(tmp_path: Path, numa_node: str | None = "1", cpulist: str | None = "8-15,24-31") -> Path:
    root = tmp_path / "sys"
    dev = root / "bus" / "pci" / "devices" / BUS
    dev.mkdir(parents=True)
    if numa_node is not None:
        (dev / "numa_node").write_text(numa_node + "\n")
    if cpulist is not None:
        node = root / "devices" / "system" / "node" / f"node{numa_node}"
        node.mkdir(parents=True)
        (node / "cpulist").write_text(cpulist + "\n")
    return root


def test_pins_to_the_gpus_node_within_the_allowed_cpus(tmp_path):
    place = numa_placement(BUS, set(range(0, 32)), _sysfs(tmp_path))
    assert place == {"bus_id": BUS, "numa_node": 1, "cpus": "8-15,24-31", "reason": None}
    # A cpuset narrows it: only the node's CPUs this process may use.
    assert numa_placement(BUS, {0, 1, 8, 9}, _sysfs(tmp_path / "b"))["cpus"] == "8-9"


@pytest.mark.parametrize("numa_node, cpulist, allowed, why", [
    ("-1", None, {0, 1}, "numa_node -1"),
    (None, None, {0, 1}, "not readable"),
    ("1", "8-15", {0, 1}, "none of NUMA node 1's CPUs"),
])
def test_does_not_pin_where_the_host_does_not_expose_the_node(tmp_path, numa_node, cpulist, allowed, why):
    place = numa_placement(BUS, allowed, _sysfs(tmp_path, numa_node, cpulist))
    assert place["cpus"] is None and why in place["reason"]


def test_unknown_bus_id_is_not_pinned(tmp_path):
    assert numa_placement(None, {0}, tmp_path)["reason"] == "the GPU's PCI bus id is unknown"


def test_cpu_only_reports_not_measured(monkeypatch):
    s = resolve_loader(None, usable=2)
    c = check_pinned_transfer(s, cuda_available=False)
    assert c["status"] == "skip" and c["message"].startswith("not measured: CUDA is not available")
    assert c["expected"]["methods"] == METHODS and c["measured"] == {"measured": False}


def test_each_number_is_labelled_with_its_method(monkeypatch):
    # measure_h2d replaced behind its seam: the check's report must say how each number was timed.
    fake = {"size_bytes": 64 << 20, "loops": 4, "trials": 3, "warmup": 4, "device": "fake", "methods": dict(METHODS),
            "affinity": {"bus_id": BUS, "numa_node": 1, "cpus": "8-15", "reason": None}, "integrated": False,
            "pinned_gbps": 24.0, "pageable_gbps": 9.0}
    monkeypatch.setattr(transfer, "measure_h2d", lambda **kw: dict(fake))
    monkeypatch.setattr(transfer, "run_loader_child", lambda *a, **k: {})  # the loader runs the check uses
    monkeypatch.setattr(transfer, "evaluate", lambda child, i: ({"samples_per_s": 100.0}, {}))
    c = check_pinned_transfer(resolve_loader(None, usable=2), cuda_available=True, quick=True)
    assert c["status"] == "pass"
    assert "24.0 GB/s pinned (CUDA events)" in c["message"] and "9.0 GB/s pageable (host clock" in c["message"]
    assert "NUMA node 1 (CPUs 8-15)" in c["message"]
    assert "bandwidthTest" in c["measured"]["methods"]["pageable"] and "nvbandwidth" in c["measured"]["methods"]["pinned"]
