"""Write generated files: all-or-nothing, atomically, never over a user's edits.

Three steps, under the output folder's lock (:mod:`envkit.outputlock`): :func:`survey` reads the
folder once (the manifest, :mod:`envkit.manifest`; each output's path; the recorded files a target
no longer makes; the ``exact`` folders), :func:`envkit.writeplan.plan_writes` decides without
touching a file (conflicts with the user's edits, leftovers, strays, backups, what is unchanged), and
:func:`apply` carries the plan out: stage everything, then rename it into place, or change nothing.

The manifest records the sha256 of every file envkit wrote. On the next run a file whose content no
longer matches its recorded hash was edited by someone (or was never ours): ``write_outputs`` refuses
to touch any file until ``force=True``, and then keeps a backup (``FILE.envkit-bak-<UTC time>``) of
each such file before replacing it.

Files copied into the build context (wheels, the project's code: an :class:`OutputFile` with a
``source``) are linked or copied, and judged by content, never by size and time (``cp -p``,
``rsync -a`` and ``tar x`` keep both across an edit). The rule, :func:`same_copy`: a copy that
is the source's own inode (a hard link) is the same file, so the same content; any other copy is
the same only when its sha256 equals the source's. Each copy's sha256 goes into the manifest; the
copy's ``(dev, inode, size, mtime_ns, ctime_ns)`` goes into this machine's cache
(:mod:`envkit.statcache`, outside the output folder), and while those are unchanged the digest is
reused, so an unchanged hard-linked multi-GB wheel is never read again (any write to the inode moves
its ctime, which no user call can set back). A folder without a manifest is one envkit never wrote
to: nothing is removed from it.

Called as::

    write_outputs(Path("out"), files, force=False) -> WriteReport(written=[...], unchanged=[...], backups=[])
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import stat
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from envkit import statcache
from envkit.manifest import Manifest, manifest_bytes, read_manifest
from envkit.outputlock import output_lock
from envkit.plan.paths import MANIFEST
from envkit.safeio import FileRefused, kind_of, read_bounded, replace_file, stage_file, write_target
from envkit.statcache import signature
from envkit.targets import OutputFile
from envkit.writeplan import (Current, Destination, Folder, Leftover, SameCopy, Write, WritePlan, orphan_candidates,
                              plan_writes, split_found)

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
    digest, _, _ = _read(path)
    assert digest is not None
    return digest


def _read(path: Path, keep: int = 0, missing_ok: bool = False) -> tuple[str | None, int, bytes | None]:
    """(sha256, permission bits, the bytes when at most ``keep``) of the regular file ``path``, read once;
    ``(None, 0, None)`` when it does not exist and ``missing_ok``. Anything but a regular file, or a file
    the system will not let envkit read, is refused (exit 1)."""
    h = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        if missing_ok:
            return None, 0, None
        raise FileRefused(f"{path}: disappeared while envkit read it; nothing was written") from None
    except OSError as e:
        raise FileRefused(f"{path}: cannot read it: {e.strerror or e}; nothing was written") from None
    chunks: list[bytes] = []
    total = 0
    with open(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileRefused(f"{path}: is {kind_of(st.st_mode)}, not a regular file; nothing was written")
        while chunk := f.read(1 << 20):
            h.update(chunk)
            total += len(chunk)
            if total <= keep:
                chunks.append(chunk)
    return h.hexdigest(), st.st_mode & 0o777, b"".join(chunks) if total <= keep else None


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

    Under the folder's lock: :func:`survey` reads the folder once, :func:`envkit.writeplan.plan_writes`
    decides (conflicts, leftovers of dropped targets, strays in the ``exact`` folders: the rules are
    there), and :func:`apply` carries the plan out.

    ``owners`` maps each path to the target that made it and ``requested`` names the targets rendered:
    a file the manifest says a requested target made, that it no longer makes (e.g. the WSL files once
    ``wsl:`` is removed), is removed when unedited and reported in ``removed``, else kept and reported
    in ``kept``. ``exact`` names folders (relative to ``out_dir``) that hold the files given under
    them: a file envkit wrote there that is no longer given is removed, edited or not, and reported in
    ``pruned``; a file the manifest does not record is kept and reported in ``foreign``.
    """
    if out_dir.is_symlink() and not out_dir.is_dir() or out_dir.exists() and not out_dir.is_dir():
        raise FileRefused(f"{out_dir}: exists and is not a folder; nothing was written")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FileRefused(f"{out_dir}: cannot create the output folder: {e.strerror or e}") from None
    with output_lock(out_dir):
        _sweep_stale_staging(out_dir)
        folder, cache = survey(out_dir, files, requested, exact)
        plan = plan_writes(out_dir, files, folder, force=force, owners=owners, requested=requested, exact=exact)
        backups = apply(out_dir, plan, cache)
    return WriteReport(written=[w.file.path for w in plan.writes], unchanged=list(plan.unchanged), backups=backups,
                       removed=list(plan.removed), kept=list(plan.kept), pruned=list(plan.pruned),
                       foreign=list(plan.foreign))


