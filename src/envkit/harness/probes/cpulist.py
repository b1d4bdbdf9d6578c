"""The kernel's cpulist syntax (``0-3,8,10-11``: sysfs, ``/proc/self/status``, ``--cpuset-cpus``), read and written.

The one reader and writer of it, standard library only: the harness uses it inside images (NUMA
placement, the pinned-transfer check), and envkit on the host (``envkit doctor``, the profile's
``run.cpuset``, whose validating parser is :func:`envkit.units.parse_cpuset`).

Example:
    >>> parse_cpulist("0-2,8,10-11\\n"), parse_cpulist("")
    ((0, 1, 2, 8, 10, 11), ())
    >>> format_cpulist({0, 1, 2, 5, 7, 8})
    '0-2,5,7-8'
"""

from __future__ import annotations

from collections.abc import Iterable


def parse_cpulist(text: str) -> tuple[int, ...]:
    """The sorted CPU ids a cpulist names; empty text names none. A malformed part raises ValueError."""
    out: set[int] = set()
    for part in (text or "").strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return tuple(sorted(out))


def format_cpulist(ids: Iterable[int]) -> str:
    """The compact cpulist of ``ids``: runs of consecutive ids as ``a-b``."""
    runs: list[list[int]] = []
    for i in sorted(ids):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)
