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
from typing import Annotated, Any, Literal, TypedDict, Union

from .boundedio import read_bounded
from .errors import FileUnreadable, UsageError
from .rules.defaults import LOADER_DEFAULTS, sample_cost_problem
from .rules.network import FABRICS
from .rules.sizing import DTYPE_ITEMSIZE, MAX_PREFETCH, MAX_RANKS, MAX_WORKERS, LoaderJson, cpu_fact, shm_fact, size_node


# The expectation format's version: defined here, on the consumer's side, and imported by
# the producer (envkit.plan.expectfile), so the two cannot drift apart.
VERSION = 1

DEFAULT_LOADER = LOADER_DEFAULTS  # the profile's defaults: with no expectation the harness runs what a bare profile plans

ExpectError = UsageError  # the expectation-specific spelling


class ExpectLoader(TypedDict, total=False):
    """the profile's loader, as promised; a key absent or null is not asserted (the defaults apply)"""

    num_workers: int | Literal["auto"] | None
    batch_size: int | None
    sample_shape: list[int] | None
    dtype: str | None
    pin_memory: bool | None
    prefetch_factor: int | None
    persistent_workers: bool | None
    start_method: Literal["fork", "spawn", "forkserver"] | None
    sample_cost_ms: float | None


class Ulimit(TypedDict, total=False):
    soft: int | None
    hard: int | None


class ExpectNetwork(TypedDict, total=False):
    """the job's network as the profile names it (cluster.network)"""

    fabric: Annotated[str, "ethernet, infiniband or roce"]
    interface: Annotated[str | None, "NCCL_SOCKET_IFNAME's spelling: prefixes, ^ to exclude, = for exact"]
    hca: Annotated[str | None, "NCCL_IB_HCA"]


class ExpectRun(TypedDict, total=False):
    """the container's run settings as planned; a key absent or null is not asserted"""

    shm_size_bytes: Annotated[int | None, "the container's /dev/shm as planned"]
    ipc: str | None
    cpuset: str | None
    cpuset_count: int | None
    cpus: Annotated[float | None, "the CFS quota asked (--cpus)"]
    memory_bytes: int | None
    gpus: int | str | list[int | str] | None
    ulimits: dict[str, Ulimit | None] | None
    user: str | None
    numa: int | str | None
    ranks_per_node: Annotated[int | None, "training processes per node"]
    nodes: Annotated[int | None, "the job's nodes (present only for several)"]
    nccl: Annotated[bool | None, "the ranks talk over NCCL (GPUs)"]
    facts: Annotated[dict[str, str] | None, "where each planned value came from"]
    network: Annotated[ExpectNetwork | None, "cluster.network: the fabric and interface the nodes talk over"]


class _Expectation(TypedDict):
    envkit_expect: Literal[1]


class Expectation(_Expectation, total=False):
    """envkit_expect.json: what the profile promised (envkit generate writes it; unknown keys are ignored)"""

    profile: str | None
    loader: ExpectLoader | None
    run: ExpectRun | None


class LoaderSize(TypedDict):
    """what one loader's /dev/shm need is computed from"""

    batch_size: int
    sample_shape: list[int]
    dtype: str
    num_workers: int
    prefetch_factor: int


class LoaderNeed(LoaderSize, total=False):
    """a loader with the node's need already resolved (absent: one loader's, computed)"""

    ranks_per_node: int
    shm_need_bytes: int


class LoaderSettings(TypedDict):
    """the loader the harness ran: the defaults, the expectation's loader and the command line's overrides,
    the node resolved by the one rule"""

    num_workers: Annotated[int, "workers per training process, as resolved"]
    batch_size: int
    sample_shape: list[int]
    dtype: str
    pin_memory: bool
    prefetch_factor: int
    persistent_workers: bool
    start_method: str
    sample_cost_ms: float
    dataset: Annotated[str, "synthetic, or the --dataset MODULE:CALLABLE"]
    num_workers_requested: Annotated[int | Literal["auto"], "as asked, before the rule resolved auto"]
    ranks_per_node: int
    rank_shm_need_bytes: Annotated[int, "one rank's loader's /dev/shm need"]
    shm_need_bytes: Annotated[int, "the node's: every rank's loader at once, with NCCL's allowance"]
    memory_need_bytes: int
    node: LoaderJson


