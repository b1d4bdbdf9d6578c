"""The synthetic dataset used when no ``--dataset`` is given, and its per-sample CPU cost.

It is a top-level class in a module of the package so that DataLoader workers
started with spawn/forkserver can unpickle it (also from inside the zipapp,
since multiprocessing passes ``sys.path`` to the children).

``sample_cost_ms`` is the CPU time one sample costs, as a real dataset's decode
and augmentation do: ``__getitem__`` keeps its thread busy on the thread's CPU
clock (:func:`time.thread_time`) for that long. It burns CPU, it does not sleep:
a sleeping worker leaves its CPU free for the others, so sleeping samples would
make every extra worker look useful even where the CPUs have run out. The loader
check leaves it at 0 (it proves the pipeline: workers, shm, collation,
pinning); the ``--sweep`` uses it, so its samples/s depend on the CPUs as a real
loader's do. :data:`DEFAULT_SAMPLE_COST_MS` is what one ImageNet-sized JPEG
costs to decode and augment to 224 x 224 (``benchmarks/bench_sample_cost.py``).

Example:
    >>> ds = SyntheticDataset(4, [3, 8, 8], "float32")
    >>> x, y = ds[1]
    >>> tuple(x.shape), int(y), len(ds)
    ((3, 8, 8), 1, 4)
    >>> sample_cost_problem(-1), sample_cost_problem(2.5)
    ('must be a number of milliseconds from 0 to 10000, got -1', None)
"""

from __future__ import annotations

import math
import time

# The CPU time of one ImageNet-sized JPEG (500x375, 116 KB) decoded with Pillow and augmented as
# torchvision's ImageNet recipe does (RandomResizedCrop to 224x224, horizontal flip, to a float tensor,
# normalised), rounded: measured 2026-12-03 with benchmarks/bench_sample_cost.py (Pillow 13.0.0, torch
# 2.13.0+cpu, Python 3.11.7, Intel Xeon, one thread): median 2.8-3.0 ms, p90 3.1-3.3 ms of CPU per sample.
DEFAULT_SAMPLE_COST_MS = 3.0
MAX_SAMPLE_COST_MS = 10000.0  # 10 s of CPU a sample: beyond any decoder; a larger value is a unit mistake


def sample_cost_problem(value, shown: str | None = None) -> str | None:
    """Why ``value`` is no per-sample cost (None: it is one, or it is None, "not asserted").

    A cost is a finite number of milliseconds from 0 to :data:`MAX_SAMPLE_COST_MS`; a boolean is none.
    ``shown``: how the message quotes the value (default: its repr).
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= MAX_SAMPLE_COST_MS:
        return (f"must be a number of milliseconds from 0 to {MAX_SAMPLE_COST_MS:g}, "
                f"got {shown if shown is not None else repr(value)}")
    return None


def burn_cpu(ms: float) -> None:
    """Keep this thread busy for ``ms`` milliseconds of its own CPU time (not wall time: a thread
    that waits for a CPU burns none, so contention makes the cost take longer, as decoding does)."""
    if ms <= 0:
        return
    end = time.thread_time() + ms / 1000.0
    x = 0
    while time.thread_time() < end:
        for i in range(200):  # some arithmetic between clock reads, as a decoder's inner loop
            x ^= i * 2654435761
    return


class SyntheticDataset:
    """``length`` samples of ``torch.zeros(shape, dtype)`` with an int64 label ``idx % 10``,
    each costing ``sample_cost_ms`` of CPU (:func:`burn_cpu`)."""

    def __init__(self, length: int, sample_shape, dtype: str = "float32", sample_cost_ms: float = 0.0):
        self.length = int(length)
        self.sample_shape = tuple(int(d) for d in sample_shape)
        self.dtype = dtype
        self.sample_cost_ms = float(sample_cost_ms)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, idx):
        import torch  # imported lazily so the package stays torch-free at import time
        if idx < 0 or idx >= self.length:
            raise IndexError(idx)
        burn_cpu(self.sample_cost_ms)
        return torch.zeros(self.sample_shape, dtype=getattr(torch, self.dtype)), torch.tensor(idx % 10)
