"""Picklable datasets for the runtime tests (spawn workers import them by module path)."""

from __future__ import annotations

import time

import torch


class Tensors:
    """``n`` float32 samples of ``shape``; item i is filled with i."""

    def __init__(self, n: int = 64, shape=(3, 32, 32)):
        self.n, self.shape = n, shape

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.full(self.shape, float(i)), i


class Costly:
    """Each item sleeps ``delay.value`` seconds: a shared value the test changes between epochs."""

    def __init__(self, delay, n: int = 96):
        self.delay, self.n = delay, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.delay.value:
            time.sleep(self.delay.value)
        return torch.zeros(16), i
