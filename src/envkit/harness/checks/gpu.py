"""GPU rules: does the wheel run on the GPU (``gpu_arch``), is the driver new enough (``gpu_driver``),
and how much pinned memory WSL2 lets a process lock (the pin budget).

Each rule is one function over facts from :mod:`envkit.harness.probes.gpufacts` and data from :mod:`envkit.harness.rules.cudatable`; the
harness checks here (in the image) and ``envkit doctor``'s (on the host, :mod:`envkit.doctor.gpu`)
call the same ones. Standard library only; torch is imported only by :func:`torch_pin_probe`.

Sources: PyTorch's arch rule and the wheels' arch lists (:mod:`envkit.harness.rules.cudatable`); the driver minimums
from NVIDIA's CUDA Toolkit Release Notes (Table 3) and CUDA Compatibility guide. WSL2's pinned limit
in Docker is documented nowhere and is not one number: microsoft/WSL#14078 reports allocations above
500 MB failing, NVIDIA/nvidia-docker#1725 a block past about 1 GB; so it is measured, the way the
loader pins (:func:`pinned_need`, :func:`torch_pin_probe`).

Example:
    >>> judge_arch([{"name": "RTX 5090", "capability": (12, 0)}], ["sm_80", "sm_90", "compute_90"], "cu124")[0]
    'fail'
    >>> largest_pinned(1200 * MB, lambda n: n <= 500 * MB)["budget_bytes"] <= 500 * MB
    True
    >>> pinned_block(38_535_168) // MIB, pinned_need(38_535_168, 4, 2) // MIB  # a 64x3x224x224 float32 batch
    (64, 576)
"""

from __future__ import annotations

import platform
import shutil

from ..rules import cudatable as T
from ..probes.gpufacts import query_smi, torch_facts
from ..report import FAIL, PASS, SKIP, WARN, human_bytes, make_check

MB = 1000 * 1000
MIB = 1024 * 1024
PIN_STEPS = 6  # bisection steps at most: the answer to within need / 2**5
WSL_PIN_SOURCE = ("WSL2 caps pinned memory in Docker at a limit no document states: microsoft/WSL#14078 reports "
                  "allocations above 500 MB failing, NVIDIA/nvidia-docker#1725 about 1 GB")


def cap_text(capability) -> str:
    """``(12, 0)`` -> ``'sm_120 (compute capability 12.0)'``."""
    return f"sm_{capability[0]}{capability[1]} (compute capability {capability[0]}.{capability[1]})"


def machine_key(machine: str | None = None) -> str:
    """``aarch64`` for ARM hosts (Grace), else ``x86_64``: the two columns PyTorch builds."""
    m = (machine or platform.machine()).lower()
    return "aarch64" if m in ("aarch64", "arm64") else "x86_64"


def judge_arch(gpus: list[dict], archs: list[str], build: str, machine: str = "x86_64",
               release: str | None = None) -> tuple[str, str, str | None]:
    """``(status, message, remedy)``: does a build with ``archs`` (named ``build``, of torch ``release``) run on
    every GPU? The remedy names a torch version and variant that exist together and run on ALL of them."""
    known = [g for g in gpus if g.get("capability")]
    if not known:
        return SKIP, "no GPU reported its compute capability (nvidia-smi before R510 has no compute_cap)", None
    bad = [g for g in known if not T.runs_on(archs, g["capability"])]
    shown = " ".join(archs) or "no CUDA archs"
    if not bad:
        names = ", ".join(f"{g['name']} {cap_text(g['capability'])}" for g in known)
        return PASS, f"{build} ({shown}) runs on {names}", None
    what = "; ".join(f"{g['name']} is {cap_text(g['capability'])}" for g in bad)
    message = (f"{what}, but {build} carries {shown}: no kernel runs on it ('no kernel image is available "
               "for execution on the device'; PyTorch warns 'not compatible with the current PyTorch installation')")
    return FAIL, message, arch_remedy(known, machine, release)


