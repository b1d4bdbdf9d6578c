"""The ``pinned_transfer`` check: pageable vs pinned host-to-device bandwidth, nvbandwidth-style.

Method (NVIDIA nvbandwidth, translated to torch): one device buffer, a pinned
(``pin_memory=True``) and a pageable host buffer of ``size_bytes``; 4 warm-up
copies; then ``trials`` times: record a start event on a side stream, issue
``loops`` ``copy_(non_blocking=True)`` copies, record an end event; bandwidth =
``size * loops / elapsed``, GB = 1e9; the median of the trials is reported.
(nvbandwidth also blocks the stream with a spin kernel while the copies are
queued; with 256-512 MiB copies the launch overhead that removes is negligible.)

Example (on a CUDA machine):
    >>> measure_h2d(64 * 2**20, loops=4, trials=3)          # doctest: +SKIP
    {'pinned_gbps': 52.1, 'pageable_gbps': 11.8, ...}
"""

from __future__ import annotations

import statistics

from .report import FAIL, PASS, SKIP, WARN, make_check

MIB = 1024 * 1024
FULL = {"size_bytes": 512 * MIB, "loops": 16, "trials": 3}
QUICK = {"size_bytes": 64 * MIB, "loops": 4, "trials": 3}
DEGRADED_GBPS = 5.0  # well below any PCIe Gen3 x16 link (~12 GB/s): a narrow or degraded link


def measure_h2d(size_bytes: int = 512 * MIB, loops: int = 16, trials: int = 3, warmup: int = 4,
                device: int | None = None) -> dict:
    """Median host-to-device GB/s from pinned and from pageable memory (needs CUDA)."""
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("CUDA is not available: cannot measure host-to-device bandwidth")
    dev = torch.device("cuda", torch.cuda.current_device() if device is None else device)
    dst = torch.empty(size_bytes, dtype=torch.uint8, device=dev)
    sources = {"pinned": torch.empty(size_bytes, dtype=torch.uint8, pin_memory=True),
               "pageable": torch.empty(size_bytes, dtype=torch.uint8)}
    stream = torch.cuda.Stream(device=dev)
    result = {"size_bytes": size_bytes, "loops": loops, "trials": trials, "device": torch.cuda.get_device_name(dev)}
    for name, src in sources.items():
        src.fill_(1)  # touch every page so first-touch faults are not timed
        with torch.cuda.stream(stream):
            for _ in range(warmup):
                dst.copy_(src, non_blocking=True)
        stream.synchronize()
        samples = []
        for _ in range(trials):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            with torch.cuda.stream(stream):
                start.record(stream)
                for _ in range(loops):
                    dst.copy_(src, non_blocking=True)
                end.record(stream)
            end.synchronize()
            seconds = start.elapsed_time(end) / 1e3
            samples.append(size_bytes * loops / seconds / 1e9)
        result[f"{name}_gbps"] = round(statistics.median(samples), 2)
        result[f"{name}_trials_gbps"] = [round(s, 2) for s in samples]
    del dst, sources
    torch.cuda.empty_cache()
    return result


def check_pinned_transfer(settings: dict, *, cuda_available: bool, quick: bool = False, timeout: float = 60.0,
                          progress=None) -> dict:
    """Skip without CUDA; else H2D bandwidth plus loader samples/s with pin_memory on vs off."""
    params = QUICK if quick else FULL
    expected = {"method": "nvbandwidth-style H2D copy_, events, median of trials, GB=1e9", **params}
    if not cuda_available:
        return make_check("pinned_transfer", SKIP, {}, expected,
                          "CUDA is not available (torch.cuda.is_available() is False): no host-to-device "
                          "transfer to measure, pinned memory is irrelevant here")
    if progress:
        progress(f"pinned_transfer: {params['trials']} x {params['loops']} copies of {params['size_bytes'] // MIB} MiB")
    try:
        bw = measure_h2d(**params)
    except Exception as exc:  # pinned allocation itself can fail (WSL2 limits page-locked memory)
        return make_check("pinned_transfer", FAIL, {"error": str(exc)[-500:]}, expected,
                          f"host-to-device copy failed: {exc}",
                          "on WSL2 pinned memory is limited (keep pinned buffers small, NVIDIA CUDA on WSL "
                          "guide); elsewhere check the driver with nvidia-smi")
    from .loader import evaluate, make_run, run_loader_child
    runs = [make_run(settings, True, pin_memory=True), make_run(settings, True, pin_memory=False)]
    child = run_loader_child(runs, timeout=timeout, progress=progress, label="pinned_transfer",
                             stop_on_error=False)
    loader = {}
    for i, key in enumerate(("pin_on", "pin_off")):
        stats, bad = evaluate(child, i)
        loader[key] = stats["samples_per_s"] if stats else bad.get("failure")
    measured = {**bw, "loader_samples_per_s": loader}
    summary = (f"H2D {bw['pinned_gbps']:.1f} GB/s pinned vs {bw['pageable_gbps']:.1f} GB/s pageable "
               f"({bw['size_bytes'] // MIB} MiB x {bw['loops']}); loader pin on/off: "
               f"{loader['pin_on']} / {loader['pin_off']} samples/s")
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
