"""Write generated files: all-or-nothing, atomically, never over a user's edits.

A manifest (``.envkit-manifest.json`` in the output directory) records the
sha256 of every file envkit wrote. On the next run a file whose content no
longer matches its recorded hash was edited by someone (or was never ours):
``write_outputs`` refuses to touch any file until ``force=True``, and then
keeps a backup (``FILE.envkit-bak-<UTC time>``) of each such file before replacing it.

Files copied into the build context (wheels, the project's code: an :class:`OutputFile` with a
``source``) are linked or copied, and judged by content, never by size and time (``cp -p``,
``rsync -a`` and ``tar x`` keep both across an edit). The rule, :func:`same_copy`: a copy that
is the source's own inode (a hard link) is the same file, so the same content; any other copy is
the same only when its sha256 equals the source's. Each copy's sha256 goes into the manifest; the
copy's ``(dev, inode, size, mtime_ns, ctime_ns)`` goes into this machine's cache
(:mod:`envkit.statcache`, outside the output folder), and while those are unchanged the digest is
reused, so an unchanged hard-linked multi-GB wheel is never read again (any write to the inode moves
its ctime, which no user call can set back). The manifest holds only what a clone of the folder can
reproduce (paths, owners, digests): regenerating into a copy of the folder leaves it byte-identical. A folder the caller names in
``exact`` (the build context's ``.envkit/``) holds the files given and the user's: a file there that
the manifest records (envkit wrote it) and that is no longer given is removed and reported in
``pruned``; one the manifest does not record is the user's, kept and reported in ``foreign``. A
folder without a manifest is one envkit never wrote to: nothing is removed from it.

Called as::

    write_outputs(Path("out"), files, force=False) -> WriteReport(written=[...], unchanged=[...], backups=[])
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import stat
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PureWindowsPath
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, StringConstraints, ValidationError

from envkit.errors import OutputConflict, ProfileError
from envkit.plan.paths import MANIFEST
from envkit.safeio import FileRefused, kind_of, read_bounded, replace_file, stage_file, write_target
from envkit import statcache
from envkit.statcache import Signature, signature
from envkit.targets import OutputFile
from envkit.termtext import neutralise

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
    pruned: list[str] = field(default_factory=list)  # in an exact folder, but no longer among the files
    foreign: list[str] = field(default_factory=list)  # in an exact folder, not written by envkit: the user's


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: Path) -> str:
    """The sha256 of a regular file's content, read in 1 MiB pieces (wheels are GBs).

    Opened without blocking and checked with ``fstat``: anything else (a FIFO swapped in) is refused.
    """
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with open(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise FileRefused(f"{path}: is {kind_of(mode)}, not a regular file; nothing was written")
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def same_copy(src: Path, dst: Path, known: dict[str, str] | None = None) -> bool:
    """True when ``dst`` holds what ``src`` holds: the same inode (a hard link), else the same sha256.

    ``known`` caches digests by path (:func:`_digest`), so the manifest's are reused.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); a, b = d / "a", d / "b"
    >>> _ = a.write_bytes(b"one"), b.write_bytes(b"two"); os.utime(b, ns=(a.stat().st_atime_ns, a.stat().st_mtime_ns))
    >>> same_copy(a, b), same_copy(a, a)
    (False, True)
    """
    try:
        a, b = src.stat(), dst.stat()
    except OSError:
        return False
    if not (stat.S_ISREG(a.st_mode) and stat.S_ISREG(b.st_mode)):
        return False
    if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino):
        return True
    known = {} if known is None else known
    return a.st_size == b.st_size and _digest(src, known) == _digest(dst, known)


def _digest(path: Path, known: dict[str, str]) -> str:
    key = str(path)
    if key not in known:
        known[key] = file_sha256(path)
    return known[key]


class _Manifest(BaseModel):
    """The manifest as envkit writes it (:func:`_manifest_bytes`); keys it does not know are ignored."""

    model_config = ConfigDict(extra="ignore")

    envkit_manifest: Literal[1] = 1
    files: dict[str, Annotated[StrictStr, StringConstraints(pattern=r"^[0-9a-f]{64}$")]] = {}
    owners: dict[str, StrictStr] = {}
    # Written by earlier versions (each copy's stat signature, now in envkit.statcache): still validated, not used.
    copies: dict[str, tuple[StrictInt, StrictInt, StrictInt, StrictInt, StrictInt]] = {}


_MANIFEST_EXPECTED = {
    "envkit_manifest": "the number 1",
    "files": "an object mapping each path to its sha256 (64 lowercase hex digits)",
    "owners": "an object mapping each path to the target that wrote it",
    "copies": "an object mapping each path to five integers (dev, inode, size, mtime_ns, ctime_ns)",
}


def entry_problem(out_dir: Path, rel: str) -> str | None:
    """Why manifest entry ``rel`` is not a file envkit may remove from ``out_dir``; None when it is.

    An entry is removed as ``out_dir / rel``, so it must name a path inside the folder: relative (not
    ``/x``, nor ``C:`` on Windows), no ``..``, ``.`` or empty component, no NUL, and no symbolic link on
    the way out of the folder (the last component may be a link: removing it removes the link only).
    The manifest sits in the user's folder, so a pull request or an unpacked archive can edit it.

    >>> entry_problem(Path("."), "../victim.txt"), entry_problem(Path("."), "/etc/passwd")
    ("goes up out of the folder with '..'", 'is an absolute path')
    >>> entry_problem(Path("."), ".envkit/project/train.py") is None
    True
    """
    seps = r"[/\\]" if os.name == "nt" else "/"
    parts = re.split(seps, rel)
    if "\0" in rel:
        return "holds a NUL byte"
    if rel.startswith(("/", "\\")) or os.name == "nt" and PureWindowsPath(rel).drive:
        return "is an absolute path"
    if ".." in parts:
        return "goes up out of the folder with '..'"
    if any(part in ("", ".") for part in parts):
        return "has an empty or '.' component (envkit writes plain relative paths)"
    top = os.path.realpath(out_dir)
    parent = os.path.realpath(os.path.dirname(os.path.join(out_dir, rel)))
    if not Path(parent).is_relative_to(top):
        return f"leads out of the folder through a symbolic link (to {parent})"
    return None


def _position(text: str, needle: str) -> str:
    """``line:col:`` of the first ``needle`` in ``text``, or "" when it is not there as written."""
    at = text.find(needle)
    if at < 0:
        return ""
    line = text.count("\n", 0, at) + 1
    return f"{line}:{at - (text.rfind(chr(10), 0, at) + 1) + 1}:"


def _manifest_error(out_dir: Path, text: str, where: str, what: str) -> ProfileError:
    name = neutralise(str(out_dir / MANIFEST))
    return ProfileError(
        f"{name}:{where} {neutralise(what)}; nothing was written or removed",
        hint=f"remove the entry, or delete {name} (envkit then removes nothing it finds in the folder "
             "and refuses to replace a file it did not write)")


def _read_manifest(out_dir: Path) -> tuple[dict[str, str], dict[str, str]] | None:
    """The recorded sha256 of each file envkit wrote and the target that owns it (when recorded); None
    when the folder has no manifest.

    Validated whole before anything is written or removed: a manifest that is not envkit's form, or an
    entry that is not a path inside the folder (:func:`entry_problem`), is exit 2 naming the manifest,
    the line and the entry.
    """
    path = out_dir / MANIFEST
    if not path.exists() and not path.is_symlink():
        return None
    raw = read_bounded(path, MANIFEST_MAX, "an envkit manifest")
    text = raw.decode("utf-8", errors="replace")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as e:
        at = f"{e.lineno}:{e.colno}:" if isinstance(e, json.JSONDecodeError) else ""
        raise _manifest_error(out_dir, text, at, f"is not JSON ({getattr(e, 'msg', e)})") from None
    if not isinstance(data, dict):
        raise _manifest_error(out_dir, text, "", "expected a JSON object with files, owners and copies")
    try:
        doc = _Manifest.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = [str(p) for p in err["loc"]]
        key = loc[0]
        entry = loc[1] if len(loc) > 1 and isinstance(data.get(key), dict) and loc[1] in data[key] else None
        needle = json.dumps(entry) if entry is not None else json.dumps(key)
        shown = f"{key}[{json.dumps(entry)}]" if entry is not None else key
        raise _manifest_error(out_dir, text, _position(text, needle),
                              f"{shown}: expected {_MANIFEST_EXPECTED.get(key, 'what envkit writes')}, "
                              f"got {json.dumps(err.get('input'))[:80]}") from None
    for section in ("files", "owners", "copies"):
        for rel in getattr(doc, section):
            problem = entry_problem(out_dir, rel)
            if problem is not None:
                raise _manifest_error(out_dir, text, _position(text, json.dumps(rel)),
                                      f"{section}[{json.dumps(rel)}]: expected a path relative to the output "
                                      f"folder and inside it; the entry {problem}")
    return dict(doc.files), dict(doc.owners)


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


def _check_regular(src: Path) -> None:
    """Refuse (exit 1) a source that is no longer a regular file; it is never opened."""
    try:
        mode = src.stat().st_mode
    except OSError as e:
        raise FileRefused(f"{src}: cannot read it: {e.strerror or e}; nothing was written") from None
    if not stat.S_ISREG(mode):
        raise FileRefused(f"{src}: is {kind_of(mode)}, not a regular file; nothing was written")


def _stage_copy(src: Path, tmp: Path) -> None:
    """Link (or copy) ``src`` to ``tmp``; anything but a regular file is refused, never opened."""
    _check_regular(src)
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


@contextlib.contextmanager
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
                  owners: dict[str, str] | None = None, requested: tuple[str, ...] | None = None,
                  exact: tuple[str, ...] = ()) -> WriteReport:
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

    ``exact`` names folders (relative to ``out_dir``) that hold the files given under them: a file
    envkit wrote there (in the manifest) that is no longer given (a file the project no longer has, a
    wheel gone from the wheelhouse) is removed, edited or not, and reported in ``pruned``; a file
    the manifest does not record (put there by hand) is kept and reported in ``foreign``.
    """
    if out_dir.is_symlink() and not out_dir.is_dir() or out_dir.exists() and not out_dir.is_dir():
        raise FileRefused(f"{out_dir}: exists and is not a folder; nothing was written")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FileRefused(f"{out_dir}: cannot create the output folder: {e.strerror or e}") from None
    with output_lock(out_dir):
        _sweep_stale_staging(out_dir)
        return _write_locked(out_dir, files, force, owners or {}, requested, exact)