def survey(out_dir: Path, files: list[OutputFile], requested: tuple[str, ...] | None,
           exact: tuple[str, ...] = ()) -> tuple[Folder, statcache.Entries]:
    """The folder as the plan needs it, each file read once; and this machine's digests of its copies.

    The manifest first (exit 2 when it is bad), then each output's path: a symbolic link is followed
    to the file it names, anything but a regular file is refused (exit 1); a rendered file's content
    is hashed, and kept up to the backup's size limit; a copy is judged by :func:`same_copy`. Then the
    recorded files the plan may remove, judged by ``lstat`` (a link is never followed), and the
    entries under the ``exact`` folders.
    """
    manifest = read_manifest(out_dir)
    cache = statcache.load(out_dir)
    known: dict[str, str] = {}  # sha256 by path, each file read once per run
    outputs = {f.path: _destination(out_dir, f, cache, known) for f in files}
    leftovers = {p: _leftover(out_dir / p) for p in orphan_candidates(files, manifest, requested, exact)}
    found, subfolders = _strays(out_dir, exact, {f.path for f in files})
    return Folder(manifest, outputs, leftovers, tuple(found), tuple(subfolders)), cache


def _destination(out_dir: Path, f: OutputFile, cache: statcache.Entries, known: dict[str, str]) -> Destination:
    dest = write_target(out_dir / f.path)  # follows a symlink; refuses devices, FIFOs, sockets, folders
    # Staged in the staging folder when on its file system: no link on the way, in the folder itself.
    real_top = os.path.realpath(out_dir)
    inside = os.path.realpath(dest).startswith(real_top + os.sep) and dest == out_dir / f.path and \
        os.path.realpath(dest.parent) == os.path.realpath(out_dir / f.path).rsplit(os.sep, 1)[0]
    if f.source is not None:
        return Destination(dest, inside, same_copy=_same_copy(f, dest, cache, known))
    return Destination(dest, inside, current=_current(dest))


def _current(dest: Path) -> Current | None:
    """The regular file at ``dest`` (None when there is none): its sha256, mode and, up to BACKUP_MAX, bytes."""
    digest, mode, data = _read(dest, keep=BACKUP_MAX, missing_ok=True)
    return None if digest is None else Current(digest, mode, data)


def _same_copy(f: OutputFile, dest: Path, cache: statcache.Entries, known: dict[str, str]) -> SameCopy | None:
    """``dest`` when it already holds what ``f.source`` holds (:func:`same_copy`), else None."""
    assert f.source is not None
    try:
        b = dest.stat()
    except OSError:
        return None
    if not stat.S_ISREG(b.st_mode):
        return None
    hit = cache.get(f.path)
    if hit is not None and hit[0] == signature(b):
        known[str(dest)] = hit[1]  # unchanged since it was hashed: its ctime says so
    if not same_copy(f.source, dest, known):
        return None
    digest = _digest(dest, known)
    src, now = f.source.stat(), dest.stat()
    return SameCopy(digest, signature(now), linked=(src.st_ino, src.st_dev) == (now.st_ino, now.st_dev),
                    mode=now.st_mode & 0o777, source_mode=src.st_mode & 0o777)


