"""Shared-memory sizing for multi-worker DataLoader loading (standard library only).

This is the one formula used by both ``envkit generate`` (its shm warning) and
the harness's ``shm`` check, so the two can never disagree.

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
DOCKER_DEFAULT_SHM = 64 * MIB


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
    """Format bytes the way ``docker run --shm-size`` reads them: ``8g``, ``512m``, ``4096``.

    >>> docker_size(8 * GIB), docker_size(512 * MIB), docker_size(1000)
    ('8g', '512m', '1000')
    """
    for unit, factor in (("g", GIB), ("m", MIB), ("k", 1024)):
        if n >= factor and n % factor == 0:
            return f"{n // factor}{unit}"
    return str(n)