def _staging_dir(out_dir: Path) -> Path:
    import tempfile  # only when something is written: a run with nothing to change never imports it

    return Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out_dir))


def _under(path: str, folders: tuple[str, ...]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in folders)


def _unchanged_copy(f: OutputFile, dest: Path, cached: statcache.Entries, known: dict[str, str]) -> str | None:
    """The sha256 of ``dest`` when it already holds what ``f.source`` holds (:func:`same_copy`), else None."""
    assert f.source is not None
    try:
        b = dest.stat()
    except OSError:
        return None
    if not stat.S_ISREG(b.st_mode):
        return None
    hit = cached.get(f.path)
    if hit is not None and hit[0] == signature(b):
        known[str(dest)] = hit[1]  # unchanged since it was hashed: its ctime says so
    if not same_copy(f.source, dest, known):
        return None
    return _digest(dest, known)


def _strays(out_dir: Path, exact: tuple[str, ...], made: set[str]) -> tuple[list[str], list[Path]]:
    """Entries under the ``exact`` folders that are not in ``made`` (never followed into a link), and
    those folders' subfolders, deepest first (removed when they end up empty)."""
    strays: list[str] = []
    folders: list[Path] = []
    for d in exact:
        top = out_dir / d
        if top.is_symlink() or not top.is_dir():
            continue
        for root, dirs, names in os.walk(top, onerror=lambda e: None):
            here = Path(root)
            folders.append(here)
            for name in names + [d for d in dirs if (here / d).is_symlink()]:
                rel = (here / name).relative_to(out_dir).as_posix()
                if rel not in made:
                    strays.append(rel)
    return sorted(strays), sorted(folders, key=lambda p: len(p.parts), reverse=True)


