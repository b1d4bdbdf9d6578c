"""The sizing rules, each defined once (standard library only).

Every number envkit plans with lives here, and generate's advice
(:mod:`envkit.advice`), ``envkit doctor`` and the in-container harness all import
it, so they can never disagree (``tests/advice/test_rules_matrix.py`` feeds one
matrix of hosts and profiles through all three):

- :func:`cpu_limit` and :func:`plan_workers`: how many DataLoader workers ``auto`` means;
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


def plan_workers(requested, cpus: int | None) -> int:
    """``num_workers`` as planned: an integer stays; ``"auto"`` is ``cpus - 1`` (one CPU stays
    for the training loop), at least 1 and at most :data:`AUTO_WORKERS_CAP`. With no known
    CPU limit (``cpus`` None: the profile pins nothing and the host is not known) ``auto``
    plans for the cap, the most the harness can run on any host.

    >>> plan_workers("auto", 16), plan_workers("auto", 2), plan_workers("auto", None), plan_workers(3, 2)
    (8, 1, 8, 3)
    """
    if requested != "auto":
        return int(requested)
    if cpus is None:
        return AUTO_WORKERS_CAP
    return max(1, min(cpus - 1, AUTO_WORKERS_CAP))


def memory_need_bytes(*, shm_need: int, workers: int, shm_size: int | None = None) -> int:
    """Memory the container needs: the /dev/shm pages the loader writes plus :data:`PROCESS_RSS`
    for the training process and each worker.

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
    return shm + (workers + 1) * PROCESS_RSS


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
    need = batch_bytes(batch_size, sample_shape, dtype) * in_flight * HEADROOM
    return int(math.ceil(need / MIB) * MIB)


def recommended_shm_bytes(required: int) -> int:
    """A round size to configure: ``required`` rounded up to 256 MiB (below 1 GiB) or a whole GiB.

    >>> recommended_shm_bytes(867172352) == 1024 * MIB
    True
    """
    if required <= 0:
        return DOCKER_DEFAULT_SHM
    step = 256 * MIB if required < GIB else GIB
    return int(math.ceil(required / step) * step)


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
