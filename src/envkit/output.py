"""Write generated files: all-or-nothing, atomically, never over a user's edits.

A manifest (``.envkit-manifest.json`` in the output directory) records the
sha256 of every file envkit wrote. On the next run a file whose content no
longer matches its recorded hash was edited by someone (or was never ours):
``write_outputs`` refuses to touch any file until ``force=True``, and then
keeps a backup (``FILE.envkit-bak-<UTC time>``) of each such file before replacing it.

Example:
    >>> # write_outputs(Path("out"), files, force=False) -> WriteReport(written=[...], unchanged=[...], backups=[])
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from envkit.errors import EnvkitError, OutputConflict
from envkit.targets import OutputFile

MANIFEST = ".envkit-manifest.json"


@dataclass
class WriteReport:
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    backups: list[str] = field(default_factory=list)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_manifest(out_dir: Path) -> dict[str, str]:
    try:
        data = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
        files = data.get("files", {})
        return {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else {}
    except (OSError, ValueError, AttributeError):
        return {}


def atomic_write(path: Path, data: bytes, mode: int | None = 0o644) -> None:
    """Write via a temporary file in the same folder and ``os.replace``: readers never see half a file.

    ``mode=None`` keeps the permissions of the file being replaced (0644 for a new one).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        mode = (path.stat().st_mode & 0o777) if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
    """Copy ``path`` (or ``raw``, the file as it was read) to a fresh backup name; never overwrites a file."""
    data = path.read_bytes() if raw is None else raw
    while True:
        target = backup_path(path)
        try:
            # "x": fail rather than overwrite if another process took the name meanwhile.
            with open(target, "xb") as f:
                f.write(data)
            shutil.copymode(path, target)
            return target
        except FileExistsError:
            continue
        except OSError as e:
            raise EnvkitError(f"{target}: cannot write the backup: {e.strerror}; nothing was changed") from None


def _same_copy(src: Path, dst: Path) -> bool:
    try:
        a, b = src.stat(), dst.stat()
    except OSError:
        return False
    return a.st_size == b.st_size and (a.st_ino == b.st_ino or int(a.st_mtime) == int(b.st_mtime))


def _place_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        os.link(src, tmp)  # wheels are large: a hard link costs nothing when on one filesystem
    except OSError:
        shutil.copy2(src, tmp)
    os.replace(tmp, dst)


def write_outputs(out_dir: Path, files: list[OutputFile], *, force: bool = False) -> WriteReport:
    """Write ``files`` under ``out_dir``; raise ``OutputConflict`` (writing nothing) on edited files."""
    if out_dir.exists() and not out_dir.is_dir():
        raise EnvkitError(f"{out_dir}: exists and is not a directory")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise EnvkitError(f"{out_dir}: cannot create the output folder: {e.strerror or e}") from None
    manifest = _read_manifest(out_dir)
    report = WriteReport()
    conflicts: list[str] = []
    plan: list[OutputFile] = []
    for f in files:
        target = out_dir / f.path
        if f.source is not None:
            if _same_copy(f.source, target):
                report.unchanged.append(f.path)
            else:
                plan.append(f)
            continue
        if target.is_file():
            current = sha256(target.read_bytes())
            if current == sha256(f.content):
                report.unchanged.append(f.path)
                if (target.stat().st_mode & 0o777) != f.mode:
                    os.chmod(target, f.mode)
                manifest[f.path] = current
                continue
            if manifest.get(f.path) != current:
                conflicts.append(f.path)
        elif target.exists() or target.is_symlink():
            raise EnvkitError(f"{target}: exists and is not a regular file; nothing was written",
                              hint="move it away, or generate into another folder with -o")
        plan.append(f)
    if conflicts and not force:
        listed = ", ".join(str(out_dir / c) for c in conflicts)
        raise OutputConflict(
            f"not overwriting {listed}: changed since envkit wrote it (or not written by envkit); nothing was written",
            hint="move your changes into the profile, or pass --force (envkit keeps a FILE.envkit-bak-<time> copy of each)",
        )
    try:
        for f in plan:
            target = out_dir / f.path
            try:
                if f.path in conflicts and target.is_file():
                    report.backups.append(str(write_backup(target)))
                if f.source is not None:
                    _place_copy(f.source, target)
                else:
                    atomic_write(target, f.content, f.mode)
                    manifest[f.path] = sha256(f.content)
            except OSError as e:
                raise EnvkitError(f"{target}: cannot write: {e.strerror or e}; "
                                  f"{len(report.written)} file(s) were written before this one") from None
            report.written.append(f.path)
    finally:
        # Record whatever was written, also after a failure, so the next run can tell
        # envkit's files from the user's.
        if report.written or not (out_dir / MANIFEST).exists():
            doc = {"envkit_manifest": 1, "files": dict(sorted(manifest.items()))}
            try:
                atomic_write(out_dir / MANIFEST, (json.dumps(doc, indent=2) + "\n").encode())
            except OSError as e:
                raise EnvkitError(f"{out_dir / MANIFEST}: cannot write: {e.strerror or e}") from None
    return report
