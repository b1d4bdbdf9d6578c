"""The process tree and /dev/shm in use, read from /proc and statvfs: facts for the loader check and the shm watch.

Every reader takes the ``/proc`` root (and /dev/shm's path) as a seam; nothing here signals or waits for a process.

Example:
    >>> import os
    >>> alive(os.getpid()), alive(-1)
    (True, False)
    >>> s = sample(None, "/nonexistent")
    >>> s["shm_size"], s["shm_used"], s["workers"]
    (0, 0, 0)
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from .env import SHM_PATH, shm_stats


def live_procs():
    """(pid, fields after the command name) of every live (non-zombie) process, from /proc.

    Fields: 0 state, 1 ppid, 2 pgid (proc(5)); the name may hold spaces or ")", so split after the last ")".
    """
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rpartition(")")[2].split()
        except OSError:
            continue
        if len(fields) > 2 and fields[0] != "Z":
            yield int(entry), fields


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) pids in process group ``pgid``, from /proc (empty where /proc is absent)."""
    return [pid for pid, fields in live_procs() if int(fields[2]) == pgid]


def children_of(ppid: int) -> list[int]:
    """Live (non-zombie) pids whose parent is ``ppid``, from /proc."""
    return [pid for pid, fields in live_procs() if int(fields[1]) == ppid]


def _children(pid: int, proc: Path) -> list[int]:
    out = []
    for task in (proc / str(pid) / "task").glob("*/children"):
        try:
            out += [int(p) for p in task.read_text().split()]
        except (OSError, ValueError):
            continue
    return out


def descendants(pid: int, proc: str | os.PathLike = "/proc") -> list[int]:
    """Every process below ``pid`` (DataLoader workers are children of the training process)."""
    proc, seen, todo = Path(proc), [], [pid]
    while todo:
        for child in _children(todo.pop(), proc):
            if child not in seen:
                seen.append(child)
                todo.append(child)
    return seen


def rss_bytes(pid: int, proc: str | os.PathLike = "/proc") -> int:
    """Resident memory of ``pid`` (VmRSS; 0 once it has gone)."""
    try:
        for line in (Path(proc) / str(pid) / "status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def sample(pid: int | None, shm_path: str = SHM_PATH, proc: str = "/proc") -> dict:
    """One measurement: shm size/used (0 without a /dev/shm), and the workers under ``pid`` with their summed RSS."""
    st = shm_stats(shm_path)
    size, free = (st["size_bytes"], st["free_bytes"]) if st else (0, 0)
    kids = descendants(pid, proc) if pid else []
    return {"t": time.time(), "shm_size": size, "shm_used": size - free, "workers": len(kids),
            "workers_rss": sum(rss_bytes(k, proc) for k in kids), "pid": pid,
            "pid_rss": rss_bytes(pid, proc) if pid else 0}


def alive(pid: int, proc: str = "/proc") -> bool:
    """True while ``pid`` runs: an exited process its parent has not reaped yet (state Z) counts as gone."""
    try:
        stat = (Path(proc) / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] != ["Z"]
