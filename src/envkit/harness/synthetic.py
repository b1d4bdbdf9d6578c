"""The synthetic dataset used when no ``--dataset`` is given.

It is a top-level class in a module of the package so that DataLoader workers
started with spawn/forkserver can unpickle it (also from inside the zipapp,
since multiprocessing passes ``sys.path`` to the children). ``__getitem__`` is
deliberately cheap so the loader check measures the pipeline (workers, shm,
collation, pinning), not the data.

Example:
    >>> ds = SyntheticDataset(4, [3, 8, 8], "float32")
    >>> x, y = ds[1]
    >>> tuple(x.shape), int(y), len(ds)
    ((3, 8, 8), 1, 4)
"""

from __future__ import annotations


class SyntheticDataset:
    """``length`` samples of ``torch.zeros(shape, dtype)`` with an int64 label ``idx % 10``."""

    def __init__(self, length: int, sample_shape, dtype: str = "float32"):
        self.length = int(length)
        self.sample_shape = tuple(int(d) for d in sample_shape)
        self.dtype = dtype

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, idx):
        import torch  # imported lazily so the package stays torch-free at import time
        if idx < 0 or idx >= self.length:
            raise IndexError(idx)
        return torch.zeros(self.sample_shape, dtype=getattr(torch, self.dtype)), torch.tensor(idx % 10)