def arch_remedy(gpus: list[dict], machine: str, release: str | None) -> str:
    """A (torch version, variant) that exists and runs on every one of ``gpus``: the smallest step from ``release``.

    >>> arch_remedy([{"name": "RTX 5090", "capability": (12, 0)}], "x86_64", "2.5").split(" (")[0]
    'image.torch: {version: "2.7.1", variant: cu128}'
    """
    caps = [g["capability"] for g in gpus]
    pairs = T.pairs_for(caps, machine, since=release) or T.pairs_for(caps, machine)[-1:]
    if pairs:
        rel, variant = pairs[0]
        version, cuda = T.LATEST_PATCH[rel], T.RELEASES[rel][variant].cuda
        driver = T.driver_minimum(cuda)["toolkit"] or T.driver_minimum(cuda)["compat"]
        served = ", ".join(sorted({cap_text(c).split(" ")[0] for c in caps}))
        return (f"image.torch: {{version: \"{version}\", variant: {variant}}} (torch {version}+{variant} runs on "
                f"{served}; https://download.pytorch.org/whl/{variant}; its CUDA {cuda} needs driver >= {driver})")
    each = "; ".join(f"{g['name']} ({cap_text(g['capability']).split(' ')[0]}): "
                     + (", ".join(f"{T.LATEST_PATCH[r]}+{v}" for r, v in T.pairs_for([g["capability"]], machine)[-2:])
                        or "none recorded")
                     for g in gpus)
    return (f"no recorded PyTorch wheel runs on all of these GPUs together ({each}): give the container the GPUs "
            "one wheel serves (run.gpus), or build torch with TORCH_CUDA_ARCH_LIST naming each")


def judge_driver(driver: str, cuda: str, windows: bool = False,
                 release: str | None = None) -> tuple[str, str, str | None, dict]:
    """``(status, message, remedy, minimum)``: the driver against the minimum for the wheel's CUDA; a variant
    it names instead is one ``release`` (when known) ships."""
    mins = T.driver_minimum(cuda, windows)
    have = T.version_key(driver)
    toolkit, compat = mins["toolkit"], mins["compat"]
    where = "Windows " if windows else ""
    update = ("update the NVIDIA driver on Windows (WSL2 uses it; install no Linux driver inside WSL)" if windows
              else "update the host's NVIDIA driver")
    runs = T.variants_for_driver(driver, windows, release)
    compat_runs = sorted({v for rel, ws in T.RELEASES.items() if release in (None, rel) for v, w in ws.items()
                          if (m := T.driver_minimum(w.cuda, windows)["compat"]) and have >= T.version_key(m)},
                         key=lambda v: T.version_key(T.variant_cuda(v) or "0"))
    instead = (f", or use a torch variant this driver runs fully: {runs[-1]}" if runs else
               f", or use torch variant {compat_runs[-1]} (its CUDA runs on this driver through minor-version "
               "compatibility)" if compat_runs else "")
    if toolkit is None and compat is None:
        return SKIP, f"no driver minimum recorded for CUDA {cuda}", None, mins
    if compat and have < T.version_key(compat):
        need = toolkit or compat
        return (FAIL, f"{where}driver {driver} is older than CUDA {cuda.split('.')[0]}.x's minimum {compat} "
                      f"(minor-version compatibility; CUDA {cuda}'s own driver is >= {need}): the wheel's CUDA "
                      "does not start ('The NVIDIA driver on your system is too old', torch.cuda.is_available() "
                      "False)",
                f"{update} to >= {need} (>= {compat} runs CUDA {cuda.split('.')[0]}.x with minor-version "
                f"compatibility){instead}", mins)
    if toolkit and have < T.version_key(toolkit):
        return (WARN, f"{where}driver {driver} runs CUDA {cuda} only through minor-version compatibility "
                      f"(>= {compat}), below the toolkit's own >= {toolkit}: PTX from a newer CUDA cannot be "
                      "JIT-compiled and some features are missing",
                f"{update} to >= {toolkit}{instead}", mins)
    return PASS, f"{where}driver {driver} >= {toolkit or compat}, CUDA {cuda}'s minimum", None, mins


