"""Leftovers of envkit runs that were killed (SIGKILL, a power cut): found by owner, then removed.

Every container envkit runs and every temporary build folder it makes carries its
owner: the process id, that process's start time (so a reused pid is not taken
for the owner) and the host's boot id. A leftover is swept only when all three
are present, the boot id is this host's (an engine on another machine or a
container from before a reboot is never judged), and the owner process is gone.
Nothing without these marks is ever touched: the engine may be shared.

``envkit build`` and ``envkit validate`` sweep before they start; ``envkit
clean`` sweeps on demand and lists what it removed.

Example:
    >>> labels = owner_labels()
    >>> owner_gone(labels)
    False
    >>> owner_gone({**labels, PID_LABEL: "999999999"})
    True
    >>> owner_gone({}) is False  # not ours to judge
    True
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

PID_LABEL = "io.envkit.owner.pid"
START_LABEL = "io.envkit.owner.start"
BOOT_LABEL = "io.envkit.owner.boot"
BUILD_PREFIX = "envkit-build-"
OWNER_FILE = ".envkit-owner.json"


def boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its closing one.
    fields = stat[stat.rfind(")") + 2:].split()
    return fields[19] if len(fields) > 19 else None


def owner_labels(pid: int | None = None) -> dict[str, str]:
    """Labels naming this process (or ``pid``) as the owner; {} where /proc cannot tell (not Linux)."""
    pid = os.getpid() if pid is None else pid
    boot, start = boot_id(), start_time(pid)
    if boot is None or start is None:
        return {}
    return {PID_LABEL: str(pid), START_LABEL: start, BOOT_LABEL: boot}


def owner_gone(labels: dict[str, str]) -> bool:
    """True only when ``labels`` name an owner on this boot of this host that no longer runs."""
    try:
        pid = int(labels[PID_LABEL])
        start, boot = labels[START_LABEL], labels[BOOT_LABEL]
    except (KeyError, ValueError, TypeError):
        return False
    here = boot_id()
    if here is None or boot != here:
        return False
    return start_time(pid) != start


def sweep_containers(engine) -> list[str]:
    """Remove containers whose envkit owner is gone; return their names."""
    removed = []
    for cid, name, labels in engine.list_owned():
        if owner_gone(labels) and engine.remove_container(cid):
            removed.append(name)
    return removed


def sweep_superseded_images(engine) -> list[str]:
    """Remove envkit-built images that no tag names any more; return ``"<short id> (profile <name>)"`` for each.

    An image a container still uses is kept (the engine refuses without force, and envkit never forces).
    """
    removed = []
    for image_id, labels in engine.list_superseded_images():
        if engine.remove_image(image_id):
            short = image_id.split(":")[-1][:12]
            removed.append(f"{short} (profile {labels.get('io.envkit.profile', '?')})")
    return removed


def make_build_dir() -> Path:
    """A temporary build folder that records its owner (see :func:`sweep_build_dirs`)."""
    path = Path(tempfile.mkdtemp(prefix=f"{BUILD_PREFIX}{os.getpid()}-"))
    (path / OWNER_FILE).write_text(json.dumps(owner_labels()))
    return path


def sweep_build_dirs(root: Path | None = None) -> list[str]:
    """Remove ``envkit-build-*`` folders in ``root`` (the temp folder) whose owner is gone; return them."""
    root = Path(root or tempfile.gettempdir())
    removed: list[str] = []
    try:
        candidates = sorted(root.glob(f"{BUILD_PREFIX}*"))
    except OSError:
        return removed
    for d in candidates:
        try:
            if d.is_symlink() or not d.is_dir():
                continue
            labels = json.loads((d / OWNER_FILE).read_text()[:4096])
        except (OSError, ValueError):
            continue  # no owner record: not ours to judge
        if isinstance(labels, dict) and owner_gone(labels):
            shutil.rmtree(d, ignore_errors=True)
            if not d.exists():
                removed.append(str(d))
    return removed


def sweep(engine, err=None) -> tuple[list[str], list[str]]:
    """Both sweeps; print one line per removal to ``err`` when given."""
    containers, folders = sweep_containers(engine), sweep_build_dirs()
    if err is not None:
        for name in containers:
            print(f"envkit: removed container {name} left by a killed envkit", file=err)
        for folder in folders:
            print(f"envkit: removed build folder {folder} left by a killed envkit", file=err)
    return containers, folders
