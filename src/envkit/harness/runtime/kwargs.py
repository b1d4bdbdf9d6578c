"""The runtime companion: DataLoader arguments that fit the environment the script runs in.

``loader_kwargs()`` decides every DataLoader argument from the live process, by
the harness's own rules (the ``auto`` worker rule :func:`envkit.harness.rules.sizing.plan_workers` on
:func:`envkit.harness.rules.sizing.cpu_fact`, the CPUs usable with the quota rounded up; the shm
formula on the /dev/shm that is free now, :mod:`envkit.harness.rules.budget`), and keeps the reason
for each choice. In the image it is ``from envkit_runtime import loader_kwargs``
(the zipapp at /opt/envkit is on the venv's path); on a host
``from envkit.runtime import loader_kwargs``.

The start method follows the platform: ``spawn`` on Windows and macOS,
``forkserver`` on Linux from Python 3.14, otherwise Linux's default ``fork``.
Under spawn/forkserver the training script itself must guard its entry point
with ``if __name__ == "__main__":``; no library can do that for it.

Example:
    >>> kw = loader_kwargs(batch_size=8, sample_bytes=1024, expect=False, cuda=False,
    ...                    affinity=4, quota_cpus=None, shm_free=64 * 2**20, system="Linux", python=(3, 12))
    >>> dict(kw)
    {'batch_size': 8, 'num_workers': 3, 'prefetch_factor': 2, 'persistent_workers': True, 'pin_memory': False}
    >>> kw.reasons["num_workers"]
    'the auto rule (usable CPUs - 1, at most 8) on 4 usable CPUs (affinity 4, no cgroup CPU quota); shm: needs 1.0 MiB of the 64.0 MiB free'
"""

from __future__ import annotations

import json
import os
import platform as _platform
import sys
from dataclasses import dataclass
from pathlib import Path

from ..probes import env as envmod
from ..probes.gpufacts import largest_pinned, torch_pin_probe
from ..report import human_bytes, plural
from ..rules.budget import fit_pinned, pinned_block, pinned_need, shm_fit, shm_need
from ..rules.sizing import DTYPE_ITEMSIZE, batch_bytes as _shape_batch_bytes, cpu_fact, plan_workers

EXPECT_ENV = "ENVKIT_EXPECT"
EXPECT_NAME = "envkit_expect.json"
DEFAULT_BATCH_SIZE = 32
DEFAULT_PREFETCH = 2


class LoaderKwargs(dict):
    """DataLoader keyword arguments (a plain dict for ``DataLoader(ds, **kw)``) plus why each was chosen.

    ``reasons`` maps each argument to one sentence; ``budget`` holds the measurements behind them.
    """

    def __init__(self, kwargs: dict, reasons: dict, budget: dict):
        super().__init__(kwargs)
        self.reasons = reasons
        self.budget = budget

    def explain(self) -> str:
        """One line per decision: ``name=value: reason``."""
        lines = []
        for key, why in self.reasons.items():
            value = self.get(key, "(not passed)")
            lines.append(f"{key}={value}: {why}")
        return "\n".join(lines)


def find_expect() -> Path | None:
    """The profile's expectation: ``$ENVKIT_EXPECT``, else the file beside the harness zipapp (in the image)."""
    if os.environ.get(EXPECT_ENV):
        return Path(os.environ[EXPECT_ENV])
    here = Path(__file__).resolve()
    for parent in here.parents:
        if parent.suffix == ".pyz":
            candidate = parent.parent / EXPECT_NAME
            return candidate if candidate.is_file() else None
    return None


def _load_expect(expect) -> tuple[dict, str | None]:
    """``(loader section, where it came from)``; ``expect=False`` ignores any expectation."""
    if expect is False:
        return {}, None
    if isinstance(expect, dict):
        return {k: v for k, v in (expect.get("loader") or {}).items() if v is not None}, "the expectation passed in"
    path = Path(expect) if expect else find_expect()
    if path is None:
        return {}, None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}, None
    return {k: v for k, v in (doc.get("loader") or {}).items() if v is not None}, str(path)


def item_bytes(sample) -> int:
    """Bytes one sample occupies once collated: tensors (and arrays) by size, containers summed.

    >>> item_bytes((b"abcd", [1, 2.0], {"x": b"ab"}))
    22
    """
    if hasattr(sample, "element_size") and hasattr(sample, "numel"):
        return int(sample.element_size() * sample.numel())
    if hasattr(sample, "nbytes"):
        return int(sample.nbytes)
    if isinstance(sample, (bytes, bytearray, memoryview)):
        return len(sample)
    if isinstance(sample, (bool, int, float)):
        return 8  # collated into an int64/float64 tensor
    if isinstance(sample, dict):
        return sum(item_bytes(v) for v in sample.values())
    if isinstance(sample, (list, tuple)):
        return sum(item_bytes(v) for v in sample)
    return 0


