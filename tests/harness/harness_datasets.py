"""Datasets that break in known ways; the harness imports them via --dataset MODULE:CALLABLE.

They live in a plain module (not a test file) so DataLoader workers under spawn
can import them by name.
"""

import os
import signal
import time

import torch


class _Base(torch.utils.data.Dataset):
    def __init__(self, n=64, shape=(3, 8, 8)):
        self.n, self.shape = n, shape

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        return torch.zeros(self.shape), idx


class Hang(_Base):
    def __getitem__(self, idx):
        time.sleep(3600)


class Segfault(_Base):
    def __getitem__(self, idx):
        os.kill(os.getpid(), signal.SIGSEGV)


class Raises(_Base):
    def __getitem__(self, idx):
        raise ValueError(f"corrupt sample {idx}: bad header")


class WithLambda(_Base):
    def __init__(self):
        super().__init__()
        self.transform = lambda x: x  # cannot be pickled to spawn workers

    def __getitem__(self, idx):
        return self.transform(torch.zeros(self.shape)), idx


def ok():
    return _Base(n=256)


def hang():
    return Hang()


def segfault():
    return Segfault()


def raises():
    return Raises()


def with_lambda():
    return WithLambda()


class Slow(_Base):
    """Every item costs 0.6 s: filling a 2 x 2 pipeline after the first batch takes longer than a 1 s timeout."""

    def __getitem__(self, idx):
        time.sleep(0.6)
        return torch.zeros(self.shape), idx


def slow():
    return Slow(n=64)
