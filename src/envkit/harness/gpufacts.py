"""The one seam for GPU facts: what ``nvidia-smi``, ``torch.cuda`` and ``docker info`` report.

Each reader turns a tool's output into a plain dict, and each has a parser that takes the tool's
text as recorded, so tests feed recordings of real machines through the same code the checks use.
Standard library only (torch is imported only by :func:`torch_facts`, when it is not handed one).

- :func:`parse_smi_csv` / :func:`query_smi`: ``nvidia-smi --query-gpu=name,compute_cap,driver_version,
  memory.total --format=csv,noheader``; drivers before ``compute_cap`` existed (R470 answers
  'Field "compute_cap" is not a valid field to query', huggingface/candle#733) are asked again without it.
- :func:`torch_facts`: ``torch.version.cuda``, ``torch.cuda.get_arch_list()``, and per device its name,
  ``get_device_capability`` and ``is_integrated``.
- :func:`docker_facts`: ``CgroupDriver``, ``CgroupVersion`` and ``Runtimes`` from ``docker info``
  (the API's JSON, ``docker info --format '{{json .}}'``, or the text ``docker info`` prints).

Example:
    >>> parse_smi_csv("NVIDIA GH200 480GB, 9.0, 570.148.08, 97871 MiB\\n")[0]["capability"]
    (9, 0)
    >>> docker_facts(" Cgroup Driver: systemd\\n Runtimes: io.containerd.runc.v2 nvidia runc\\n")["cgroup_driver"]
    'systemd'
"""

from __future__ import annotations

import subprocess

SMI_FIELDS = ("name", "compute_cap", "driver_version", "memory.total")
SMI_ARGS = [f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader"]
SMI_ARGS_OLD = ["--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]
SMI_TIMEOUT_S = 15.0
COHERENT_NAMES = ("GH200", "GB200", "GB300")  # Grace Hopper / Grace Blackwell superchips


def _capability(text: str) -> tuple[int, int] | None:
    major, _, minor = text.strip().partition(".")
    return (int(major), int(minor or 0)) if major.isdigit() and (minor or "0").isdigit() else None


def _mib(text: str) -> int | None:
    value = text.strip().split(" ")[0]
    return int(value) if value.isdigit() else None


def parse_smi_csv(text: str, fields=SMI_FIELDS) -> list[dict]:
    """One dict per GPU line: ``name``, ``capability`` ((major, minor) or None), ``driver``, ``memory_mib``.

    A header line (``name, compute_cap, ...``) and blank lines are skipped; ``[N/A]`` reads as unknown.
    """
    gpus = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if not line.strip() or cells[0].lower() in ("name", "gpu_name"):
            continue
        if len(cells) > len(fields):  # a comma inside the name: the rest are the known fields
            cells = [",".join(cells[:len(cells) - len(fields) + 1]), *cells[len(cells) - len(fields) + 1:]]
        row = dict(zip(fields, cells, strict=False))
        gpus.append({"name": row.get("name"),
                     "capability": _capability(row.get("compute_cap", "")) if "compute_cap" in row else None,
                     "driver": row.get("driver_version") if row.get("driver_version") not in (None, "[N/A]") else None,
                     "memory_mib": _mib(row.get("memory.total", ""))})
    return gpus


def query_smi(path: str | None, run=subprocess.run, timeout: float = SMI_TIMEOUT_S) -> dict:
    """``{"path", "ok", "gpus", "error", "output"}`` from running ``nvidia-smi`` at ``path``.

    ``path`` None: no nvidia-smi (``ok`` False, ``error`` None). ``run`` is the subprocess seam.
    """
    out: dict = {"path": path, "ok": False, "gpus": [], "error": None, "output": None}
    if not path:
        return out
    for args, fields in ((SMI_ARGS, SMI_FIELDS), (SMI_ARGS_OLD, ("name", "driver_version", "memory.total"))):
        try:
            p = run([path, *args], capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.SubprocessError) as exc:
            out["error"] = f"{path} could not run: {exc}"
            return out
        text = (p.stdout or "") + (p.stderr or "")
        out["output"] = text.strip()[-2000:]
        if p.returncode == 0:
            out.update(ok=True, gpus=parse_smi_csv(p.stdout or "", fields), error=None)
            return out
        out["error"] = text.strip().splitlines()[0] if text.strip() else f"exit status {p.returncode}"
        if "compute_cap" not in text:  # a real failure (NVML, no devices), not an old driver
            return out
    return out


def torch_facts(torch=None) -> dict:
    """``{"torch", "cuda", "hip", "arch_list", "available", "devices": [{"name", "capability", "integrated"}],
    "error"}`` from torch (imported here when not given; ``torch`` None in the result when absent)."""
    out: dict = {"torch": None, "cuda": None, "hip": None, "arch_list": [], "available": False, "devices": [],
                 "error": None}
    if torch is None:
        try:
            import torch
        except ImportError as exc:
            out["error"] = str(exc)
            return out
    out["torch"] = getattr(torch, "__version__", None)
    out["cuda"] = getattr(torch.version, "cuda", None)
    out["hip"] = getattr(torch.version, "hip", None)
    try:
        out["arch_list"] = list(torch.cuda.get_arch_list())
        out["available"] = bool(torch.cuda.is_available())
        for i in range(torch.cuda.device_count() if out["available"] else 0):
            props = torch.cuda.get_device_properties(i)
            out["devices"].append({"name": torch.cuda.get_device_name(i),
                                   "capability": tuple(torch.cuda.get_device_capability(i)),
                                   "integrated": bool(getattr(props, "is_integrated", False))})
    except Exception as exc:  # a broken driver must not take the report down: it is the finding
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


def is_coherent(name: str | None, integrated: bool | None = False) -> bool:
    """A device whose host memory is coherent with its own (Grace Hopper/Blackwell over NVLink-C2C, or
    an integrated GPU): pageable copies run near pinned speed there.

    >>> is_coherent("NVIDIA GH200 480GB"), is_coherent("NVIDIA H100 80GB HBM3"), is_coherent("Orin", True)
    (True, False, True)
    """
    return bool(integrated) or any(tag.lower() in (name or "").lower() for tag in COHERENT_NAMES)


def docker_facts(info) -> dict:
    """``{"cgroup_driver", "cgroup_version", "runtimes"}`` from ``docker info`` (API JSON dict or its text)."""
    if isinstance(info, dict):
        runtimes = info.get("Runtimes") or info.get("runtimes") or {}
        return {"cgroup_driver": info.get("CgroupDriver") or info.get("cgroup_driver"),
                "cgroup_version": str(info.get("CgroupVersion") or info.get("cgroup_version") or "") or None,
                "runtimes": sorted(runtimes)}
    out: dict = {"cgroup_driver": None, "cgroup_version": None, "runtimes": []}
    for line in str(info or "").splitlines():
        key, _, value = line.strip().partition(":")
        value = value.strip()
        if key == "Cgroup Driver":
            out["cgroup_driver"] = value
        elif key == "Cgroup Version":
            out["cgroup_version"] = value
        elif key == "Runtimes":
            out["runtimes"] = sorted(value.split())
    return out
