"""Write generated files: all-or-nothing, atomically, never over a user's edits.

A manifest (``.envkit-manifest.json`` in the output directory) records the
sha256 of every file envkit wrote. On the next run a file whose content no
longer matches its recorded hash was edited by someone (or was never ours):
``write_outputs`` refuses to touch any file until ``force=True``, and then
keeps a backup (``FILE.envkit-bak-<UTC time>``) of each such file before replacing it.

Called as::

    write_outputs(Path("out"), files, force=False) -> WriteReport(written=[...], unchanged=[...], backups=[])
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from envkit.errors import EnvkitError, OutputConflict
from envkit.safeio import FileRefused, read_bounded, replace_file, stage_file, write_target
from envkit.targets import OutputFile

MANIFEST = ".envkit-manifest.json"
MANIFEST_MAX = 4 * 1024 * 1024
BACKUP_MAX = 64 * 1024 * 1024
STAGING_PREFIX = ".envkit-staging-"


@dataclass
class WriteReport:
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    backups: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # unedited files of a target the profile no longer has
    kept: list[str] = field(default_factory=list)  # edited ones, left in place


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_manifest(out_dir: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The recorded sha256 of each file envkit wrote, and the target that owns it (when recorded)."""
    try:
        data = json.loads(read_bounded(out_dir / MANIFEST, MANIFEST_MAX, "an envkit manifest"))
        files, owners = data.get("files", {}), data.get("owners", {})
        files = {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else {}
        owners = {str(k): str(v) for k, v in owners.items()} if isinstance(owners, dict) else {}
        return files, owners
    except (EnvkitError, ValueError, AttributeError, RecursionError):
        return {}, {}


def atomic_write(path: Path, data: bytes, mode: int | None = 0o644) -> Path:
    """Replace the file ``path`` names (a symlink's target, edited in its own folder) atomically.

    A device, FIFO, socket or folder is refused (exit 1); see :func:`envkit.safeio.replace_file`.
    ``mode=None`` keeps the permissions of the file being replaced (0644 for a new one).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FileRefused(f"{path.parent}: cannot create the folder: {e.strerror or e}") from None
    return replace_file(path, data, mode)


def backup_path(path: Path, now: datetime | None = None) -> Path:
    """``PATH.envkit-bak-<UTC time>``; ``-1``, ``-2``... when that name is taken."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    candidate = path.with_name(f"{path.name}.envkit-bak-{stamp}")
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.envkit-bak-{stamp}-{n}")
        n += 1
    return candidate


def write_backup(path: Path, raw: bytes | None = None) -> Path:
    """Copy ``path`` (or ``raw``, the file as it was read) to a fresh backup name; never overwrites a file.

    For a symlink the backup goes beside the file it names (that is the file being replaced).
    """
    path = write_target(path)
    data = read_bounded(path, BACKUP_MAX, "a file to back up", FileRefused) if raw is None else raw
    while True:
        target = backup_path(path)
        try:
            # "x": fail rather than overwrite if another process took the name meanwhile.
            with open(target, "xb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            import shutil

            shutil.copymode(path, target)
            return target
        except FileExistsError:
            continue
        except OSError as e:
            Path(target).unlink(missing_ok=True)
            raise FileRefused(f"{target}: cannot write the backup: {e.strerror}; nothing was changed") from None


def _same_copy(src: Path, dst: Path) -> bool:
    try:
        a, b = src.stat(), dst.stat()
    except OSError:
        return False
    return a.st_size == b.st_size and (a.st_ino == b.st_ino or int(a.st_mtime) == int(b.st_mtime))


def _stage_copy(src: Path, tmp: Path) -> None:
    try:
        os.link(src, tmp)  # wheels are large: a hard link costs nothing when on one filesystem
    except OSError:
        import shutil

        shutil.copy2(src, tmp)


def lock_wait() -> float:
    """Seconds to wait for another envkit's lock: ``ENVKIT_LOCK_WAIT`` (default 30), a finite number >= 0.

    Anything else is bad input (UsageError, exit 2): NaN or infinity would wait forever.

    >>> import os; os.environ["ENVKIT_LOCK_WAIT"] = "2.5"; lock_wait()
    2.5
    >>> del os.environ["ENVKIT_LOCK_WAIT"]; lock_wait()
    30.0
    """
    import math

    from envkit.errors import UsageError

    text = os.environ.get("ENVKIT_LOCK_WAIT", "30")
    try:
        wait = float(text)
    except ValueError:
        wait = math.nan
    if not math.isfinite(wait) or wait < 0:
        raise UsageError(f"ENVKIT_LOCK_WAIT: expected a finite number of seconds >= 0, got {text!r}",
                         hint="unset it for the default of 30 s, or e.g. ENVKIT_LOCK_WAIT=60")
    return wait


def lock_path(out_dir: Path) -> Path:
    """The lock file for ``out_dir``: in the system's temporary folder, named by the folder's real path.

    Outside the output folder, so that the user's folder holds only envkit's outputs; it is never
    removed, since deleting a lock file another process holds open would let a third lock a new one.

    >>> lock_path(Path("/a/b/../b")) == lock_path(Path("/a/b")) and lock_path(Path("/a/b")).name.startswith("envkit-")
    True
    """
    import tempfile

    key = hashlib.sha256(os.path.realpath(out_dir).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return Path(tempfile.gettempdir()) / f"envkit-{key}.lock"


@contextmanager
def output_lock(out_dir: Path, wait: float | None = None):
    """Hold an exclusive lock for ``out_dir`` (filelock: ``flock`` on POSIX, ``msvcrt`` on Windows).

    A second envkit writing into the same folder (by any path to it) waits up to ``wait`` seconds
    (``ENVKIT_LOCK_WAIT``, default 30), then stops with exit 1 (FileRefused). The lock file is
    :func:`lock_path`, never in the output folder; readable and writable by every user (0666).
    """
    from filelock import FileLock, Timeout

    if wait is None:
        wait = lock_wait()
    lock = FileLock(str(lock_path(out_dir)), timeout=wait, mode=0o666)
    try:
        lock.acquire(poll_interval=0.05)
    except Timeout:
        raise FileRefused(
            f"{out_dir}: another envkit is writing into this folder; waited {wait:g}s, nothing was written",
            hint="wait for the other run to finish, or generate into another folder with -o",
        ) from None
    except OSError as e:
        raise FileRefused(f"{out_dir}: cannot take the folder's lock {lock_path(out_dir)}: {e.strerror or e}; "
                          "nothing was written") from None
    try:
        yield
    finally:
        lock.release()


def _sweep_stale_staging(out_dir: Path) -> None:
    """Staging folders left by a killed run (only called under the lock, so none is in use)."""
    for p in out_dir.glob(f"{STAGING_PREFIX}*"):
        if p.is_dir() and not p.is_symlink():
            import shutil

            shutil.rmtree(p, ignore_errors=True)


def _block_signals():
    """Block SIGINT/SIGTERM while the staged set is renamed into place; returns the old mask."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        return None  # Windows has no signal masks: the renames are not held back there
    return signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


def check_output_folder(out_dir: Path) -> None:
    """Refuse (FileRefused, exit 1) an output folder that cannot be one: a file, or a symbolic link loop.

    Called before anything is planned or rendered, since relative paths in the outputs are worked out
    against the folder's real path.
    """
    try:
        out_dir.resolve()
    except (RuntimeError, OSError) as e:  # a loop of symbolic links (RuntimeError before Python 3.13)
        raise FileRefused(f"{out_dir}: is a loop of symbolic links ({getattr(e, 'strerror', None) or e}); "
                          "nothing was written", hint="point -o at a folder, or remove the links") from None
    if out_dir.exists() and not out_dir.is_dir():
        raise FileRefused(f"{out_dir}: exists and is not a folder; nothing was written")


def write_outputs(out_dir: Path, files: list[OutputFile], *, force: bool = False,
                  owners: dict[str, str] | None = None, requested: tuple[str, ...] | None = None) -> WriteReport:
    """Write ``files`` under ``out_dir``, all or nothing; raise ``OutputConflict`` (writing nothing) on edited files.

    Every file is first written (and fsync-ed) into a staging folder in ``out_dir``
    (or, for an output that is a symlink, beside the file it names); only when
    the whole set is staged are the files renamed into place, with SIGINT and
    SIGTERM held back meanwhile. A failure or interruption before that leaves the
    previous outputs as they were and removes every temporary file.

    ``owners`` maps each path to the target that made it and ``requested`` names
    the targets rendered: a file the manifest says a requested target made, that
    it no longer makes (e.g. the WSL files once ``wsl:`` is removed), is removed
    when unedited and reported in ``removed``, else kept and reported in ``kept``.
    """
    if out_dir.is_symlink() and not out_dir.is_dir() or out_dir.exists() and not out_dir.is_dir():
        raise FileRefused(f"{out_dir}: exists and is not a folder; nothing was written")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FileRefused(f"{out_dir}: cannot create the output folder: {e.strerror or e}") from None
    with output_lock(out_dir):
        _sweep_stale_staging(out_dir)
        return _write_locked(out_dir, files, force, owners or {}, requested)


def _staging_dir(out_dir: Path) -> Path:
    import tempfile  # only when something is written: a run with nothing to change never imports it

    return Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out_dir))


def _write_locked(out_dir: Path, files: list[OutputFile], force: bool, owners: dict[str, str],
                  requested: tuple[str, ...] | None) -> WriteReport:
    manifest, manifest_owners = _read_manifest(out_dir)
    report = WriteReport()
    conflicts: list[str] = []
    plan: list[tuple[OutputFile, Path]] = []
    chmods: list[tuple[Path, int]] = []
    for f in files:
        dest = write_target(out_dir / f.path)  # follows a symlink; refuses devices, FIFOs, sockets, folders
        if f.source is not None:
            if _same_copy(f.source, dest):
                report.unchanged.append(f.path)
            else:
                plan.append((f, dest))
            continue
        if dest.is_file():
            current = sha256(dest.read_bytes())
            if current == sha256(f.content):
                report.unchanged.append(f.path)
                if (dest.stat().st_mode & 0o777) != f.mode:
                    chmods.append((dest, f.mode))
                manifest[f.path] = current
                continue
            if manifest.get(f.path) != current:
                conflicts.append(f.path)
        plan.append((f, dest))
    if conflicts and not force:
        listed = ", ".join(str(out_dir / c) for c in conflicts)
        raise OutputConflict(
            f"not overwriting {listed}: changed since envkit wrote it (or not written by envkit); nothing was written",
            hint="move your changes into the profile, or pass --force (envkit keeps a FILE.envkit-bak-<time> copy of each)",
        )
    prune = _orphans(out_dir, files, manifest, manifest_owners, requested, report)
    for f in files:
        if f.path in owners:
            manifest_owners[f.path] = owners[f.path]
    staged: list[tuple[Path, Path]] = []  # (temporary, destination)
    staging = _staging_dir(out_dir) if plan or prune or chmods else None
    try:
        try:
            for f, dest in plan:
                # Renamed from the staging folder when on its file system (no link on the way).
                inside = os.path.realpath(dest).startswith(os.path.realpath(out_dir) + os.sep) and \
                    dest == out_dir / f.path and os.path.realpath(dest.parent) == os.path.realpath(out_dir / f.path).rsplit(os.sep, 1)[0]
                dest.parent.mkdir(parents=True, exist_ok=True)  # now, not while renaming: a full disk stops us here
                if inside:
                    assert staging is not None  # made above whenever the plan has files
                    tmp = staging / f.path
                    tmp.parent.mkdir(parents=True, exist_ok=True)
                    if f.source is not None:
                        _stage_copy(f.source, tmp)
                    else:
                        tmp.write_bytes(f.content)
                        with open(tmp, "rb") as fh:
                            os.fsync(fh.fileno())
                        os.chmod(tmp, f.mode)
                else:
                    tmp = stage_file(dest, f.content if f.source is None else f.source.read_bytes(), f.mode)
                staged.append((tmp, dest))
                if f.source is None:
                    manifest[f.path] = sha256(f.content)
            for path in prune:
                manifest.pop(path, None)
                manifest_owners.pop(path, None)
            doc = {"envkit_manifest": 1, "files": dict(sorted(manifest.items())),
                   "owners": dict(sorted((k, v) for k, v in manifest_owners.items() if k in manifest))}
            if staging is not None:
                tmp = staging / MANIFEST
                tmp.write_bytes((json.dumps(doc, indent=2) + "\n").encode())
                os.chmod(tmp, 0o644)
                staged.append((tmp, out_dir / MANIFEST))
            for f, dest in plan:
                if f.path in conflicts and dest.is_file():
                    report.backups.append(str(write_backup(dest)))
        except OSError as e:
            raise FileRefused(f"{out_dir}: cannot write: {e.strerror or e}; nothing was changed "
                              f"(the previous files are as they were)") from None
        old_mask = _block_signals()
        try:
            for tmp, dest in staged:
                os.replace(tmp, dest)
            for dest, mode in chmods:
                os.chmod(dest, mode)
            for path in prune:
                (out_dir / path).unlink(missing_ok=True)
        except OSError as e:
            raise FileRefused(f"{out_dir}: cannot put the files in place: {e.strerror or e}") from None
        finally:
            if old_mask is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    finally:
        for tmp, _ in staged:
            if tmp.exists() and (staging is None or staging not in tmp.parents):
                tmp.unlink(missing_ok=True)
        if staging is not None:
            import shutil

            shutil.rmtree(staging, ignore_errors=True)
    report.written = [f.path for f, _ in plan]
    report.removed = [p for p in prune]
    return report


def _orphans(out_dir: Path, files: list[OutputFile], manifest: dict[str, str], owners: dict[str, str],
             requested: tuple[str, ...] | None, report: WriteReport) -> list[str]:
    """Paths envkit wrote for a rendered target that no longer makes them, and that are unedited."""
    if requested is None:
        return []
    made = {f.path for f in files}
    prune = []
    for path in sorted(manifest):
        if path in made or owners.get(path) not in requested:
            continue
        p = out_dir / path
        if not p.exists() and not p.is_symlink():
            prune.append(path)  # already gone: forget it
            continue
        if p.is_symlink():
            report.kept.append(path)
            continue
        if p.is_file() and sha256(p.read_bytes()) == manifest[path]:
            prune.append(path)
        else:
            report.kept.append(path)
    return prune
