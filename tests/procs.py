"""/proc scans used to prove no loader or worker process survives (no psutil); shared by the harness and fault tests."""

import os
from pathlib import Path

# Fields after the command name in /proc/<pid>/stat: state, ppid, pgrp, ...
_PPID, _PGRP = 1, 2


def _pids_where(field: int, value: int) -> list[int]:
    """Every pid (zombies included) whose stat ``field`` equals ``value``."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[field]) == value:
                pids.append(int(entry))
    return pids


def group_pids(pgid):
    """Every pid (zombies included) whose process group is ``pgid``."""
    return _pids_where(_PGRP, pgid)


def child_pids(ppid):
    """Direct children (zombies included) of ``ppid``."""
    return _pids_where(_PPID, ppid)
