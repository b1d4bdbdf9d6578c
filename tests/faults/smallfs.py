"""A small tmpfs for full-disk tests, and a filler that leaves it a given number of bytes."""
from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import in_ci


def fill(fs: Path, leave: int) -> None:
    """Fill file system ``fs`` to the last ``leave`` bytes (unbuffered: the final flush cannot fail)."""
    fd = os.open(fs / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        size = 0
        while True:
            try:
                size += os.write(fd, b"x" * 1024)
            except OSError:
                break
        os.ftruncate(fd, max(0, size - leave))
    finally:
        os.close(fd)


def small_tmpfs(tmp_path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` under ``tmp_path`` (needs root and mount; fails instead of skipping in CI)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        (pytest.fail if in_ci() else pytest.skip)(f"cannot mount a tmpfs: {res.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)
