"""The shm side of the worker budget: which workers and prefetch the free /dev/shm allows.

What is new here is fitting a loader into the /dev/shm that is *free now*
(:func:`shm_fit`); the rules it applies are the harness's own, imported, never
copied: the shm formula (:func:`.sizing.shm_required_bytes`) here, and on the
CPU side :func:`.sizing.cpu_limit` (quota rounded up) with
:func:`.sizing.plan_workers`, which the runtime companion and the adaptive
loader call directly.

Example:
    >>> shm_need(19267584, 2, 2) // 2**20
    115
    >>> shm_fit(free_bytes=64 * 2**20, batch_bytes=19267584, num_workers=2, prefetch_factor=2)
    (1, 1)
"""

from __future__ import annotations

from .sizing import shm_required_bytes


def shm_need(batch_bytes: int, num_workers: int, prefetch_factor: int) -> int:
    """:func:`.sizing.shm_required_bytes` for a batch known only as ``batch_bytes`` (counted as bytes)."""
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
