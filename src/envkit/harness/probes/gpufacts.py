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
- :func:`largest_pinned`: the largest pinned allocation that succeeds (WSL2 caps it), tried through
  :func:`torch_pin_probe` (torch's pinned allocator) or a test's seam.

Example:
    >>> largest_pinned(1200 * 10**6, lambda n: n <= 500 * 10**6)["budget_bytes"] <= 500 * 10**6
    True
    >>> parse_smi_csv("NVIDIA GH200 480GB, 9.0, 570.148.08, 97871 MiB\\n")[0]["capability"]
    (9, 0)
    >>> docker_facts(" Cgroup Driver: systemd\\n Runtimes: io.containerd.runc.v2 nvidia runc\\n")["cgroup_driver"]
    'systemd'
"""

from __future__ import annotations

from typing import TypedDict

from .toolrun import run_tool

SMI_FIELDS = ("name", "compute_cap", "driver_version", "memory.total")
SMI_ARGS = [f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader"]
SMI_ARGS_OLD = ["--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]
SMI_TIMEOUT_S = 15.0
COHERENT_NAMES = ("GH200", "GB200", "GB300")  # Grace Hopper / Grace Blackwell superchips
PIN_STEPS = 6  # bisection steps at most: the answer to within need / 2**5
MIB = 1024 * 1024


# What nvidia-smi prints in a field it cannot read: the value is unknown, never a version or a number.
UNKNOWN_VALUES = ("[N/A]", "[Not Supported]", "[Unknown Error]", "[Insufficient Permissions]", "[GPU is lost]",
                  "ERR!", "N/A", "")
MAX_GPUS = 1024  # lines read from nvidia-smi: more is not one host's GPUs


def _known(text: str | None) -> str | None:
    """``text`` stripped, or None for one of nvidia-smi's unknown markers (or anything bracketed like them)."""
    value = (text or "").strip()
    return None if value in UNKNOWN_VALUES or (value.startswith("[") and value.endswith("]")) else value


class SmiGpu(TypedDict):
    name: str | None
    capability: tuple[int, int] | None
    driver: str | None
    memory_mib: int | None


class SmiFacts(TypedDict):
    """what nvidia-smi said: its path (None: not on PATH), whether it ran, each GPU, and its error"""

    path: str | None
    ok: bool
    gpus: list[SmiGpu]
    error: str | None
    output: str | None


class TorchDevice(TypedDict):
    name: str
    capability: tuple[int, ...]
    integrated: bool


class TorchFacts(TypedDict):
    """what torch says of its build and of each visible CUDA device"""

    torch: str | None
    cuda: str | None
    hip: str | None
    arch_list: list[str]
    available: bool
    devices: list[TorchDevice]
    error: str | None


def _capability(text: str) -> tuple[int, int] | None:
    major, _, minor = (_known(text) or "").partition(".")
    return (int(major), int(minor or 0)) if major.isdigit() and (minor or "0").isdigit() else None


def _mib(text: str) -> int | None:
    value = (_known(text) or "").split(" ")[0]
    return int(value) if value.isdigit() else None


def _driver(text: str | None) -> str | None:
    """A driver version as nvidia-smi prints one (``570.153.02``); anything else is unknown.

    >>> _driver("570.153.02"), _driver("[Unknown Error]"), _driver("ERR!")
    ('570.153.02', None, None)
    """
    value = _known(text)
    return value if value and all(p.isdigit() for p in value.split(".")) else None


def parse_smi_csv(text: str, fields=SMI_FIELDS) -> list[SmiGpu]:
    """One dict per GPU line: ``name``, ``capability`` ((major, minor) or None), ``driver``, ``memory_mib``.

    A header line (``name, compute_cap, ...``) and blank lines are skipped; a value nvidia-smi could not read
    (``[N/A]``, ``[Not Supported]``, ``[Unknown Error]``, ``ERR!``) reads as unknown (None).

    >>> parse_smi_csv("NVIDIA A100, [Unknown Error], ERR!, [N/A]\\n")
    [{'name': 'NVIDIA A100', 'capability': None, 'driver': None, 'memory_mib': None}]
    """
    gpus: list[SmiGpu] = []
    for line in text.splitlines()[:MAX_GPUS + 1]:
        cells = [c.strip() for c in line.split(",")]
        if not line.strip() or cells[0].lower() in ("name", "gpu_name"):
            continue
        if len(cells) > len(fields):  # a comma inside the name: the rest are the known fields
            cells = [",".join(cells[:len(cells) - len(fields) + 1]), *cells[len(cells) - len(fields) + 1:]]
        row = dict(zip(fields, cells, strict=False))
        gpus.append({"name": _known(row.get("name")),
                     "capability": _capability(row.get("compute_cap", "")) if "compute_cap" in row else None,
                     "driver": _driver(row.get("driver_version")),
                     "memory_mib": _mib(row.get("memory.total", ""))})
    return gpus[:MAX_GPUS]


def query_smi(path: str | None, run=run_tool, timeout: float = SMI_TIMEOUT_S) -> SmiFacts:
    """``{"path", "ok", "gpus", "error", "output"}`` from running ``nvidia-smi`` at ``path``.

    ``path`` None: no nvidia-smi (``ok`` False, ``error`` None). ``run`` is the tool seam
    (:func:`~envkit.harness.probes.toolrun.run_tool`'s signature): bounded in time and size, decoded safely. A
    failing nvidia-smi ("couldn't communicate with the NVIDIA driver", "No devices were found") is ``ok``
    False with its own first line as ``error``; so is one that lists no GPU.
    """
    out: SmiFacts = {"path": path, "ok": False, "gpus": [], "error": None, "output": None}
    if not path:
        return out
    for args, fields in ((SMI_ARGS, SMI_FIELDS), (SMI_ARGS_OLD, ("name", "driver_version", "memory.total"))):
        result = run([path, *args], timeout=timeout)
        text = (result.stdout + result.stderr).strip()
        out["output"] = text[-2000:] or None
        if result.ok:
            gpus = parse_smi_csv(result.stdout, fields)
            out["ok"], out["gpus"], out["error"] = bool(gpus), gpus, None if gpus else "nvidia-smi listed no GPU"
            return out
        out["error"] = result.error
        if result.returncode is None or "compute_cap" not in text:  # a real failure (NVML, no devices), not an old driver
            return out
    return out


def torch_facts(torch=None) -> TorchFacts:
    """``{"torch", "cuda", "hip", "arch_list", "available", "devices": [{"name", "capability", "integrated"}],
    "error"}`` from torch (imported here when not given; ``torch`` None in the result when absent)."""
    out: TorchFacts = {"torch": None, "cuda": None, "hip": None, "arch_list": [], "available": False, "devices": [],
                       "error": None}
    if torch is None:
        try:
            import torch  # here, not at the top: importing torch takes seconds and the harness's modules import without it
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
        import torch  # here, not at the top: importing torch takes seconds and the harness's modules import without it

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
