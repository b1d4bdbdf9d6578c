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


# One rank of several (the harness sets LOCAL_RANK per loader, as torchrun does) breaks; the others are healthy.
def _rank() -> int:
    return int(os.environ.get("LOCAL_RANK", "0"))


def rank1_hangs():
    return Hang() if _rank() == 1 else _Base(n=256)


class KillsItsLoader(_Base):
    """In a worker: SIGKILL the loader process (the worker's parent) that started it."""

    def __getitem__(self, idx):
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(3600)


def rank1_killed():
    return KillsItsLoader() if _rank() == 1 else _Base(n=256)


class Escapes(_Base):
    """Each worker starts a sleeper in a NEW SESSION (setsid): outside its loader's process group."""

    def __getitem__(self, idx):
        import subprocess
        import sys

        if not getattr(self, "_started", False):
            self._started = True
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return super().__getitem__(idx)


def rank1_escapes():
    return Escapes(n=256) if _rank() == 1 else _Base(n=256)
