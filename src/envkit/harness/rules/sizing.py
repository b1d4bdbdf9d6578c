"""The sizing rules, each defined once (standard library only).

Every number envkit plans with lives here, and generate's advice
(:mod:`envkit.advice`), ``envkit doctor`` and the in-container harness all import
it, so they can never disagree (``tests/advice/test_rules_matrix.py`` feeds one
matrix of hosts and profiles through all three):

- :func:`cpu_fact` (the CPUs, from every count and quota known, and which one said so) and
  :func:`plan_workers`: how many DataLoader workers ``auto`` means;
- :func:`shm_fact`: the container's /dev/shm, and where that comes from;
- :func:`shm_required_bytes`: the /dev/shm the loader needs (below);
- :data:`PROCESS_RSS` and :func:`memory_need_bytes`: the memory the container needs;
- :data:`DOCKER_DEFAULT_SHM`: what a container gets without ``--shm-size``.

How a DataLoader uses /dev/shm: each worker collates a batch straight into a
shared-memory segment (torch's ``default_collate`` allocates shared storage when
it runs in a worker) and hands it to the main process through the result
queue. The loader keeps at most ``num_workers * prefetch_factor`` batches in
flight (torch/utils/data/dataloader.py, ``_MultiProcessingDataLoaderIter``), and
the batch the training step is using stays in shm until it is freed (or copied
out by the pin-memory thread). So the peak is::

    batch_bytes * (num_workers * prefetch_factor + 1) * 1.25 headroom

where ``batch_bytes = batch_size * prod(sample_shape) * itemsize(dtype)``. The
25 % headroom covers labels, allocator rounding and other shm users (NCCL,
``torch.multiprocessing`` queues). With ``num_workers == 0`` nothing goes
through shm and the need is 0.

Example:
    >>> shm_required_bytes(batch_size=128, sample_shape=(3, 224, 224),
    ...                    dtype="float32", num_workers=4, prefetch_factor=2)
    867172352
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypedDict

from ..errors import UsageError

DTYPE_ITEMSIZE = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1,
}
HEADROOM = 1.25
MIB = 1024 * 1024
GIB = 1024 * MIB
DOCKER_DEFAULT_SHM = 64 * MIB  # Docker's /dev/shm when --shm-size is absent
# The most DataLoader workers a profile or `envkit harness --num-workers` may ask for: each is a full
# Python process with torch imported (PROCESS_RSS), so more would exhaust any host's memory or PIDs.
MAX_WORKERS = 256
# Training processes (ranks) per node: each is a process with torch imported and its own workers; GPUs
# per node stop at 64 (cluster.gpus_per_node), and a node with more ranks than that is no real node.
MAX_RANKS = 64
# Batches in flight per worker (torch's prefetch_factor): torch sets no ceiling; more than 256 per worker
# holds no real loader's batches, and with the other ceilings it keeps every derived size within MAX_BYTES.
MAX_PREFETCH = 256
MAX_BATCH_BYTES = 2**40  # one batch over 1 TiB is a typo in batch_size or sample_shape
# The largest byte count envkit writes anywhere (--shm-size, --memory, compose, a Kubernetes quantity):
# what Docker stores, an int64, as for a size the profile writes (envkit.profile.dockerref.check_size).
MAX_BYTES = 2**63 - 1
AUTO_WORKERS_CAP = 8  # beyond 8 workers a synthetic/typical loader stops scaling; more only costs memory
# Resident memory of one Python process with torch imported that has produced batches: the
# training process and each DataLoader worker count once. Measured 2026-12-01 with
# benchmarks/bench_worker_rss.py (torch 2.13.0+cpu, Python 3.11.7, x86_64, 2 workers, batches of
# 32x3x64x64 float32): the main process after `import torch` 219 MiB VmRSS; a spawn-started
# worker 228-230 MiB VmRSS (Pss 171-173 MiB); a fork-started worker 170 MiB VmRSS but only
# 64 MiB Pss (it shares torch's pages with its parent). The worst case (spawn, ~230 MiB) is
# rounded up to 512 MiB: a real dataset keeps its own state (file handles, decoders, indices)
# in every worker.
PROCESS_RSS = 512 * MIB


def cpu_limit(*, affinity: int | None = None, cpuset: int | None = None, quota: float | None = None) -> int | None:
    """CPUs a container's processes can keep busy at once; ``None`` when nothing known limits them.

    The smallest of the affinity mask's size, the cpuset's size and the CFS quota
    (``--cpus``, cgroup ``cpu.max``) rounded up: a quota of 1.5 CPUs still runs two
    processes at once, just not both all the time.

    >>> cpu_limit(affinity=16), cpu_limit(cpuset=8, quota=2.5), cpu_limit()
    (16, 3, None)
    """
    found = [n for n in (affinity, cpuset, math.ceil(quota) if quota else None) if n]
    return min(found) if found else None


CpuFactor = tuple[str, "int | float | None", str]  # (kind: "count" or "quota", value, where it came from)


def cpu_fact(*facts: CpuFactor, unknown: str = "not known") -> tuple[int | None, str]:
    """The CPUs the node's processes can keep busy at once, and which fact says so: the smallest known wins.

    The one place the CPU fact is decided (generate's plan, ``envkit doctor``, the harness and the runtime
    companion all call it). Each fact is ``(kind, value, words)``: kind ``"count"`` (an affinity mask's
    size, a cpuset's, a VM's processors) or ``"quota"`` (a CFS quota in CPUs: ``--cpus``, cgroup
    ``cpu.max``), which counts rounded up (:func:`cpu_limit`). An unknown value (None or 0) is left out;
    of equal counts the first wins, so a caller names the profile's own limits first. ``unknown``: the
    words when nothing is known (the count is then None).

    >>> cpu_fact(("count", 8, "run.cpuset"), ("quota", 2.5, "run.cpus 2.5"), ("count", 16, "affinity"))
    (3, 'run.cpus 2.5')
    >>> cpu_fact(("count", 4, "run.cpuset"), ("count", 4, "affinity")), cpu_fact(("quota", None, ""))
    ((4, 'run.cpuset'), (None, 'not known'))
    """
    counts = ((cpu_limit(quota=value) if kind == "quota" else cpu_limit(affinity=int(value) if value else None), words)
              for kind, value, words in facts)
    known = [(n, words) for n, words in counts if n]
    return min(known, key=lambda c: c[0]) if known else (None, unknown)


def plan_workers(requested, cpus: int | None, ranks: int = 1) -> int:
    """``num_workers`` per training process as planned: an integer stays; ``"auto"`` shares the
    CPUs among the ``ranks`` training processes of a node (torchrun starts one DataLoader per
    rank) and keeps one CPU of each share for its training loop: ``floor(cpus / ranks) - 1``,
    at least 0 and at most :data:`AUTO_WORKERS_CAP`. With no known CPU limit (``cpus`` None:
    the profile pins nothing and the host is not known) ``auto`` plans for the cap, the most
    the harness can run on any host.

    >>> plan_workers("auto", 16), plan_workers("auto", 2), plan_workers("auto", None), plan_workers(3, 2)
    (8, 1, 8, 3)
    >>> plan_workers("auto", 16, ranks=8), plan_workers("auto", 1), plan_workers("auto", 32, ranks=8)
    (1, 0, 3)
    """
    if requested != "auto":
        return int(requested)
    if cpus is None:
        return AUTO_WORKERS_CAP
    return max(0, min(cpus // max(1, ranks) - 1, AUTO_WORKERS_CAP))


def contention_remedy(requested, cpus: int, ranks: int) -> tuple[str, str]:
    """What ends "R x (W + 1) processes on C CPUs", as (the profile key to change, the remedy): followed, it fits
    the CPUs. ``auto``'s workers where they fit and differ from ``requested``; where even no workers
    over-subscribe the CPUs (more ranks than CPUs), fewer training processes per node or more CPUs.

    >>> contention_remedy(8, 16, 8)
    ('loader.num_workers', 'use num_workers: auto (1 per training process) or give the node more CPUs')
    >>> contention_remedy(0, 2, 8)[1]
    'run at most 2 training processes per node (cluster.procs_per_node) or give the node at least 8 CPUs'
    >>> contention_remedy(3, 1, 8)[1]
    'run at most 1 training process per node (cluster.procs_per_node) with num_workers: auto or give the node at least 32 CPUs'
    """
    auto = plan_workers("auto", cpus, ranks)
    if ranks * (auto + 1) <= cpus and auto != requested:
        return "loader.num_workers", f"use num_workers: auto ({auto} per training process) or give the node more CPUs"
    per_rank = plan_workers(requested, cpus, ranks) + 1  # the processes each rank brings with these workers
    fit = cpus // per_rank
    most = (f"{fit} training process{'es' if fit != 1 else ''} per node (cluster.procs_per_node)" if fit else
            f"{cpus} training process{'es' if cpus != 1 else ''} per node (cluster.procs_per_node) with num_workers: auto")
    return "cluster.procs_per_node", f"run at most {most} or give the node at least {ranks * per_rank} CPUs"


def memory_need_bytes(*, shm_need: int, workers: int, shm_size: int | None = None, ranks: int = 1) -> int:
    """Memory the container needs: the /dev/shm pages the loaders write plus :data:`PROCESS_RSS`
    for each of the ``ranks`` training processes and each of their workers.

    The pages counted are the loader's ``shm_need``, but never more than the container's own
    /dev/shm (``shm_size``: the decided size, Docker's 64 MiB default included; None under
    ``ipc: host``, where the host's /dev/shm has no container-sized cap). They count whatever
    ``ipc`` says: tmpfs pages are charged to the memory cgroup of the process that writes
    them (a worker in the container), and on WSL2 they live in the VM's RAM.

    >>> memory_need_bytes(shm_need=GIB, workers=3) == GIB + 4 * PROCESS_RSS
    True
    >>> memory_need_bytes(shm_need=GIB, workers=3, shm_size=DOCKER_DEFAULT_SHM) == 64 * MIB + 4 * PROCESS_RSS
    True
    """
    shm = shm_need if shm_size is None else min(shm_need, shm_size)
    return shm + max(1, ranks) * (workers + 1) * PROCESS_RSS


def batch_bytes(batch_size: int, sample_shape, dtype: str) -> int:
    """Bytes of one collated batch: ``batch_size * prod(shape) * itemsize``."""
    if dtype not in DTYPE_ITEMSIZE:
        raise ValueError(f"unknown dtype {dtype!r}; expected one of {sorted(DTYPE_ITEMSIZE)}")
    return batch_size * math.prod(sample_shape) * DTYPE_ITEMSIZE[dtype]


def shm_required_bytes(*, batch_size: int, sample_shape, dtype: str,
                       num_workers: int, prefetch_factor: int) -> int:
    """Peak /dev/shm bytes the loader needs, rounded up to a whole MiB (0 without workers)."""
    if num_workers <= 0:
        return 0
    in_flight = num_workers * prefetch_factor + 1
    # HEADROOM (1.25) as 5/4 in whole numbers: a float overflows where a huge workload should be refused by size.
    need = -(-batch_bytes(batch_size, sample_shape, dtype) * in_flight * 5 // 4)
    return _round_up(need, MIB)


def _round_up(n: int, step: int) -> int:
    """``n`` rounded up to a multiple of ``step``, in whole numbers (no float to overflow or round)."""
    return -(-n // step) * step


def recommended_shm_bytes(required: int) -> int:
    """A round size to configure: ``required`` rounded up to 256 MiB (below 1 GiB) or a whole GiB.

    >>> recommended_shm_bytes(867172352) == 1024 * MIB
    True
    """
    if required <= 0:
        return DOCKER_DEFAULT_SHM
    return _round_up(required, 256 * MIB if required < GIB else GIB)


def docker_size(n: int) -> str:
    """The shortest exact Docker spelling of ``n`` bytes (``--shm-size``, ``--memory``, compose):
    ``8g``, ``1536m``, ``1000``. The one size formatter for Docker (``envkit.units.format_size``).

    >>> docker_size(8 * GIB), docker_size(512 * MIB), docker_size(1536 * MIB), docker_size(1000)
    ('8g', '512m', '1536m', '1000')
    """
    for unit, factor in (("p", 1024 * 1024 * GIB), ("t", 1024 * GIB), ("g", GIB), ("m", MIB), ("k", 1024)):
        if n >= factor and n % factor == 0:
            return f"{n // factor}{unit}"
    return str(n)


# NCCL's own /dev/shm per training process; docs/profile.md cites each constant in NVIDIA/nccl v2.30.7-1.
# - Within a node, when its SHM transport carries the traffic (no P2P: PCIe across sockets, or no cuMem host
#   memory, which Docker's default seccomp refuses: src/misc/cudawrap.cc:71-72 says to add SYS_NICE): one
#   receive segment per connection holds the LL, LL128 and SIMPLE buffers (src/init.cc:810-814).
# - The proxy-ops pool, ncclProxyOpsPool, mapped from /dev/shm by a rank's first connection whose transport
#   runs proxy progress (src/proxy.cc:1206-1219, 1444-1455, 1526-1528; src/include/proxy.h:227-235): the
#   network transport always (src/transport/net.cc:529-611), so every rank of a multi-node job, one rank per
#   node included; within a node P2P over CE memcpy and a profiler plugin do too (SHM never:
#   src/transport/shm.cc:467-472), and a single 8-GPU machine mapped it in pytorch/torchtitan#853, so a node of
#   several ranks is planned with it as well.
NCCL_CONN_BYTES = 9_637_888  # "nccl-shm-recv-... (size 9637888)", as NVIDIA/nccl#342 shows
NCCL_PROXY_POOL_BYTES = 34_210_176
# Collective channels (ring and tree neighbours: 2 connections per channel). NCCL picks the count from its
# topology search and may double it (up to MAXCHANNELS, 64): 4 is envkit's planning figure for the PCIe nodes
# whose traffic goes through SHM (INFO logs of such nodes show 2 to 4), not a bound NCCL promises.
NCCL_CHANNELS = 4


def nccl_shm_per_rank(ranks: int, nodes: int = 1) -> int:
    """NCCL's /dev/shm for one of ``ranks`` processes on each of ``nodes``, rounded up to a MiB: with several
    ranks on the node, 2 SHM connections per collective channel and 2 per peer (:data:`NCCL_CHANNELS`); the
    proxy-ops pool wherever a rank talks to another (several ranks, or several nodes).

    >>> nccl_shm_per_rank(1), nccl_shm_per_rank(2) // MIB, nccl_shm_per_rank(8) // MIB
    (0, 125, 235)
    >>> nccl_shm_per_rank(1, nodes=2) // MIB, nccl_shm_per_rank(8, nodes=2) // MIB
    (33, 235)
    """
    conns = NCCL_CONN_BYTES * (2 * NCCL_CHANNELS + 2 * (ranks - 1)) if ranks > 1 else 0
    pool = NCCL_PROXY_POOL_BYTES if nodes > 1 or ranks > 1 else 0
    return _round_up(conns + pool, MIB)


def check_bytes(n: int, what: str) -> int:
    """``n`` if it is a byte count envkit may write (at most :data:`MAX_BYTES`), else a UsageError (exit 2) naming ``what``.

    >>> check_bytes(2**62, "the need")
    4611686018427387904
    >>> check_bytes(2**63, "the need")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    envkit.harness.errors.UsageError: the need would be 9223372036854775808 bytes, more than the ... Docker can store; ...
    """
    if n > MAX_BYTES:
        raise UsageError(f"{what} would be {n} bytes, more than the {MAX_BYTES} (8 EiB) Docker can store; "
                         "check loader.batch_size, sample_shape, num_workers and prefetch_factor")
    return n


def workload_problem(batch_size: int, sample_shape, dtype: str, prefetch_factor: int) -> str | None:
    """Why a loader workload is beyond every machine (one batch over 1 TiB, over 256 batches per worker), or None.

    >>> workload_problem(64, (3, 224, 224), "float32", 2) is None
    True
    >>> workload_problem(8, (3,), "float32", 10**6)
    'prefetch_factor is 1000000; at most 256 batches in flight per worker'
    """
    if prefetch_factor > MAX_PREFETCH:
        return f"prefetch_factor is {prefetch_factor}; at most {MAX_PREFETCH} batches in flight per worker"
    size = batch_bytes(batch_size, sample_shape, dtype)
    if size > MAX_BATCH_BYTES:
        return f"one batch would be {size} bytes (over 1 TiB); check batch_size and sample_shape"
    return None


SIZED = "sized"  # size_node's ``shm``: the container's /dev/shm is sized from the need
SHM_HOST = "run.ipc: host (the host's /dev/shm, shared)"


def shm_fact(ipc: str | None, size: int | None, source: str, *, sized: bool) -> tuple[int | None | str, str]:
    """The container's /dev/shm and where it comes from: the one place that fact is decided.

    None under ``ipc: host`` (the host's, shared, with no container-sized cap); else ``size``, named by
    ``source`` (the profile's ``run.shm_size``, or the size the plan decided); else, where the size is
    decided from the need (``sized``: generate's plan), :data:`SIZED`; else (the harness without a
    profile) None: this machine's, as measured.

    >>> shm_fact("host", 2**30, "run.shm_size", sized=True)[0], shm_fact(None, None, "", sized=True)[0]
    (None, 'sized')
    >>> shm_fact("private", 2**30, "run.shm_size", sized=False)
    (1073741824, 'run.shm_size')
    """
    if ipc == "host":
        return None, SHM_HOST
    if size is not None:
        return size, source
    if sized:
        return SIZED, "sized by envkit from the need; run.shm_size not set"
    return None, "not planned (no profile): this machine's /dev/shm, as measured"


class LoaderJson(TypedDict):
    """The ``loader`` object of every ``--json``: its schema is envkit.jsonout's LoaderDoc (same keys, checked)."""

    ranks_per_node: int
    workers_per_rank: int
    shm_need_bytes: int
    shm_bytes: int | None
    cpus: int | None
    facts: dict[str, str]


@dataclass(frozen=True)
class NodeLoader:
    """The loaders of one node, resolved: what every command states as its ``loader``.

    ``workers`` is per rank; ``rank_need`` is one rank's loader's /dev/shm need and ``shm_need``
    the node's (``ranks x rank_need`` plus NCCL's allowance); ``shm_bytes`` what the container
    gets (None: the host's, under ``ipc: host``); ``facts`` names where each input came from.
    """

    ranks: int
    workers: int
    cpus: int | None
    rank_need: int
    nccl_bytes: int
    shm_need: int
    shm_bytes: int | None
    memory_need: int
    nccl: bool  # the ranks talk over NCCL (GPUs)
    facts: tuple[tuple[str, str], ...]

    def as_json(self) -> LoaderJson:
        """The ``loader`` object of every ``--json`` (docs/cli.md)."""
        return {"ranks_per_node": self.ranks, "workers_per_rank": self.workers, "shm_need_bytes": self.shm_need,
                "shm_bytes": self.shm_bytes, "cpus": self.cpus, "facts": dict(self.facts)}

    @property
    def processes(self) -> int:
        """Training processes and their workers on the node."""
        return self.ranks * (self.workers + 1)


def size_node(*, num_workers, batch_size: int, sample_shape, dtype: str, prefetch_factor: int,
              ranks: tuple[int, str], cpus: tuple[int | None, str], shm: tuple[int | None | str, str],
              nccl: bool, nodes: int = 1) -> NodeLoader:
    """Resolve one node's loaders from named facts: the one rule every command applies.

    ``ranks``, ``cpus`` and ``shm`` are ``(value, where it came from)``; ``shm``'s value is the
    container's /dev/shm in bytes, None for the host's (``ipc: host``), or :data:`SIZED` to size
    it from the need (:func:`recommended_shm_bytes`). ``nccl``: the ranks talk over NCCL (GPUs), which
    keeps :func:`nccl_shm_per_rank` of its own in /dev/shm with several ranks on the node or ``nodes`` > 1.

    >>> n = size_node(num_workers="auto", batch_size=64, sample_shape=(3, 224, 224), dtype="float32",
    ...               prefetch_factor=2, ranks=(8, "cluster.gpus_per_node"), cpus=(16, "run.cpus"),
    ...               shm=(SIZED, "sized"), nccl=True)
    >>> n.workers, n.rank_need // MIB, n.shm_need // MIB, n.shm_bytes // GIB
    (1, 138, 2984, 3)
    >>> one = size_node(num_workers=2, batch_size=8, sample_shape=(3, 64, 64), dtype="float32", prefetch_factor=2,
    ...                 ranks=(1, "cluster.gpus_per_node"), cpus=(8, "run.cpus"), shm=(SIZED, "sized"), nccl=True, nodes=2)
    >>> one.nccl_bytes // MIB  # one GPU per node: no peer on the node, but the network's proxy pool
    33
    """
    r = max(1, int(ranks[0]))
    workers = plan_workers(num_workers, cpus[0], r)
    rank_need = shm_required_bytes(batch_size=batch_size, sample_shape=sample_shape, dtype=dtype,
                                   num_workers=workers, prefetch_factor=prefetch_factor)
    nccl_bytes = nccl_shm_per_rank(r, nodes) * r if nccl else 0
    need = r * rank_need + nccl_bytes
    value, source = shm
    shm_bytes = recommended_shm_bytes(need) if value == SIZED else value
    assert shm_bytes is None or isinstance(shm_bytes, int)
    memory = memory_need_bytes(shm_need=need, workers=workers, shm_size=shm_bytes, ranks=r)
    for what, n in (("the node's /dev/shm need", need), ("its /dev/shm", shm_bytes or 0), ("its memory need", memory)):
        check_bytes(n, what)
    facts = (("cpus", cpus[1]), ("ranks_per_node", ranks[1]), ("shm_bytes", source))
    return NodeLoader(r, workers, cpus[0], rank_need, nccl_bytes, need, shm_bytes, memory, nccl, facts)
