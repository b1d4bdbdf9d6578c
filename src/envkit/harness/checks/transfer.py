"""The ``pinned_transfer`` check: pageable vs pinned host-to-device bandwidth, each timed the way its source does.

- **Placement first** (nvbandwidth sets CPU affinity before allocating host buffers): the
  measuring thread is pinned to the CPUs of the GPU's NUMA node where the host exposes it
  (``/sys/bus/pci/devices/<bus id>/numa_node`` and ``/sys/devices/system/node/node<N>/cpulist``,
  intersected with the CPUs this process may use), then the buffers are allocated and touched,
  so the host pages live on the GPU's node.
- **Pinned** (``torch.empty(..., pin_memory=True)``): CUDA events around ``loops``
  ``copy_(non_blocking=True)`` copies on a side stream; warm-up copies before the samples;
  the median of ``trials`` samples; GB = 1e9 (nvbandwidth's method, less its spin kernel: with
  64-512 MiB copies the launch gaps it removes are negligible).
- **Pageable**: a host clock around synchronous ``copy_`` calls and a final synchronize, as
  cuda-samples' bandwidthTest times pageable memory: a pageable H2D copy is synchronous to the
  host (CUDA stages it through a pinned buffer), so events around it would time the wrong thing.

Every number in the report carries the method actually used (``methods``) and the placement
(``affinity``); without CUDA the check is a skip that says nothing was measured.

- **WSL2's pin budget**: on WSL the most pinned memory that succeeds, held as the loader holds it (one
  power-of-two block per batch, :func:`.gpu.pinned_need`), up to its need (:func:`.gpu.largest_pinned`),
  is measured first and reported (``pin_budget``); the copies are sized to fit it, and a budget below
  the loader's need is a warning naming the prefetch that fits (microsoft/WSL#14078 reports allocations
  above 500 MB failing in Docker on WSL2, NVIDIA/nvidia-docker#1725 about 1 GB).
- **Coherent memory**: on Grace Hopper/Blackwell (NVLink-C2C) and integrated GPUs pageable copies
  run near pinned speed (GH200: 97.4 vs 93.0 GiB/s pinned vs pageable, vortex-data/vortex#7815), so
  "pinned must beat pageable" is not applied there and the report says why.

Example (on a CUDA machine):
    >>> measure_h2d(64 * 2**20, loops=4, trials=3)          # doctest: +SKIP
    {'pinned_gbps': 52.1, 'pageable_gbps': 11.8, 'methods': {...}, 'affinity': {...}, ...}
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any

from ..expectation import LoaderSettings
from ..probes.cpulist import format_cpulist, parse_cpulist
from ..probes.env import detect_wsl
from ..probes.gpufacts import is_coherent, largest_pinned, torch_pin_probe
from ..report import FAIL, PASS, SKIP, WARN, Check, make_check
from ..rules.budget import fit_pinned, pinned_block, pinned_need
from ..rules.sizing import batch_bytes
from .loader import evaluate, make_run, run_loader_child

MIB = 1024 * 1024
FULL = {"size_bytes": 512 * MIB, "loops": 16, "trials": 3}
QUICK = {"size_bytes": 64 * MIB, "loops": 4, "trials": 3}
DEGRADED_GBPS = 5.0  # well below any PCIe Gen3 x16 link (~12 GB/s): a narrow or degraded link
METHODS = {
    "pinned": "CUDA events around copy_(non_blocking=True) on a side stream; warm-up, median of trials, GB=1e9 "
              "(nvbandwidth's method without its spin kernel)",
    "pageable": "host clock around synchronous copy_ + synchronize; warm-up, median of trials, GB=1e9 "
                "(cuda-samples bandwidthTest's method for pageable memory)",
}


def pci_bus_id(domain: int, bus: int, device: int) -> str:
    """The sysfs name of a GPU's PCI function 0.

    >>> pci_bus_id(0, 0x1b, 0)
    '0000:1b:00.0'
    """
    return f"{domain:04x}:{bus:02x}:{device:02x}.0"


def numa_placement(bus_id: str | None, allowed: set[int], sysfs: Path = Path("/sys")) -> dict:
    """Where to run the measuring thread: the GPU's NUMA node's CPUs that this process may use.

    Returns ``{"bus_id", "numa_node", "cpus", "reason"}``; ``cpus`` is None (do not pin) when the
    host does not expose the node (no sysfs entry, ``numa_node`` -1 on single-node machines and
    many VMs) or none of the node's CPUs are allowed (a cpuset elsewhere).
    """
    out: dict[str, Any] = {"bus_id": bus_id, "numa_node": None, "cpus": None, "reason": None}
    if not bus_id:
        out["reason"] = "the GPU's PCI bus id is unknown"
        return out
    try:
        node = int((sysfs / "bus" / "pci" / "devices" / bus_id.lower() / "numa_node").read_text().strip())
    except (OSError, ValueError):
        out["reason"] = f"/sys/bus/pci/devices/{bus_id.lower()}/numa_node is not readable here"
        return out
    if node < 0:
        out["reason"] = "the host exposes no NUMA node for the GPU (numa_node -1)"
        return out
    out["numa_node"] = node
    try:
        node_cpus = set(parse_cpulist((sysfs / "devices" / "system" / "node" / f"node{node}" / "cpulist").read_text()))
    except (OSError, ValueError):
        out["reason"] = f"node{node}'s cpulist is not readable here"
        return out
    usable = node_cpus & allowed if allowed else node_cpus
    if not usable:
        out["reason"] = (f"none of NUMA node {node}'s CPUs ({format_cpulist(node_cpus)}) are allowed to this process "
                         f"({format_cpulist(allowed)})")
        return out
    out["cpus"] = format_cpulist(usable)
    return out


def _device_bus_id(torch, dev) -> str | None:
    props = torch.cuda.get_device_properties(dev)
    parts = [getattr(props, k, None) for k in ("pci_domain_id", "pci_bus_id", "pci_device_id")]
    ints = [p for p in parts if isinstance(p, int)]
    return pci_bus_id(*ints) if len(ints) == 3 else None


def _median_gbps(samples_s: list[float], size_bytes: int, loops: int) -> tuple[float, list[float]]:
    gbps = [size_bytes * loops / s / 1e9 for s in samples_s]
    return round(statistics.median(gbps), 2), [round(g, 2) for g in gbps]


def measure_h2d(size_bytes: int = 512 * MIB, loops: int = 16, trials: int = 3, warmup: int = 4,
                device: int | None = None, sysfs: Path = Path("/sys")) -> dict:
    """Median host-to-device GB/s from pinned and from pageable memory (needs CUDA); see the module doc."""
    import torch  # here, not at the top: importing torch takes seconds and the harness's modules import without it
    if not torch.cuda.is_available():
        raise RuntimeError("CUDA is not available: cannot measure host-to-device bandwidth")
    dev = torch.device("cuda", torch.cuda.current_device() if device is None else device)
    # Placement before allocation: first-touch puts the host pages on the pinned thread's node.
    previous = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    affinity = numa_placement(_device_bus_id(torch, dev), set(previous or ()), sysfs)
    if affinity["cpus"] and previous is not None:
        os.sched_setaffinity(0, parse_cpulist(affinity["cpus"]))  # pid 0: the calling thread only
    try:
        dst = torch.empty(size_bytes, dtype=torch.uint8, device=dev)
        pinned = torch.empty(size_bytes, dtype=torch.uint8, pin_memory=True)
        pageable = torch.empty(size_bytes, dtype=torch.uint8)
        for src in (pinned, pageable):
            src.fill_(1)  # touch every page so first-touch faults are not timed
        result = {"size_bytes": size_bytes, "loops": loops, "trials": trials, "warmup": warmup,
                  "device": torch.cuda.get_device_name(dev), "methods": dict(METHODS), "affinity": affinity,
                  "integrated": bool(getattr(torch.cuda.get_device_properties(dev), "is_integrated", False))}

        stream = torch.cuda.Stream(device=dev)
        with torch.cuda.stream(stream):
            for _ in range(warmup):
                dst.copy_(pinned, non_blocking=True)
        stream.synchronize()
        samples = []
        for _ in range(trials):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            with torch.cuda.stream(stream):
                start.record(stream)
                for _ in range(loops):
                    dst.copy_(pinned, non_blocking=True)
                end.record(stream)
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1e3)
        result["pinned_gbps"], result["pinned_trials_gbps"] = _median_gbps(samples, size_bytes, loops)

        for _ in range(warmup):
            dst.copy_(pageable)
        torch.cuda.synchronize(dev)
        samples = []
        for _ in range(trials):
            t0 = time.perf_counter()
            for _ in range(loops):
                dst.copy_(pageable)  # synchronous to the host for a pageable source
            torch.cuda.synchronize(dev)
            samples.append(time.perf_counter() - t0)
        result["pageable_gbps"], result["pageable_trials_gbps"] = _median_gbps(samples, size_bytes, loops)
        del dst, pinned, pageable
        torch.cuda.empty_cache()
        return result
    finally:
        if affinity["cpus"] and previous is not None:
            os.sched_setaffinity(0, previous)


def placement_text(affinity: dict) -> str:
    """How the measuring thread was placed, for the check's message.

    >>> placement_text({"numa_node": 1, "cpus": "8-15", "reason": None})
    'thread pinned to NUMA node 1 (CPUs 8-15)'
    >>> placement_text({"numa_node": None, "cpus": None, "reason": "the host exposes no NUMA node for the GPU (numa_node -1)"})
    'thread not pinned: the host exposes no NUMA node for the GPU (numa_node -1)'
    """
    if affinity["cpus"]:
        return f"thread pinned to NUMA node {affinity['numa_node']} (CPUs {affinity['cpus']})"
    return f"thread not pinned: {affinity['reason'] or 'unknown'}"


def wsl_pin_budget(settings: LoaderSettings, try_pin=None) -> dict:
    """The WSL2 pin budget for the loader in ``settings``: :func:`envkit.harness.probes.gpufacts.largest_pinned`
    up to its need."""
    per_batch = batch_bytes(settings["batch_size"], settings["sample_shape"], settings["dtype"])
    need = pinned_need(per_batch, settings["num_workers"], settings["prefetch_factor"])
    block = pinned_block(per_batch)  # the loader's blocks, held together, not one allocation of the total
    out = largest_pinned(need, try_pin or torch_pin_probe(block=block), grain=block)
    out["batch_bytes"] = per_batch
    return out


def check_pinned_transfer(settings: LoaderSettings, *, cuda_available: bool, quick: bool = False,
                          timeout: float = 60.0, progress=None, wsl="read", try_pin=None) -> Check:
    """Skip without CUDA; else H2D bandwidth plus loader samples/s with pin_memory on vs off.

    ``wsl``: the WSL version (``"read"``: detect it); on WSL the pin budget is measured first, with
    ``try_pin`` (the seam for :func:`envkit.harness.probes.gpufacts.largest_pinned`).
    """
    params = dict(QUICK if quick else FULL)
    expected = {"methods": dict(METHODS), **params}
    if not cuda_available:
        return make_check("pinned_transfer", SKIP, {"measured": False}, expected,
                          "not measured: CUDA is not available (torch.cuda.is_available() is False), so there is "
                          "no host-to-device copy to time and pin_memory changes nothing on this machine")
    if wsl == "read":
        wsl = detect_wsl()
    budget = None
    if wsl:
        if progress:
            progress("pinned_transfer: measuring the WSL pinned-memory budget")
        budget = wsl_pin_budget(settings, try_pin)
        if budget["capped"]:  # copy what can be pinned: a 512 MiB buffer fails where ~500 MB is the cap
            params["size_bytes"] = max(MIB, min(params["size_bytes"], budget["budget_bytes"]) // MIB * MIB)
    if progress:
        progress(f"pinned_transfer: {params['trials']} x {params['loops']} copies of {params['size_bytes'] // MIB} MiB")
    try:
        bw = measure_h2d(size_bytes=params["size_bytes"], loops=params["loops"], trials=params["trials"])
    except Exception as exc:  # pinned allocation itself can fail (WSL2 limits page-locked memory)
        return make_check("pinned_transfer", FAIL, {"error": str(exc)[-500:]}, expected,
                          f"host-to-device copy failed: {exc}",
                          "on WSL2 pinned memory is limited (keep pinned buffers small, NVIDIA CUDA on WSL "
                          "guide); elsewhere check the driver with nvidia-smi")
    runs = [make_run(settings, True, pin_memory=True), make_run(settings, True, pin_memory=False)]
    child = run_loader_child(runs, timeout=timeout, progress=progress, label="pinned_transfer",
                             stop_on_error=False)
    loader = {}
    for i, key in enumerate(("pin_on", "pin_off")):
        stats, bad = evaluate(child, i)
        loader[key] = stats["samples_per_s"] if stats else bad["failure"]
    return _judge(settings, bw, loader, budget, expected)


def _judge(settings: LoaderSettings, bw: dict[str, Any], loader: dict[str, Any], budget: dict | None,
           expected: dict[str, Any]) -> Check:
    """The measured bandwidths (and, on WSL2, the pin budget) against what pinning should give."""
    measured = {**bw, "loader_samples_per_s": loader, "pin_budget": budget}
    summary = (f"H2D {bw['pinned_gbps']:.1f} GB/s pinned (CUDA events) vs {bw['pageable_gbps']:.1f} GB/s pageable "
               f"(host clock, synchronous copy) ({bw['size_bytes'] // MIB} MiB x {bw['loops']}, median of "
               f"{bw['trials']}, GB=1e9; {placement_text(bw['affinity'])}); loader pin on/off: "
               f"{loader['pin_on']} / {loader['pin_off']} samples/s")
    if budget is not None and budget["capped"]:
        fit = fit_pinned(budget["budget_bytes"], budget["batch_bytes"], settings["num_workers"],
                         settings["prefetch_factor"])
        return make_check("pinned_transfer", WARN, measured, expected,
                          f"{summary}; WSL2 pin budget: {fit['reason']}",
                          "use envkit_runtime.loader_kwargs() (it keeps pin_memory with a prefetch that fits the "
                          "budget, or turns it off) or lower batch_size/prefetch_factor; the limit is WSL2's, "
                          "not Docker's memlock (microsoft/WSL#14078)")
    if is_coherent(bw["device"], bw["integrated"]):
        return make_check("pinned_transfer", PASS, measured, {**expected, "pinned_faster": "not required"},
                          f"{summary}; {bw['device']} shares coherent memory with the host (NVLink-C2C or an "
                          "integrated GPU): pageable copies run near pinned speed there (GH200: 97.4 vs 93.0 GiB/s, "
                          "vortex-data/vortex#7815), so pinned is not required to beat pageable")
    if bw["pinned_gbps"] <= bw["pageable_gbps"]:
        return make_check("pinned_transfer", WARN, measured, expected,
                          summary + ": pinned memory is not faster than pageable",
                          "on WSL2 or with IOMMU/virtualised GPUs pinning may not help; set pin_memory=False "
                          "if the loader is not faster with it")
    if bw["pinned_gbps"] < DEGRADED_GBPS:
        return make_check("pinned_transfer", WARN, measured, expected,
                          summary + f": below {DEGRADED_GBPS} GB/s, the PCIe link looks degraded",
                          "check the link: nvidia-smi -q | grep -A3 'Link Width' (expect x16), and the GPU's "
                          "NUMA locality (nvidia-smi topo -m)")
    return make_check("pinned_transfer", PASS, measured, expected, summary)
