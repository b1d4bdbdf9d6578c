"""Datasets for the harness fault tests; imported by name (--dataset fault_datasets:NAME) in DataLoader workers."""

import os
import subprocess
import sys

import torch


def forty_two():
    return 42  # not a dataset at all


class BadLen(torch.utils.data.Dataset):
    def __len__(self):
        raise ArithmeticError("my __len__ is broken")

    def __getitem__(self, idx):
        return torch.zeros(2)


def bad_len():
    return BadLen()


class Escapes(torch.utils.data.Dataset):
    """Each worker starts a sleeper in a NEW SESSION (setsid): outside the harness's process group."""

    def __len__(self):
        return 64

    def __getitem__(self, idx):
        marker = os.environ.get("ENVKIT_FAULT_MARKER", "envkit-fault")
        if not getattr(self, "_started", False):
            self._started = True
            subprocess.Popen([sys.executable, "-c", f"import time; time.sleep(600)  # {marker}"],
                             start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        return torch.zeros(2)


def escapes():
    return Escapes()


class Hang(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, idx):
        import time

        time.sleep(3600)  # a loader that never answers: only a kill ends its workers


def hang():
    return Hang()
