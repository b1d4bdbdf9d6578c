"""Byte counts in words: the one pair of formatters, standard library only (the harness runs in images).

:func:`human_bytes` rounds (reports, checks: ``/dev/shm is 1.5 GiB``); :func:`exact_bytes` names a
limit exactly (a file-size bound, a ulimit), in the largest unit that divides it. Docker's own
spelling (``8g``) is :func:`envkit.harness.rules.sizing.docker_size`.

Example:
    >>> human_bytes(1536), human_bytes(None), human_bytes(-1)
    ('1.5 KiB', 'n/a', 'unlimited')
    >>> exact_bytes(1048576), exact_bytes(1000)
    ('1 MiB', '1000 bytes')
"""

from __future__ import annotations


def human_bytes(n) -> str:
    """``1536 -> '1.5 KiB'``; ``None -> 'n/a'``; negative means unlimited (ulimit -1)."""
    if n is None:
        return "n/a"
    if n < 0:
        return "unlimited"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover - loop always returns


def exact_bytes(n: int) -> str:
    """``n`` in the largest of GiB, MiB, KiB that divides it, else in bytes."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"
