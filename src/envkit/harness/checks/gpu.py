"""GPU rules: does the wheel run on the GPU (``gpu_arch``), is the driver new enough (``gpu_driver``).

Each rule is one function over facts from :mod:`envkit.harness.probes.gpufacts` and data from
:mod:`envkit.harness.rules.cudatable`; the harness checks here (in the image) and ``envkit doctor``'s
(on the host, :mod:`envkit.doctor.gpu`) call the same ones. Standard library only.

Sources: PyTorch's arch rule and the wheels' arch lists (:mod:`envkit.harness.rules.cudatable`); the
driver minimums from NVIDIA's CUDA Toolkit Release Notes (Table 3) and CUDA Compatibility guide. (The
WSL2 pinned-memory budget: :func:`envkit.harness.rules.budget.fit_pinned`.)

Example:
    >>> judge_arch([{"name": "RTX 5090", "capability": (12, 0)}], ["sm_80", "sm_90", "compute_90"], "cu124")[0]
    'fail'
"""

from __future__ import annotations

import platform
import shutil
from collections.abc import Mapping, Sequence
from typing import Any

from ..rules import cudatable as T
from ..probes.gpufacts import SmiFacts, TorchFacts, query_smi, torch_facts
from ..report import FAIL, PASS, SKIP, WARN, Check, Status, make_check


def cap_text(capability) -> str:
    """``(12, 0)`` -> ``'sm_120 (compute capability 12.0)'``."""
    return f"sm_{capability[0]}{capability[1]} (compute capability {capability[0]}.{capability[1]})"


def machine_key(machine: str | None = None) -> str:
    """``aarch64`` for ARM hosts (Grace), else ``x86_64``: the two columns PyTorch builds."""
    m = (machine or platform.machine()).lower()
    return "aarch64" if m in ("aarch64", "arm64") else "x86_64"


def judge_arch(gpus: Sequence[Mapping[str, Any]], archs: list[str], build: str, machine: str = "x86_64",
               release: str | None = None) -> tuple[Status, str, str | None]:
    """``(status, message, remedy)``: does a build with ``archs`` (named ``build``, of torch ``release``) run on every
    GPU (nvidia-smi's or torch's devices: each with its ``name`` and ``capability``, None when unknown)? The remedy
    names a torch version and variant that exist together and run on ALL of them."""
    known = [g for g in gpus if g["capability"]]
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


def arch_remedy(gpus: Sequence[Mapping[str, Any]], machine: str, release: str | None) -> str:
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
                 release: str | None = None) -> tuple[Status, str, str | None, dict]:
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


def check_gpu_arch(facts: TorchFacts | None = None, machine: str | None = None) -> Check:
    """``gpu_arch`` in the image: ``torch.cuda.get_arch_list()`` against each visible device's capability."""
    facts = torch_facts() if facts is None else facts
    measured = {"torch": facts["torch"], "torch_cuda": facts["cuda"], "arch_list": facts["arch_list"],
                "devices": facts["devices"], "error": facts["error"]}
    expected = {"rule": "an arch with the device's major version and a minor version not above it "
                        "(torch.cuda._check_capability)"}
    if facts["torch"] is None:
        return make_check("gpu_arch", SKIP, measured, expected, "not checked: torch is not importable")
    if facts["hip"]:
        return make_check("gpu_arch", SKIP, measured, expected,
                          f"not checked: torch {facts['torch']} is a ROCm build (the check covers CUDA archs)")
    if not facts["cuda"]:
        return make_check("gpu_arch", SKIP, measured, expected,
                          f"not checked: torch {facts['torch']} is a CPU-only build (torch.version.cuda is None), "
                          "so it carries no GPU kernels to match a device against")
    if not facts["devices"]:
        why = facts["error"] or "torch.cuda.is_available() is False"
        return make_check("gpu_arch", SKIP, measured, expected,
                          f"not checked: no CUDA device visible ({why}), so there is no capability to compare "
                          f"with the build's archs ({' '.join(facts['arch_list'])})")
    status, message, remedy = judge_arch(facts["devices"], facts["arch_list"],
                                         f"torch {facts['torch']} (CUDA {facts['cuda']})", machine_key(machine),
                                         T.release_of(facts["torch"]))
    return make_check("gpu_arch", status, measured, expected, message, remedy)


def check_gpu_driver(facts: TorchFacts | None = None, smi: SmiFacts | None = None, wsl: int | None = None) -> Check:
    """``gpu_driver`` in the image: nvidia-smi's driver against the minimum for torch's CUDA."""
    facts = torch_facts() if facts is None else facts
    smi = query_smi(shutil.which("nvidia-smi")) if smi is None else smi
    drivers = sorted({g["driver"] for g in smi["gpus"] if g["driver"]})
    measured = {"torch_cuda": facts["cuda"], "nvidia_smi": smi["path"], "drivers": drivers, "error": smi["error"]}
    cuda = facts["cuda"]
    if not cuda:
        return make_check("gpu_driver", SKIP, measured, {},
                          "not checked: torch is not a CUDA build" if facts["torch"] else
                          "not checked: torch is not importable")
    if not drivers:
        why = (f"nvidia-smi failed ({smi['error']})" if smi["error"] else
               "nvidia-smi is not on PATH here (the NVIDIA runtime mounts it with the 'utility' capability)")
        return make_check("gpu_driver", SKIP, measured, {"cuda": cuda}, f"not checked: {why}, so the driver is unknown")
    driver = drivers[0]
    status, message, remedy, mins = judge_driver(driver, cuda, windows=wsl == 2, release=T.release_of(facts["torch"]))
    return make_check("gpu_driver", status, measured, mins, message, remedy)
