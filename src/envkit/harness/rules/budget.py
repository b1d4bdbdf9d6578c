"""The worker budget: which workers and prefetch the free /dev/shm allows, and what WSL2's pinned memory allows.

What is new here is fitting a loader into the /dev/shm that is *free now*
(:func:`shm_fit`); the rules it applies are the harness's own, imported, never
copied: the shm formula (:func:`.sizing.shm_required_bytes`) here, and on the
CPU side :func:`.sizing.cpu_fact` (quota rounded up) with
:func:`.sizing.plan_workers`, which the runtime companion and the adaptive
loader call directly.

The pinned side (:func:`fit_pinned`): WSL2 caps pinned memory in Docker at a limit no document states
(microsoft/WSL#14078 reports allocations above 500 MB failing, NVIDIA/nvidia-docker#1725 a block past about
1 GB); the budget measured there the way the loader pins, one power-of-two block per batch held
(:func:`pinned_need`, :func:`envkit.harness.probes.gpufacts.largest_pinned`), decides whether a loader keeps
pinning and with which prefetch.

Example:
    >>> shm_need(19267584, 2, 2) // 2**20
    115
    >>> shm_fit(free_bytes=64 * 2**20, batch_bytes=19267584, num_workers=2, prefetch_factor=2)
    (1, 1)
    >>> pinned_block(38_535_168) // 2**20, pinned_need(38_535_168, 4, 2) // 2**20  # a 64x3x224x224 float32 batch
    (64, 576)
"""

from __future__ import annotations

from .bytesize import human_bytes
from .sizing import shm_required_bytes

MB = 1000 * 1000
WSL_PIN_SOURCE = ("WSL2 caps pinned memory in Docker at a limit no document states: microsoft/WSL#14078 reports "
                  "allocations above 500 MB failing, NVIDIA/nvidia-docker#1725 about 1 GB")


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


def pinned_block(batch_bytes: int) -> int:
    """The pinned block torch allocates for a batch of ``batch_bytes``: the next power of two. Its caching host
    allocator rounds every request so (torch 2.13 include/ATen/core/CachingHostAllocator.h:300-309, with
    the default round threshold and cache size unlimited: c10/core/AllocatorConfig.h:361-363; torch 2.5.1's
    aten/src/ATen/core/CachingHostAllocator.h:129-131 rounds the same, unconditionally).

    >>> pinned_block(100), pinned_block(128), pinned_block(0)
    (128, 128, 0)
    """
    return 1 << (batch_bytes - 1).bit_length() if batch_bytes > 0 else 0


def pinned_batches(workers: int, prefetch: int) -> int:
    """Batches a pinning DataLoader holds pinned at once: every prefetched batch plus the one in use."""
    return max(1, workers * prefetch) + 1


def pinned_need(batch_bytes: int, workers: int, prefetch: int) -> int:
    """Bytes a pinning DataLoader holds pinned at once: one power-of-two block per batch held
    (:func:`pinned_block`; the pin thread pins each batch's tensor on its own).

    >>> pinned_need(100, 4, 2), pinned_need(100, 0, 2)
    (1152, 256)
    """
    return pinned_block(batch_bytes) * pinned_batches(workers, prefetch)


def fit_pinned(budget: int, batch_bytes: int, workers: int, prefetch: int) -> dict:
    """``{"pin_memory", "prefetch_factor", "reason"}``: keep pinning with a prefetch that fits the budget, or stop.

    >>> fit_pinned(500 * MB, 60 * MB, 4, 2)["prefetch_factor"]
    1
    >>> fit_pinned(100 * MB, 60 * MB, 4, 2)["pin_memory"]
    False
    """
    need = pinned_need(batch_bytes, workers, prefetch)
    base = (f"the largest pinned allocation that succeeds here is {human_bytes(budget)} "
            f"({WSL_PIN_SOURCE})")
    if budget >= need:
        return {"pin_memory": True, "prefetch_factor": prefetch,
                "reason": f"{base}; the loader pins {human_bytes(need)} ({_need_text(batch_bytes, workers, prefetch)})"}
    for p in range(prefetch - 1, 0, -1):
        if workers and budget >= pinned_need(batch_bytes, workers, p):
            return {"pin_memory": True, "prefetch_factor": p,
                    "reason": f"{base}: prefetch_factor lowered from {prefetch} to {p} so the pinned batches "
                              f"({_need_text(batch_bytes, workers, p)} = "
                              f"{human_bytes(pinned_need(batch_bytes, workers, p))}) fit"}
    return {"pin_memory": False, "prefetch_factor": prefetch,
            "reason": f"{base}, less than {human_bytes(pinned_need(batch_bytes, workers, 1 if workers else prefetch))} "
                      f"({_need_text(batch_bytes, workers, 1 if workers else prefetch)}): pin_memory off, batches "
                      "copy from pageable memory"}


def _need_text(batch_bytes: int, workers: int, prefetch: int) -> str:
    held = max(1, workers * prefetch)
    how = f"{workers} workers x prefetch {prefetch}" if workers else "main-process loading"
    return (f"{held} prefetched batch(es) of {human_bytes(batch_bytes)} ({how}) + 1 in use, each pinned as a "
            f"{human_bytes(pinned_block(batch_bytes))} block (torch rounds to a power of two)")