def check_gpu_arch(facts: dict | None = None, machine: str | None = None) -> dict:
    """``gpu_arch`` in the image: ``torch.cuda.get_arch_list()`` against each visible device's capability."""
    facts = torch_facts() if facts is None else facts
    measured = {"torch": facts.get("torch"), "torch_cuda": facts.get("cuda"), "arch_list": facts.get("arch_list"),
                "devices": facts.get("devices"), "error": facts.get("error")}
    expected = {"rule": "an arch with the device's major version and a minor version not above it "
                        "(torch.cuda._check_capability)"}
    if facts.get("torch") is None:
        return make_check("gpu_arch", SKIP, measured, expected, "not checked: torch is not importable")
    if facts.get("hip"):
        return make_check("gpu_arch", SKIP, measured, expected,
                          f"not checked: torch {facts['torch']} is a ROCm build (the check covers CUDA archs)")
    if not facts.get("cuda"):
        return make_check("gpu_arch", SKIP, measured, expected,
                          f"not checked: torch {facts['torch']} is a CPU-only build (torch.version.cuda is None), "
                          "so it carries no GPU kernels to match a device against")
    if not facts.get("devices"):
        why = facts.get("error") or "torch.cuda.is_available() is False"
        return make_check("gpu_arch", SKIP, measured, expected,
                          f"not checked: no CUDA device visible ({why}), so there is no capability to compare "
                          f"with the build's archs ({' '.join(facts.get('arch_list') or [])})")
    status, message, remedy = judge_arch(facts["devices"], facts["arch_list"],
                                         f"torch {facts['torch']} (CUDA {facts['cuda']})", machine_key(machine),
                                         T.release_of(facts["torch"]))
    return make_check("gpu_arch", status, measured, expected, message, remedy)


def check_gpu_driver(facts: dict | None = None, smi: dict | None = None, wsl: int | None = None) -> dict:
    """``gpu_driver`` in the image: nvidia-smi's driver against the minimum for torch's CUDA."""
    facts = torch_facts() if facts is None else facts
    smi = query_smi(shutil.which("nvidia-smi")) if smi is None else smi
    measured = {"torch_cuda": facts.get("cuda"), "nvidia_smi": smi.get("path"),
                "drivers": sorted({g["driver"] for g in smi.get("gpus") or [] if g.get("driver")}),
                "error": smi.get("error")}
    cuda = facts.get("cuda")
    if not cuda:
        return make_check("gpu_driver", SKIP, measured, {},
                          "not checked: torch is not a CUDA build" if facts.get("torch") else
                          "not checked: torch is not importable")
    if not measured["drivers"]:
        why = (f"nvidia-smi failed ({smi['error']})" if smi.get("error") else
               "nvidia-smi is not on PATH here (the NVIDIA runtime mounts it with the 'utility' capability)")
        return make_check("gpu_driver", SKIP, measured, {"cuda": cuda}, f"not checked: {why}, so the driver is unknown")
    driver = measured["drivers"][0]
    status, message, remedy, mins = judge_driver(driver, cuda, windows=wsl == 2, release=T.release_of(facts.get("torch")))
    return make_check("gpu_driver", status, measured, mins, message, remedy)


# ---------------------------------------------------------------- the pinned-memory budget (WSL2)
def pinned_block(batch_bytes: int) -> int:
    """The pinned block torch allocates for a batch of ``batch_bytes``: the next power of two. Its caching host
    allocator rounds every request so (torch 2.13 include/ATen/core/CachingHostAllocator.h:300-309, with
    the default round threshold and cache size unlimited: c10/core/AllocatorConfig.h:361-363; torch 2.5's
    aten/src/ATen/core/CachingHostAllocator.h rounds the same, unconditionally).

    >>> pinned_block(100), pinned_block(128), pinned_block(0)
    (128, 128, 0)
    """
    return 1 << (batch_bytes - 1).bit_length() if batch_bytes > 0 else 0


def pinned_batches(workers: int, prefetch: int) -> int:
    """Batches a pinning DataLoader holds pinned at once: every prefetched batch plus the one in use."""
    return max(1, workers * prefetch) + 1


def pinned_need(batch_bytes: int, workers: int, prefetch: int) -> int:
    """Bytes a pinning DataLoader holds pinned at once: one power-of-two block per batch held
    (:func:`pinned_block`; the pin thread pins each batch's tensor on its own).

    >>> pinned_need(100, 4, 2), pinned_need(100, 0, 2)
    (1152, 256)
    """
    return pinned_block(batch_bytes) * pinned_batches(workers, prefetch)