def foreign_files(out_dir: Path, exact: tuple[str, ...], files: list[OutputFile]) -> list[str]:
    """The files under the ``exact`` folders that are not among ``files`` and that the manifest does not
    record: the user's (kept, see :func:`write_outputs`). Reads the manifest (exit 2 when it is bad)."""
    if not exact:
        return []
    manifest = (_read_manifest(out_dir) or ({}, {}))[0]
    found, _ = _strays(out_dir, exact, {f.path for f in files})
    return [p for p in found if p not in manifest]


def _write_locked(out_dir: Path, files: list[OutputFile], force: bool, owners: dict[str, str],
                  requested: tuple[str, ...] | None, exact: tuple[str, ...] = ()) -> WriteReport:
    manifest, manifest_owners = _read_manifest(out_dir) or ({}, {})
    cached = statcache.load(out_dir)
    report = WriteReport()
    conflicts: list[str] = []
    plan: list[tuple[OutputFile, Path]] = []
    chmods: list[tuple[Path, int]] = []
    known: dict[str, str] = {}  # sha256 by path, each file read once per run
    copies: dict[str, Signature] = {}  # the copies' signatures, cached with their sha256 (envkit.statcache)
    for f in files:
        dest = write_target(out_dir / f.path)  # follows a symlink; refuses devices, FIFOs, sockets, folders
        if f.source is not None:
            digest = _unchanged_copy(f, dest, cached, known)
            if digest is not None:
                report.unchanged.append(f.path)
                manifest[f.path] = digest
                copies[f.path] = signature(dest.stat())
                src_st, dest_st = f.source.stat(), dest.stat()
                if (src_st.st_ino, src_st.st_dev) != (dest_st.st_ino, dest_st.st_dev) and \
                        (src_st.st_mode & 0o777) != (dest_st.st_mode & 0o777):
                    chmods.append((dest, src_st.st_mode & 0o777))  # a copy, not a link: its mode follows
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
    made = {f.path for f in files}
    prune = _orphans(out_dir, files, manifest, manifest_owners, requested, report, exact)
    found, folders = _strays(out_dir, exact, made)
    strays = [p for p in found if p in manifest]  # envkit wrote them; the user's own stay
    report.foreign = [p for p in found if p not in manifest]
    for path in [p for p in manifest if _under(p, exact) and p not in made]:
        if path not in strays:
            prune.append(path)  # recorded, already gone: forget it
    for f in files:
        if f.path in owners:
            manifest_owners[f.path] = owners[f.path]
    staged: list[tuple[Path, Path]] = []  # (temporary, destination)
    staging = _staging_dir(out_dir) if plan or prune or chmods or strays else None
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
                        manifest[f.path] = file_sha256(tmp)  # what was linked or copied, not what was compared
                    else:
                        tmp.write_bytes(f.content)
                        with open(tmp, "rb") as fh:
                            os.fsync(fh.fileno())
                        os.chmod(tmp, f.mode)
                else:
                    if f.source is not None:
                        _check_regular(f.source)
                    data = f.content if f.source is None else f.source.read_bytes()
                    tmp = stage_file(dest, data, f.mode)
                    if f.source is not None:
                        manifest[f.path] = sha256(data)
                staged.append((tmp, dest))
                if f.source is None:
                    manifest[f.path] = sha256(f.content)
            for path in prune + strays:
                manifest.pop(path, None)
                manifest_owners.pop(path, None)
                copies.pop(path, None)
            if staging is not None:
                tmp = staging / MANIFEST
                tmp.write_bytes(_manifest_bytes(manifest, manifest_owners))
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
            for path in prune + strays:
                (out_dir / path).unlink(missing_ok=True)
            for folder in folders:
                with contextlib.suppress(OSError):
                    folder.rmdir()  # only when empty
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
    _record_copies(out_dir, [f for f, _ in plan if f.source is not None], manifest, copies, cached)
    report.written = [f.path for f, _ in plan]
    report.removed = [p for p in prune if not _under(p, exact)]
    report.pruned = [p for p in strays if _under(p, exact)]
    return report


