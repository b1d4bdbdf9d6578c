"""Expectation input (``envkit_expect.json``): validation and resolution of loader settings.

The expectation is what the profile promised; every key except ``envkit_expect``
is optional and ``null`` means "not asserted". :func:`resolve_loader` turns the
``loader`` section plus CLI overrides into concrete DataLoader settings.

Example:
    >>> s = resolve_loader({"envkit_expect": 1, "loader": {"num_workers": 3}}, usable=8)
    >>> s["num_workers"], s["batch_size"], s["sample_shape"]
    (3, 32, [3, 224, 224])
"""

from __future__ import annotations

import json
from typing import Any

from .boundedio import read_bounded
from .errors import FileUnreadable, UsageError
from .sizing import DTYPE_ITEMSIZE, MAX_RANKS, MAX_WORKERS, cpu_limit, size_node
from .defaults import LOADER_DEFAULTS
from .synthetic import sample_cost_problem


# The expectation format's version: defined here, on the consumer's side, and imported by
# the producer (envkit.plan.expectfile), so the two cannot drift apart.
VERSION = 1

DEFAULT_LOADER = LOADER_DEFAULTS  # the profile's defaults: with no expectation the harness runs what a bare profile plans

ExpectError = UsageError  # the expectation-specific spelling


EXPECT_MAX = 1024 * 1024  # an expectation is a few hundred bytes (README, "Limits")


def _read_bounded(path) -> bytes:
    """A regular file of at most EXPECT_MAX bytes, opened without blocking (a FIFO or /dev/zero cannot hang)."""
    return read_bounded(path, EXPECT_MAX, "an expectation JSON file (envkit_expect.json)", ExpectError, FileUnreadable)


def load_expect(path) -> dict:
    """Read and validate an expectation JSON file; raise :class:`ExpectError` with one clear line."""
    raw = _read_bounded(path)
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ExpectError(f"{path} is not UTF-8 text (byte offset {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ExpectError(f"{path} is not valid JSON: {exc}") from None
    except RecursionError:
        raise ExpectError(f"{path}: JSON nested too deeply; an expectation is at most a few levels deep") from None
    try:
        validate_expect(doc)
    except ExpectError as exc:
        raise ExpectError(f"{path}: {exc}") from None
    return doc


def _int(section: str, key: str, value, minimum: int) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < minimum):
        raise ExpectError(f"{section}.{key} must be an integer >= {minimum} or null, got {value!r}")


def validate_expect(doc) -> None:
    """Check types of the keys the harness reads; unknown keys are ignored (forward compatible)."""
    if not isinstance(doc, dict) or doc.get("envkit_expect") != VERSION:
        raise ExpectError(f'expectation must be a JSON object with "envkit_expect": {VERSION}')
    loader = doc.get("loader") or {}
    run = doc.get("run") or {}
    if not isinstance(loader, dict) or not isinstance(run, dict):
        raise ExpectError("expectation 'loader' and 'run' must be objects")
    nw = loader.get("num_workers")
    if not (isinstance(nw, str) and nw == "auto"):
        _int("loader", "num_workers", nw, 0)
        if nw is not None and nw > MAX_WORKERS:
            raise ExpectError(f"loader.num_workers must be at most {MAX_WORKERS}, got {nw}")
    _int("loader", "batch_size", loader.get("batch_size"), 1)
    _int("loader", "prefetch_factor", loader.get("prefetch_factor"), 1)
    shape = loader.get("sample_shape")
    if shape is not None and (not isinstance(shape, list) or not shape
                              or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape)):
        raise ExpectError(f"loader.sample_shape must be a non-empty list of positive integers, got {shape!r}")
    dtype = loader.get("dtype")
    if dtype is not None and (not isinstance(dtype, str) or dtype not in DTYPE_ITEMSIZE):
        raise ExpectError(f"loader.dtype {dtype!r} is not one of {sorted(DTYPE_ITEMSIZE)}")
    method = loader.get("start_method")
    if method is not None and (not isinstance(method, str) or method not in ("fork", "spawn", "forkserver")):
        raise ExpectError(f"loader.start_method must be fork, spawn or forkserver, got {method!r}")
    if sample_cost_problem(loader.get("sample_cost_ms")):
        raise ExpectError(f"loader.sample_cost_ms {sample_cost_problem(loader['sample_cost_ms'])}")
    for key in ("pin_memory", "persistent_workers"):
        if loader.get(key) is not None and not isinstance(loader[key], bool):
            raise ExpectError(f"loader.{key} must be true, false or null")
    for key in ("shm_size_bytes", "cpuset_count", "memory_bytes"):
        _int("run", key, run.get(key), 0)
    _int("run", "ranks_per_node", run.get("ranks_per_node"), 1)
    if (run.get("ranks_per_node") or 0) > MAX_RANKS:
        raise ExpectError(f"run.ranks_per_node must be at most {MAX_RANKS}, got {run['ranks_per_node']}")
    if run.get("nccl") is not None and not isinstance(run["nccl"], bool):
        raise ExpectError("run.nccl must be true, false or null")
    facts = run.get("facts")
    if facts is not None and (not isinstance(facts, dict)
                              or not all(isinstance(k, str) and isinstance(v, str) for k, v in facts.items())):
        raise ExpectError("run.facts must be an object of strings (where each planned value came from)")
    cpus = run.get("cpus")
    if cpus is not None and (isinstance(cpus, bool) or not isinstance(cpus, (int, float)) or cpus <= 0):
        raise ExpectError(f"run.cpus must be a positive number or null, got {cpus!r}")
    gpus = run.get("gpus")
    if not (gpus is None or (isinstance(gpus, str) and gpus in ("all", "none"))
            or (isinstance(gpus, int) and not isinstance(gpus, bool) and gpus >= 0)
            or (isinstance(gpus, list) and all(isinstance(g, (int, str)) for g in gpus))):
        raise ExpectError(f'run.gpus must be "all", "none", a count or a list of ids, got {gpus!r}')
    ulimits = run.get("ulimits") or {}
    if not isinstance(ulimits, dict):
        raise ExpectError("run.ulimits must be an object")
    for name, lim in ulimits.items():
        if lim is None:
            continue
        if not isinstance(lim, dict):
            raise ExpectError(f"run.ulimits.{name} must be an object with soft/hard")
        for k in ("soft", "hard"):
            _int("run.ulimits." + name, k, lim.get(k), -1)