def _leftover(path: Path) -> Leftover:
    """A recorded file as it is now, by ``lstat``: a link, a folder or a device is "other", never followed."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return Leftover("gone")
    except OSError:
        return Leftover("other")
    if not stat.S_ISREG(st.st_mode):
        return Leftover("other")
    return Leftover("file", file_sha256(path))


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
    found, _ = _strays(out_dir, exact, {f.path for f in files})
    return split_found(found, read_manifest(out_dir))[1]


def apply(out_dir: Path, plan: WritePlan, cache: statcache.Entries) -> list[str]:
    """Carry ``plan`` out, all or nothing; return the backups made.

    Every file is first written (and fsync-ed) into a staging folder in ``out_dir`` (or, for an output
    that is a symlink, beside the file it names), with the new manifest, and each forced file backed
    up; only then are the files renamed into place, modes set and leftovers removed, with SIGINT and
    SIGTERM held back meanwhile. A failure or interruption before that leaves the previous outputs as
    they were and removes every temporary file.
    """
    digests = dict(plan.manifest.files)
    staged: list[tuple[Path, Path]] = []  # (temporary, destination)
    backups: list[str] = []
    staging = _staging_dir(out_dir) if plan.changes else None
    try:
        try:
            for w in plan.writes:
                tmp, digests[w.file.path] = _stage(w, staging)
                staged.append((tmp, w.dest))
            if staging is not None:
                tmp = staging / MANIFEST
                tmp.write_bytes(manifest_bytes(Manifest(digests, plan.manifest.owners)))
                os.chmod(tmp, 0o644)
                staged.append((tmp, out_dir / MANIFEST))
            backups = [str(write_backup(w.dest, w.old)) for w in plan.writes if w.backup]
        except OSError as e:
            raise FileRefused(f"{out_dir}: cannot write: {e.strerror or e}; nothing was changed "
                              f"(the previous files are as they were)") from None
        _put_in_place(out_dir, plan, staged)
    finally:
        for tmp, _ in staged:
            if tmp.exists() and (staging is None or staging not in tmp.parents):
                tmp.unlink(missing_ok=True)
        if staging is not None:
            import shutil

            shutil.rmtree(staging, ignore_errors=True)
    _record_copies(out_dir, plan, digests, cache)
    return backups


def _staging_dir(out_dir: Path) -> Path:
    import tempfile  # only when something is written: a run with nothing to change never imports it

    return Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out_dir))


def _stage(w: Write, staging: Path | None) -> tuple[Path, str]:
    """Write ``w``'s file to a temporary beside its place (in ``staging`` when ``w.staged_inside``);
    return the temporary and the sha256 of what it holds."""
    f = w.file
    w.dest.parent.mkdir(parents=True, exist_ok=True)  # now, not while renaming: a full disk stops us here
    if w.staged_inside:
        assert staging is not None  # made whenever the plan writes
        tmp = staging / f.path
        tmp.parent.mkdir(parents=True, exist_ok=True)
        if f.source is not None:
            _stage_copy(f.source, tmp)
            return tmp, file_sha256(tmp)  # what was linked or copied, not what was compared
        tmp.write_bytes(f.content)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, f.mode)
        return tmp, sha256(f.content)
    if f.source is not None:
        _check_regular(f.source)
    data = f.content if f.source is None else f.source.read_bytes()
    return stage_file(w.dest, data, f.mode), sha256(data)


def _put_in_place(out_dir: Path, plan: WritePlan, staged: list[tuple[Path, Path]]) -> None:
    """Rename the staged files into place, set the modes, remove the leftovers, with SIGINT/SIGTERM held."""
    old_mask = _block_signals()
    try:
        for tmp, dest in staged:
            os.replace(tmp, dest)
        for dest, mode in plan.chmods:
            os.chmod(dest, mode)
        for path in plan.remove:
            (out_dir / path).unlink(missing_ok=True)
        for folder in plan.folders:
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty
    except OSError as e:
        raise FileRefused(f"{out_dir}: cannot put the files in place: {e.strerror or e}") from None
    finally:
        if old_mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)


def _record_copies(out_dir: Path, plan: WritePlan, digests: dict[str, str], cache: statcache.Entries) -> None:
    """Cache the signatures of the copies: the unchanged ones, and those just put in place (their
    rename moved their ctime). Best effort: without them the next run hashes those copies again."""
    copies = dict(plan.copies)
    for w in plan.writes:
        if w.file.source is not None:
            with contextlib.suppress(OSError):
                copies[w.file.path] = signature((out_dir / w.file.path).stat())
    entries = {rel: (sig, digests[rel]) for rel, sig in copies.items() if rel in digests}
    if entries != cache:
        statcache.save(out_dir, entries)