def start_method(system: str, python: tuple[int, int]) -> tuple[str | None, str]:
    """``(multiprocessing_context or None for the default, reason)`` for a platform.

    >>> start_method("Windows", (3, 12))[0], start_method("Linux", (3, 14))[0], start_method("Linux", (3, 12))[0]
    ('spawn', 'forkserver', None)
    """
    if system in ("Windows", "Darwin"):
        return "spawn", (f"{system} has no safe fork: workers start with spawn, so the script must guard its "
                         "entry point with `if __name__ == \"__main__\":` and the dataset must be picklable")
    if python >= (3, 14):
        return "forkserver", ("Python 3.14+ on Linux starts workers with forkserver (fork after threads is unsafe); "
                              "the script needs the `if __name__ == \"__main__\":` guard")
    return None, "Linux default (fork): workers inherit the dataset without pickling"


def _cuda_available() -> bool:
    try:
        import torch  # here, not at the top: importing torch takes seconds and the harness's modules import without it
        return bool(torch.cuda.is_available())
    except Exception:  # no torch or a broken driver: no pinning
        return False


def local_ranks() -> int:
    """Training processes on this node: torchrun's ``LOCAL_WORLD_SIZE`` (1 outside torchrun or when unreadable).

    >>> local_ranks() >= 1
    True
    """
    try:
        return max(1, int(os.environ.get("LOCAL_WORLD_SIZE") or 1))
    except ValueError:
        return 1


def loader_kwargs(dataset=None, batch_size: int | None = None, *, num_workers="auto", prefetch_factor=None,
                  sample_bytes: int | None = None, expect=None, shm_path: str = "/dev/shm",
                  cuda: bool | None = None, affinity: int | None = None, quota_cpus="read", shm_free="read",
                  system: str | None = None, python: tuple[int, int] | None = None,
                  pin_budget="read", ranks: int | None = None) -> LoaderKwargs:
    """DataLoader arguments for this process's environment, each with its reason (see :class:`LoaderKwargs`).

    ``dataset`` (map-style) is sampled once (``dataset[0]``) to size a batch; else ``sample_bytes``,
    else the profile's expectation (found beside the harness in the image, or ``$ENVKIT_EXPECT``).
    ``num_workers`` ("auto" or a number), ``prefetch_factor`` and ``batch_size`` are wishes: the CPU and
    shm budgets can lower them, never raise them; on WSL2 the pinned-memory budget (the largest pinned
    allocation that succeeds, measured when ``pin_budget`` is ``"read"``; bytes to impose one) can lower
    ``prefetch_factor`` or turn ``pin_memory`` off. ``ranks``: the training processes on this node, each
    with its own loader sharing the CPUs and /dev/shm (default: torchrun's ``LOCAL_WORLD_SIZE``, else 1).
    The remaining keywords are measurement seams for tests.
    """
    loader, expect_src = _load_expect(expect)
    reasons: dict[str, str] = {}
    kw: dict = {}
    kw["batch_size"] = batch_size = _batch_size(batch_size, loader, expect_src, reasons)
    system = system or _platform.system()
    cpu = _cpu_workers(num_workers, loader, affinity, quota_cpus, ranks, system)

    # shm budget: the batch's bytes through the harness's formula against the free /dev/shm.
    prefetch = int(prefetch_factor or loader.get("prefetch_factor") or DEFAULT_PREFETCH)
    bbytes, bsrc = _batch_bytes(dataset, sample_bytes, loader, batch_size)
    if shm_free == "read":
        st = envmod.shm_stats(shm_path) if system != "Windows" else None
        shm_free = st["free_bytes"] if st else None
    if shm_free is not None and cpu.ranks > 1:
        shm_free //= cpu.ranks  # every rank's loader fills the node's /dev/shm at once: this one gets its share
    budget = {"affinity": cpu.affinity, "quota_cpus": cpu.quota_cpus, "effective_cpus": cpu.cpus,
              "cpu_worker_budget": cpu.budget, "ranks": cpu.ranks, "shm_free_bytes": shm_free, "batch_bytes": bbytes,
              "expect": expect_src}
    why_prefetch = ("given by the caller" if prefetch_factor else
                    "the profile's" if loader.get("prefetch_factor") else "DataLoader's default")
    workers, prefetch, why_workers, why_prefetch = _fit_shm(cpu.workers, prefetch, cpu.why, why_prefetch,
                                                            bbytes, bsrc, shm_free)
    budget["shm_need_bytes"] = shm_need(bbytes, workers, prefetch) if bbytes else None
    kw["num_workers"] = workers
    reasons["num_workers"] = why_workers
    _worker_args(kw, reasons, workers, prefetch, why_prefetch, loader, system, python or sys.version_info[:2])
    _pinning(kw, reasons, budget, loader, _cuda_available() if cuda is None else cuda, bbytes, workers, prefetch,
             pin_budget)
    return LoaderKwargs(kw, reasons, budget)