EXPECT_MAX = 1024 * 1024  # an expectation is a few hundred bytes (README, "Limits")


AnyLoader = Union[LoaderNeed, LoaderSettings]  # a check's loader: resolved by the harness, or sized by its caller


def _read_bounded(path) -> bytes:
    """A regular file of at most EXPECT_MAX bytes, opened without blocking (a FIFO or /dev/zero cannot hang)."""
    return read_bounded(path, EXPECT_MAX, "an expectation JSON file (envkit_expect.json)", ExpectError, FileUnreadable)


def load_expect(path) -> Expectation:
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
    _validate_loader(loader)
    _validate_run(run)


def _validate_loader(loader: dict) -> None:
    nw = loader.get("num_workers")
    if not (isinstance(nw, str) and nw == "auto"):
        _int("loader", "num_workers", nw, 0)
        if nw is not None and nw > MAX_WORKERS:
            raise ExpectError(f"loader.num_workers must be at most {MAX_WORKERS}, got {nw}")
    _int("loader", "batch_size", loader.get("batch_size"), 1)
    _int("loader", "prefetch_factor", loader.get("prefetch_factor"), 1)
    if (loader.get("prefetch_factor") or 0) > MAX_PREFETCH:
        raise ExpectError(f"loader.prefetch_factor must be at most {MAX_PREFETCH}, got {loader['prefetch_factor']}")
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


def _validate_run(run: dict) -> None:
    for key in ("shm_size_bytes", "cpuset_count", "memory_bytes"):
        _int("run", key, run.get(key), 0)
    _int("run", "ranks_per_node", run.get("ranks_per_node"), 1)
    _int("run", "nodes", run.get("nodes"), 1)
    if (run.get("ranks_per_node") or 0) > MAX_RANKS:
        raise ExpectError(f"run.ranks_per_node must be at most {MAX_RANKS}, got {run['ranks_per_node']}")
    if run.get("nccl") is not None and not isinstance(run["nccl"], bool):
        raise ExpectError("run.nccl must be true, false or null")
    network = run.get("network")
    if network is not None and (not isinstance(network, dict) or network.get("fabric") not in (None, *FABRICS)
                                or not all(isinstance(network.get(k), (str, type(None))) for k in ("interface", "hca"))):
        raise ExpectError(f"run.network must be an object with fabric one of {', '.join(FABRICS)} and interface/hca "
                          f"strings or null, got {str(network)[:120]}")
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


def resolve_loader(expect: Expectation | None, *, usable: int, quota: float | None = None, num_workers=None,
                   batch_size=None, dataset: str | None = None, ranks: int | None = None) -> LoaderSettings:
    """Concrete loader settings: defaults <- expectation's ``loader`` <- CLI overrides.

    The node is resolved by the one rule (:func:`envkit.harness.rules.sizing.size_node`) over this machine's facts:
    ``usable`` is the affinity mask's size and ``quota`` the cgroup CPU quota (None: none); the
    ranks are ``ranks`` (``--ranks``), else the expectation's ``run.ranks_per_node``, else 1; the
    /dev/shm is the one the profile planned for the container (``run.shm_size_bytes``), else
    unknown here. ``num_workers`` is per rank; ``shm_need_bytes`` and ``memory_need_bytes`` are
    the node's (every rank's loader at once), ``rank_shm_need_bytes`` one rank's, and ``node``
    the ``loader`` object every command prints.
    """
    promised: ExpectLoader = (expect.get("loader") if expect else None) or {}
    asked = _asked(promised, num_workers, batch_size)
    if ranks is not None and not 1 <= ranks <= MAX_RANKS:
        raise ExpectError(f"--ranks must be from 1 to {MAX_RANKS}, got {ranks}")
    method = _start_method(asked["start_method"], promised.get("start_method"))
    run: ExpectRun = (expect.get("run") if expect else None) or {}
    shape = list(asked["sample_shape"])
    node = size_node(num_workers=asked["num_workers"], batch_size=asked["batch_size"], sample_shape=shape,
                     dtype=asked["dtype"], prefetch_factor=asked["prefetch_factor"], ranks=_ranks(ranks, run),
                     cpus=_cpus(usable, quota, run), shm=planned_shm(run), nccl=bool(run.get("nccl")))
    return {"num_workers": node.workers, "batch_size": asked["batch_size"], "sample_shape": shape,
            "dtype": asked["dtype"], "pin_memory": asked["pin_memory"], "prefetch_factor": asked["prefetch_factor"],
            "persistent_workers": asked["persistent_workers"],
            "start_method": method,
            "sample_cost_ms": asked["sample_cost_ms"], "dataset": dataset or "synthetic",
            "num_workers_requested": asked["num_workers"], "ranks_per_node": node.ranks,
            "rank_shm_need_bytes": node.rank_need, "shm_need_bytes": node.shm_need,
            "memory_need_bytes": node.memory_need, "node": node.as_json()}


