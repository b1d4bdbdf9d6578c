"""The worker budget: how many DataLoader workers the CPUs and the free /dev/shm allow.

One function per rule, shared by the harness and the runtime companion
(``envkit_runtime.loader_kwargs``, the adaptive loader): the CPU rule is the
harness's ``auto`` rule (:func:`.expect.resolve_workers`) applied to the CPUs
this process may really use (affinity/cpuset, capped by the cgroup quota), and
the shm rule is the harness's formula (:func:`.sizing.shm_required_bytes`).

Example:
    >>> effective_cpus(16, 4.5), cpu_worker_budget(16, 4.5), cpu_worker_budget(2, None)
    (5, 4, 1)
    >>> shm_fit(free_bytes=64 * 2**20, batch_bytes=19267584, num_workers=2, prefetch_factor=2)
    (1, 1)
"""

from __future__ import annotations

import math

from .expect import resolve_workers
from .sizing import shm_required_bytes


def effective_cpus(affinity: int, quota_cpus: float | None) -> int:
    """CPUs the process can keep busy: the affinity mask, capped by the quota rounded up (as generate does)."""
    if quota_cpus:
        return max(1, min(affinity, math.ceil(quota_cpus)))
    return max(1, affinity)


def cpu_worker_budget(affinity: int, quota_cpus: float | None) -> int:
    """Most workers the CPUs allow: the harness's ``auto`` rule on :func:`effective_cpus`."""
    return resolve_workers("auto", effective_cpus(affinity, quota_cpus))


def max_workers(affinity: int, quota_cpus: float | None) -> int:
    """Most workers the harness's ``cpus`` check accepts for an explicit num_workers: one per CPU,
    within the affinity mask and the quota (it warns above either).

    >>> max_workers(2, None), max_workers(16, 4.5)
    (2, 4)
    """
    if quota_cpus:
        return max(1, min(affinity, math.floor(quota_cpus)))
    return max(1, affinity)


def shm_need(batch_bytes: int, num_workers: int, prefetch_factor: int) -> int:
    """The harness's shm formula for a batch of ``batch_bytes`` (any dtype: counted as bytes)."""
    return shm_required_bytes(batch_size=1, sample_shape=(max(0, int(batch_bytes)),), dtype="uint8",
                              num_workers=num_workers, prefetch_factor=prefetch_factor)


def shm_fit(*, free_bytes: int | None, batch_bytes: int, num_workers: int, prefetch_factor: int) -> tuple[int, int]:
    """The largest ``(workers, prefetch)`` not above the asked ones whose shm need fits ``free_bytes``.

    prefetch_factor gives way first (down to 1): it buys less than a worker does. ``(0, prefetch)``
    means even one worker with one batch in flight does not fit: load in the main process.
    ``free_bytes=None`` (no /dev/shm, e.g. Windows or macOS) bounds nothing.
    """
    if free_bytes is None or num_workers <= 0:
        return num_workers, prefetch_factor
    for workers in range(num_workers, 0, -1):
        for prefetch in range(prefetch_factor, 0, -1):
            if shm_need(batch_bytes, workers, prefetch) <= free_bytes:
                return workers, prefetch
    return 0, prefetch_factor