def _batch_size(batch_size: int | None, loader: dict, expect_src: str | None, reasons: dict[str, str]) -> int:
    """The caller's batch size, else the profile's, else envkit's default; its reason goes into ``reasons``."""
    if batch_size is not None:
        reasons["batch_size"] = "given by the caller"
        return batch_size
    reasons["batch_size"] = (f"the profile's ({expect_src})" if loader.get("batch_size")
                             else "none given: envkit's default")
    return int(loader.get("batch_size") or DEFAULT_BATCH_SIZE)


@dataclass(frozen=True)
class _CpuWorkers:
    """The CPU side of the budget: the workers the CPUs allow for the wish, and why."""

    workers: int
    why: str
    affinity: int
    quota_cpus: float | None
    cpus: int
    budget: int
    ranks: int


def _cpu_workers(num_workers, loader: dict, affinity: int | None, quota_cpus, ranks: int | None,
                 system: str) -> _CpuWorkers:
    """Affinity (cpuset) capped by the cgroup quota rounded up, as generate and the harness plan it; auto is
    the harness's auto rule on it, an explicit count is held to one worker per CPU."""
    affinity = envmod.usable_cpus() if affinity is None else affinity
    if quota_cpus == "read":
        quota_cpus = envmod.read_cgroup_cpu_quota()["quota_cpus"]
    cpus = cpu_fact(("count", max(1, affinity), "affinity"), ("quota", quota_cpus, "cgroup quota"))[0] or 1
    ranks = local_ranks() if ranks is None else ranks
    cpu_budget = plan_workers("auto", cpus, ranks)
    cap = max(1, cpus // ranks)
    quota_text = f"cgroup CPU quota {quota_cpus:g}" if quota_cpus else "no cgroup CPU quota"
    if ranks > 1:
        quota_text += f"; {ranks} training processes share them (LOCAL_WORLD_SIZE)"
    wish = num_workers
    if wish == "auto" and loader.get("num_workers") not in (None, "auto"):
        wish = int(loader["num_workers"])
        wish_src = f"the profile's num_workers={wish}"
    else:
        wish_src = "auto" if wish == "auto" else f"the requested num_workers={wish}"
    if wish == "auto":
        workers = cpu_budget
        rule = "usable CPUs - 1" if ranks == 1 else "floor(usable CPUs / ranks) - 1"
        why = f"the auto rule ({rule}, at most 8) on {cpus} usable CPUs (affinity {affinity}, {quota_text})"
    elif int(wish) > cap:
        workers = cap
        why = (f"{wish_src} lowered to one worker per usable CPU (quota rounded up) "
               f"(affinity {affinity}, {quota_text})")
    else:
        workers = int(wish)
        why = f"{wish_src} fits the {cap} usable CPUs (affinity {affinity}, {quota_text})"
    if system == "Windows" and workers:
        why += "; on Windows every worker is a fresh interpreter (spawn) that re-imports the script"
    return _CpuWorkers(workers, why, affinity, quota_cpus, cpus, cpu_budget, ranks)


def _batch_bytes(dataset, sample_bytes: int | None, loader: dict, batch_size: int) -> tuple[int | None, str | None]:
    """One batch's bytes and where that came from: ``dataset[0]``, ``sample_bytes``, the profile's shape, or unknown."""
    if dataset is not None and hasattr(dataset, "__getitem__") and hasattr(dataset, "__len__") and len(dataset):
        return batch_size * item_bytes(dataset[0]), "dataset[0]"
    if sample_bytes is not None:
        return batch_size * int(sample_bytes), "sample_bytes"
    if loader.get("sample_shape") and loader.get("dtype") in DTYPE_ITEMSIZE:
        return (_shape_batch_bytes(batch_size, loader["sample_shape"], loader["dtype"]),
                f"the profile's sample_shape {list(loader['sample_shape'])} {loader['dtype']}")
    return None, None


def _fit_shm(workers: int, prefetch: int, why_workers: str, why_prefetch: str, bbytes: int | None,
             bsrc: str | None, shm_free: int | None) -> tuple[int, int, str, str]:
    """The workers and prefetch the free /dev/shm holds (:func:`envkit.harness.rules.budget.shm_fit`), with reasons."""
    if workers and shm_free is not None and bbytes:
        fit_w, fit_p = shm_fit(free_bytes=shm_free, batch_bytes=bbytes, num_workers=workers, prefetch_factor=prefetch)
        need = shm_need(bbytes, workers, prefetch)
        if (fit_w, fit_p) == (workers, prefetch):
            return workers, prefetch, why_workers + f"; shm: needs {human_bytes(need)} of the {human_bytes(shm_free)} free", why_prefetch
        shm_text = (f"{plural(workers, 'worker')} x prefetch {prefetch} need {human_bytes(need)} of /dev/shm "
                    f"({human_bytes(bbytes)} per batch from {bsrc}) but only {human_bytes(shm_free)} is free; "
                    "raise --shm-size (compose shm_size, Kubernetes emptyDir sizeLimit) to keep them")
        if fit_w == 0:
            why_workers = f"main-process loading: {shm_text}"
        elif fit_w != workers:
            why_workers = f"lowered from {workers} by shm: {shm_text}"
        if fit_p != prefetch:
            why_prefetch = f"lowered from {prefetch} by shm: {shm_text}"
        return fit_w, fit_p, why_workers, why_prefetch
    if workers and shm_free is None:
        why_workers += "; no /dev/shm to bound (not Linux)"
    elif workers and not bbytes:
        why_workers += "; shm not checked: batch size in bytes unknown (pass dataset= or sample_bytes=)"
    return workers, prefetch, why_workers, why_prefetch


def _worker_args(kw: dict, reasons: dict[str, str], workers: int, prefetch: int, why_prefetch: str, loader: dict,
                 system: str, python: tuple[int, int]) -> None:
    """The arguments DataLoader takes only with workers: prefetch, persistence, the start method."""
    if not workers:
        reasons["prefetch_factor"] = "not passed: DataLoader refuses it without workers"
        reasons["persistent_workers"] = "not passed: DataLoader refuses it without workers"
        return
    kw["prefetch_factor"] = prefetch
    reasons["prefetch_factor"] = why_prefetch
    persistent = loader.get("persistent_workers", True)
    kw["persistent_workers"] = bool(persistent)
    reasons["persistent_workers"] = ("workers survive between epochs (no re-start, no dataset re-copy)"
                                     if persistent else "the profile turns it off")
    method, why_method = start_method(system, python)
    wanted = loader.get("start_method")
    if wanted and system == "Linux" and method is None and wanted != "fork":
        method, why_method = wanted, f"the profile's start_method {wanted}"
    if method:
        kw["multiprocessing_context"] = method
    reasons["multiprocessing_context"] = why_method


def _pinning(kw: dict, reasons: dict[str, str], budget: dict, loader: dict, cuda: bool, bbytes: int | None,
             workers: int, prefetch: int, pin_budget) -> None:
    """pin_memory where CUDA is (unless the profile turns it off), within WSL2's pinned-memory budget."""
    pin = cuda and loader.get("pin_memory", True) is not False
    kw["pin_memory"] = pin
    reasons["pin_memory"] = ("CUDA is available; pinned batches copy to the GPU asynchronously" if pin else
                             "the profile turns it off" if cuda else
                             "no CUDA device; pinning would only cost page-locked memory")
    if pin and bbytes and pin_budget == "read" and envmod.detect_wsl():
        block = pinned_block(bbytes)  # probed as the loader pins: one power-of-two block per batch, held together
        pin_budget = largest_pinned(pinned_need(bbytes, workers, prefetch), torch_pin_probe(block=block),
                                    grain=block)["budget_bytes"]
    if pin and bbytes and isinstance(pin_budget, int):  # WSL2 caps pinned memory (microsoft/WSL#14078)
        fit = fit_pinned(pin_budget, bbytes, workers, prefetch)
        budget["pin_budget_bytes"] = pin_budget
        kw["pin_memory"] = fit["pin_memory"]
        reasons["pin_memory"] = fit["reason"]
        if workers and fit["pin_memory"] and fit["prefetch_factor"] != prefetch:
            kw["prefetch_factor"] = fit["prefetch_factor"]
            reasons["prefetch_factor"] = f"lowered from {prefetch} by the pinned-memory budget: {fit['reason']}"