def _asked(promised: ExpectLoader, num_workers, batch_size) -> dict[str, Any]:
    """The defaults, then the expectation's loader (its known keys that are not null), then the overrides."""
    asked: dict[str, Any] = dict(DEFAULT_LOADER)
    asked.update((key, value) for key, value in promised.items() if key in asked and value is not None)
    if num_workers is not None:
        if isinstance(num_workers, int) and not 0 <= num_workers <= MAX_WORKERS:
            raise ExpectError(f"--num-workers must be from 0 to {MAX_WORKERS} (the profile's bound: each worker is a "
                              f"process with torch imported), got {num_workers}")
        asked["num_workers"] = num_workers
    if batch_size is not None:
        if batch_size < 1:
            raise ExpectError("--batch-size must be >= 1")
        asked["batch_size"] = batch_size
    return asked


def _start_method(method: str | None, promised: str | None) -> str:
    """The start method to run: the one asked, else the platform's default where the default one (fork) is not
    available and nothing asked for it (Linux fork before 3.14, forkserver from 3.14, spawn elsewhere)."""
    import multiprocessing  # here, not at the top: generate imports this module and never needs it (~16 ms)

    available = multiprocessing.get_all_start_methods()
    if method is None or (promised is None and method not in available):
        return multiprocessing.get_start_method(allow_none=True) or available[0]
    if method not in available:
        raise ExpectError(f"start method {method!r} is not available on this platform")
    return method


def _ranks(ranks: int | None, run: ExpectRun) -> tuple[int, str]:
    if ranks is not None:
        return ranks, f"--ranks {ranks}"
    planned = run.get("ranks_per_node")
    if planned:
        return planned, (run.get("facts") or {}).get("ranks_per_node") or "the profile's plan"
    return 1, "one training process (none planned)"


def _cpus(usable: int, quota: float | None, run: ExpectRun) -> tuple[int | None, str]:
    """The CPU fact: the profile's planned limits (a container started with the generated settings never
    gets more) first, then this machine's affinity and cgroup quota."""
    return cpu_fact(("count", run.get("cpuset_count"), f"run.cpuset {run.get('cpuset')!r} ({run.get('cpuset_count')} CPUs)"),
                    ("quota", run.get("cpus"), f"run.cpus {run['cpus']:g}" if run.get("cpus") else ""),
                    ("count", usable, f"this machine's {usable} usable CPUs (affinity)"),
                    ("quota", quota, f"this machine's cgroup quota {quota:g}" if quota else ""))


def planned_shm(run: ExpectRun) -> tuple[int | None, str]:
    """The shm fact of an expectation's ``run``: the container's planned /dev/shm (None: the host's under
    ``ipc: host``, or not planned) and where it came from."""
    size, source = shm_fact(run.get("ipc"), run.get("shm_size_bytes"),
                            (run.get("facts") or {}).get("shm_bytes") or "the profile's plan", sized=False)
    assert size is None or isinstance(size, int)  # sized=False: never SIZED
    return size, source
