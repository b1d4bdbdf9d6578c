"""The synthetic dataset used when no ``--dataset`` is given, each sample costing its CPU time.

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
loader's do. The default cost and its bound are the loader defaults' (:mod:`envkit.harness.rules.defaults`).

Example:
    >>> ds = SyntheticDataset(4, [3, 8, 8], "float32")
    >>> x, y = ds[1]
    >>> tuple(x.shape), int(y), len(ds)
    ((3, 8, 8), 1, 4)
"""

from __future__ import annotations

import time

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