def largest_pinned(need: int, try_pin, steps: int = PIN_STEPS, grain: int = MIB) -> dict:
    """The largest pinned allocation that succeeds, up to ``need``: ``need`` first, then a bounded bisection.

    ``try_pin(n)`` allocates ``n`` pinned bytes, frees them and returns whether it worked (the seam;
    :func:`torch_pin_probe` in the image). At most ``steps`` allocations.
    """
    trials: list[list] = []

    def attempt(n: int) -> bool:
        ok = bool(try_pin(n))
        trials.append([n, ok])
        return ok

    if need <= 0 or attempt(need):
        return {"need_bytes": need, "budget_bytes": need, "capped": False, "trials": trials}
    lo, hi = 0, need
    while len(trials) < steps and hi - lo > grain:
        mid = max(grain, (lo + hi) // 2 // grain * grain)
        if mid <= lo or mid >= hi:
            break
        if attempt(mid):
            lo = mid
        else:
            hi = mid
    return {"need_bytes": need, "budget_bytes": lo, "capped": True, "trials": trials}


def torch_pin_probe(torch=None, block: int | None = None):
    """``try_pin`` for :func:`largest_pinned` with torch's pinned allocator (what DataLoader's pin thread
    uses): ``try_pin(n)`` holds ``n`` bytes as the loader would, in blocks of ``block`` bytes held at once
    (None: one allocation of ``n``); the cached blocks are released after each try so tries do not add up."""
    if torch is None:
        import torch

    def try_pin(n: int) -> bool:
        size = block or n
        held = []
        try:
            for _ in range(max(1, -(-n // size))):
                held.append(torch.empty(size, dtype=torch.uint8, pin_memory=True))
            return True
        except RuntimeError:
            return False
        finally:
            held.clear()
            empty = getattr(torch._C, "_host_emptyCache", None)
            if empty is not None:
                empty()
    return try_pin


def fit_pinned(budget: int, batch_bytes: int, workers: int, prefetch: int) -> dict:
    """``{"pin_memory", "prefetch_factor", "reason"}``: keep pinning with a prefetch that fits the budget, or stop.

    >>> fit_pinned(500 * MB, 60 * MB, 4, 2)["prefetch_factor"]
    1
    >>> fit_pinned(100 * MB, 60 * MB, 4, 2)["pin_memory"]
    False
    """
    need = pinned_need(batch_bytes, workers, prefetch)
    base = (f"the largest pinned allocation that succeeds here is {human_bytes(budget)} "
            f"({WSL_PIN_SOURCE})")
    if budget >= need:
        return {"pin_memory": True, "prefetch_factor": prefetch,
                "reason": f"{base}; the loader pins {human_bytes(need)} ({_need_text(batch_bytes, workers, prefetch)})"}
    for p in range(prefetch - 1, 0, -1):
        if workers and budget >= pinned_need(batch_bytes, workers, p):
            return {"pin_memory": True, "prefetch_factor": p,
                    "reason": f"{base}: prefetch_factor lowered from {prefetch} to {p} so the pinned batches "
                              f"({_need_text(batch_bytes, workers, p)} = "
                              f"{human_bytes(pinned_need(batch_bytes, workers, p))}) fit"}
    return {"pin_memory": False, "prefetch_factor": prefetch,
            "reason": f"{base}, less than {human_bytes(pinned_need(batch_bytes, workers, 1 if workers else prefetch))} "
                      f"({_need_text(batch_bytes, workers, 1 if workers else prefetch)}): pin_memory off, batches "
                      "copy from pageable memory"}


def _need_text(batch_bytes: int, workers: int, prefetch: int) -> str:
    held = max(1, workers * prefetch)
    how = f"{workers} workers x prefetch {prefetch}" if workers else "main-process loading"
    return (f"{held} prefetched batch(es) of {human_bytes(batch_bytes)} ({how}) + 1 in use, each pinned as a "
            f"{human_bytes(pinned_block(batch_bytes))} block (torch rounds to a power of two)")
