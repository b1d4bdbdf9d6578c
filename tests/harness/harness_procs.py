"""/proc scans used to prove no loader or worker process survives (no psutil)."""

import os
from pathlib import Path


def group_pids(pgid):
    """Every pid (zombies included) whose process group is ``pgid``."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[2]) == pgid:
                pids.append(int(entry))
    return pids


def child_pids(ppid):
    """Direct children (zombies included) of ``ppid``."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == ppid:
                pids.append(int(entry))
    return pids