def _manifest_bytes(manifest: dict[str, str], owners: dict[str, str]) -> bytes:
    """The manifest: each path's sha256 and owner, sorted; nothing of this machine's (no inode, no time)."""
    doc = {"envkit_manifest": 1, "files": dict(sorted(manifest.items())),
           "owners": dict(sorted((k, v) for k, v in owners.items() if k in manifest))}
    return (json.dumps(doc, indent=2) + "\n").encode()


def _record_copies(out_dir: Path, written: list[OutputFile], manifest: dict[str, str],
                   copies: dict[str, Signature], cached: statcache.Entries) -> None:
    """Cache the signatures of the copies: the unchanged ones, and those just put in place (their
    rename moved their ctime). Best effort: without them the next run hashes those copies again."""
    for f in written:
        with contextlib.suppress(OSError):
            copies[f.path] = signature((out_dir / f.path).stat())
    entries = {rel: (sig, manifest[rel]) for rel, sig in copies.items() if rel in manifest}
    if entries != cached:
        statcache.save(out_dir, entries)

def _orphans(out_dir: Path, files: list[OutputFile], manifest: dict[str, str], owners: dict[str, str],
             requested: tuple[str, ...] | None, report: WriteReport, exact: tuple[str, ...] = ()) -> list[str]:
    """Paths envkit wrote for a rendered target that no longer makes them, and that are unedited
    (the ``exact`` folders are not judged here: everything there that is not made goes)."""
    if requested is None:
        return []
    made = {f.path for f in files}
    prune = []
    for path in sorted(manifest):
        if path in made or owners.get(path) not in requested or _under(path, exact):
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