def resolve_loader(expect: dict | None, *, usable: int, quota: float | None = None, num_workers=None,
                   batch_size=None, dataset: str | None = None, ranks: int | None = None) -> dict:
    """Concrete loader settings: defaults <- expectation's ``loader`` <- CLI overrides.

    The node is resolved by the one rule (:func:`.sizing.size_node`) over this machine's facts:
    ``usable`` is the affinity mask's size and ``quota`` the cgroup CPU quota (None: none); the
    ranks are ``ranks`` (``--ranks``), else the expectation's ``run.ranks_per_node``, else 1; the
    /dev/shm is the one the profile planned for the container (``run.shm_size_bytes``), else
    unknown here. ``num_workers`` is per rank; ``shm_need_bytes`` and ``memory_need_bytes`` are
    the node's (every rank's loader at once), ``rank_shm_need_bytes`` one rank's, and ``node``
    the ``loader`` object every command prints.
    """
    loader: dict[str, Any] = dict(DEFAULT_LOADER)
    for key, value in ((expect or {}).get("loader") or {}).items():
        if key in loader and value is not None:
            loader[key] = value
    if num_workers is not None:
        if isinstance(num_workers, int) and not 0 <= num_workers <= MAX_WORKERS:
            raise ExpectError(f"--num-workers must be from 0 to {MAX_WORKERS} (the profile's bound: each worker is a "
                              f"process with torch imported), got {num_workers}")
        loader["num_workers"] = num_workers
    if batch_size is not None:
        if batch_size < 1:
            raise ExpectError("--batch-size must be >= 1")
        loader["batch_size"] = batch_size
    if ranks is not None and not 1 <= ranks <= MAX_RANKS:
        raise ExpectError(f"--ranks must be from 1 to {MAX_RANKS}, got {ranks}")
    import multiprocessing  # here, not at the top: generate imports this module and never needs it

    asked = ((expect or {}).get("loader") or {}).get("start_method")
    if loader["start_method"] is None or (asked is None and loader["start_method"]
                                          not in multiprocessing.get_all_start_methods()):
        # The platform default (Linux fork before 3.14, forkserver from 3.14, spawn elsewhere): also where
        # the default method (fork) is not available and nothing asked for it.
        loader["start_method"] = (multiprocessing.get_start_method(allow_none=True)
                                  or multiprocessing.get_all_start_methods()[0])
    elif loader["start_method"] not in multiprocessing.get_all_start_methods():
        raise ExpectError(f"start method {loader['start_method']!r} is not available on this platform")
    loader["sample_shape"] = list(loader["sample_shape"])
    loader["dataset"] = dataset or "synthetic"
    run = (expect or {}).get("run") or {}
    node = size_node(num_workers=loader["num_workers"], batch_size=loader["batch_size"],
                     sample_shape=loader["sample_shape"], dtype=loader["dtype"],
                     prefetch_factor=loader["prefetch_factor"], ranks=_ranks(ranks, run),
                     cpus=_cpus(usable, quota, run), shm=_shm(run), nccl=bool(run.get("nccl")))
    loader["num_workers_requested"] = loader["num_workers"]
    loader["num_workers"] = node.workers
    loader["ranks_per_node"] = node.ranks
    loader["rank_shm_need_bytes"] = node.rank_need
    loader["shm_need_bytes"] = node.shm_need
    loader["memory_need_bytes"] = node.memory_need
    loader["node"] = node.as_json()
    return loader


def _ranks(ranks: int | None, run: dict) -> tuple[int, str]:
    if ranks is not None:
        return ranks, f"--ranks {ranks}"
    planned = run.get("ranks_per_node")
    if planned:
        return planned, (run.get("facts") or {}).get("ranks_per_node") or "the profile's plan"
    return 1, "one training process (none planned)"


def _cpus(usable: int, quota: float | None, run: dict) -> tuple[int | None, str]:
    """The fewest CPUs any fact allows: the profile's planned limits (a container started with the generated
    settings never gets more) first, then this machine's affinity and cgroup quota."""
    candidates = [(run.get("cpuset_count"), f"run.cpuset {run.get('cpuset')!r} ({run.get('cpuset_count')} CPUs)"),
                  (cpu_limit(quota=run.get("cpus")), f"run.cpus {run['cpus']:g}" if run.get("cpus") else ""),
                  (usable, f"this machine's {usable} usable CPUs (affinity)"),
                  (cpu_limit(quota=quota), f"this machine's cgroup quota {quota:g}" if quota else "")]
    known = [(n, why) for n, why in candidates if n]
    return min(known, key=lambda c: c[0]) if known else (None, "not known")


def _shm(run: dict) -> tuple[int | None, str]:
    if run.get("ipc") == "host":
        return None, "run.ipc: host (the host's /dev/shm, shared)"
    planned = run.get("shm_size_bytes")
    if planned is not None:
        return planned, (run.get("facts") or {}).get("shm_bytes") or "the profile's plan"
    return None, "not planned (no profile): this machine's /dev/shm, as measured"
