"""The write plan: what writing the outputs will do to the output folder, decided before anything changes.

:func:`plan_writes` is a pure function of the rendered files and of the folder as it was read
(a :class:`Folder`: read once, under the folder's lock, by :func:`envkit.output.survey`); it touches
no file. :func:`envkit.output.apply` then carries the plan out, all or nothing. The rules:

- A rendered file whose path already holds its bytes is **unchanged** (its mode is put right).
  A copy into the build context (an :class:`OutputFile` with a ``source``) is unchanged when it holds
  what its source holds; the survey judges that (:func:`envkit.output.same_copy`).
- A file whose content is not what the manifest says envkit wrote there is the user's (an edit, or
  never envkit's): a **conflict**. Nothing is written (:class:`OutputConflict`) unless ``force``,
  and then it is backed up before it is replaced. A copy in the build context is envkit's own and is
  replaced whatever it holds.
- A file the manifest says a requested target wrote, that the target no longer makes, is
  **removed** when unedited and **kept** when edited, a link or not a file; one already gone is
  forgotten (removed from the manifest).
- Under an ``exact`` folder everything envkit wrote (in the manifest) that is no longer rendered is
  **pruned**, edited or not; what the manifest does not record is the user's (**foreign**): kept.
- Nothing else is ever removed: only manifest entries, each checked to lie inside the folder when
  the manifest was read (:func:`envkit.manifest.entry_problem`).

Example:
    >>> out = Path("out"); rendered = [OutputFile("run.sh", b"new\\n", 0o755)]
    >>> was = Current(hashlib.sha256(b"old\\n").hexdigest(), 0o755, b"old\\n")
    >>> folder = Folder(Manifest({"run.sh": was.sha256}), {"run.sh": Destination(out / "run.sh", True, was)})
    >>> plan = plan_writes(out, rendered, folder)
    >>> [w.file.path for w in plan.writes], plan.changes
    (['run.sh'], True)
    >>> edited = Folder(Manifest({"run.sh": "0" * 64}), folder.outputs)
    >>> plan_writes(out, rendered, edited)
    Traceback (most recent call last):
    ...
    envkit.errors.OutputConflict: not overwriting out/run.sh: changed since envkit wrote it (or not written by envkit); nothing was written
    >>> plan_writes(out, rendered, edited, force=True).writes[0].backup
    True
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from envkit.errors import OutputConflict
from envkit.manifest import Manifest
from envkit.statcache import Signature
from envkit.targets import OutputFile


@dataclass(frozen=True)
class Current:
    """The regular file at an output's path, as the survey read it."""

    sha256: str
    mode: int  # permission bits
    data: bytes | None = None  # its bytes, for a backup; None when over the backup's size limit


@dataclass(frozen=True)
class SameCopy:
    """A copy in the build context that already holds what its source holds."""

    sha256: str
    signature: Signature  # cached with its sha256 (envkit.statcache)
    linked: bool  # the source's own inode (a hard link): its mode is the source's
    mode: int
    source_mode: int


@dataclass(frozen=True)
class Destination:
    """Where a rendered file goes, and what is there now."""

    dest: Path  # the file to replace: the output's own path, or the file its symbolic link names
    staged_inside: bool  # staged in the output folder's staging folder (no link on the way), else beside dest
    current: Current | None = None  # a rendered file's path, when it holds a regular file
    same_copy: SameCopy | None = None  # a copy's path, when it already holds the source's content


@dataclass(frozen=True)
class Leftover:
    """A recorded file the rendered files no longer include, as found: gone, a regular file, or other."""

    kind: Literal["gone", "file", "other"]
    sha256: str | None = None


@dataclass(frozen=True)
class Folder:
    """The output folder as read before planning (:func:`envkit.output.survey`)."""

    manifest: Manifest | None
    outputs: Mapping[str, Destination]  # by each rendered file's path
    leftovers: Mapping[str, Leftover] = field(default_factory=dict)  # by each of orphan_candidates(...)
    found: tuple[str, ...] = ()  # entries under the exact folders that are not rendered (links not followed)
    subfolders: tuple[Path, ...] = ()  # the exact folders and their subfolders, deepest first


@dataclass(frozen=True)
class Write:
    """One rendered file to stage and rename into place."""

    file: OutputFile
    dest: Path
    staged_inside: bool
    backup: bool = False  # the user's file is replaced (forced): keep a copy first
    old: bytes | None = None  # what the backup keeps (None: read it then, bounded)


@dataclass(frozen=True)
class WritePlan:
    """Everything a run will do to the output folder, and what it reports."""

    writes: tuple[Write, ...] = ()
    chmods: tuple[tuple[Path, int], ...] = ()
    remove: tuple[str, ...] = ()  # manifest entries to delete (one already gone is just forgotten)
    folders: tuple[Path, ...] = ()  # removed when empty once the entries are, deepest first
    # The manifest afterwards; the copies written get theirs when staged (what was linked, not what was compared).
    manifest: Manifest = field(default_factory=Manifest)
    copies: Mapping[str, Signature] = field(default_factory=dict)  # the unchanged copies' signatures
    unchanged: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()  # unedited files of a target that no longer makes them
    kept: tuple[str, ...] = ()  # edited ones, left in place
    pruned: tuple[str, ...] = ()  # under an exact folder, no longer rendered
    foreign: tuple[str, ...] = ()  # under an exact folder, not written by envkit: the user's

    @property
    def changes(self) -> bool:
        """Whether anything is written, removed or re-moded (and so the manifest written again)."""
        return bool(self.writes or self.remove or self.chmods)


def under(path: str, folders: tuple[str, ...]) -> bool:
    """Whether ``path`` is one of ``folders`` or lies below one.

    >>> under(".envkit/wheels/a.whl", (".envkit",)), under(".envkitx", (".envkit",))
    (True, False)
    """
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in folders)


def orphan_candidates(files: Sequence[OutputFile], manifest: Manifest | None, requested: tuple[str, ...] | None,
                      exact: tuple[str, ...] = ()) -> list[str]:
    """The recorded files a requested target wrote and no longer makes (outside the ``exact`` folders,
    which are judged as a whole): what the survey must look at. None requested: none."""
    if requested is None or manifest is None:
        return []
    made = {f.path for f in files}
    return [p for p in sorted(manifest.files)
            if p not in made and manifest.owners.get(p) in requested and not under(p, exact)]


def split_found(found: Sequence[str], manifest: Manifest | None) -> tuple[list[str], list[str]]:
    """``found`` (under the exact folders, not rendered) split into envkit's (recorded) and the user's."""
    recorded = manifest.files if manifest is not None else {}
    return [p for p in found if p in recorded], [p for p in found if p not in recorded]


def _conflict(out_dir: Path, paths: list[str]) -> OutputConflict:
    listed = ", ".join(str(out_dir / c) for c in paths)
    return OutputConflict(
        f"not overwriting {listed}: changed since envkit wrote it (or not written by envkit); nothing was written",
        hint="move your changes into the profile, or pass --force (envkit keeps a FILE.envkit-bak-<time> copy of each)",
    )


def plan_writes(out_dir: Path, files: Sequence[OutputFile], folder: Folder, *, force: bool = False,
                owners: Mapping[str, str] | None = None, requested: tuple[str, ...] | None = None,
                exact: tuple[str, ...] = ()) -> WritePlan:
    """The plan for writing ``files`` into ``out_dir`` as ``folder`` found it (the rules: the module's
    docstring). Raises :class:`OutputConflict`, naming every conflict, when one exists and not ``force``.

    ``owners`` maps each path to the target that made it and ``requested`` names the targets rendered
    (None: judge no target's leftovers); ``exact`` names folders that hold exactly what is rendered there.
    """
    recorded = folder.manifest or Manifest()
    digests = dict(recorded.files)
    writes: list[Write] = []
    chmods: list[tuple[Path, int]] = []
    unchanged: list[str] = []
    conflicts: list[str] = []
    copies: dict[str, Signature] = {}
    for f in files:
        at = folder.outputs[f.path]
        if f.source is not None:
            same = at.same_copy
            if same is None:
                writes.append(Write(f, at.dest, at.staged_inside))
                digests.pop(f.path, None)
                continue
            unchanged.append(f.path)
            digests[f.path] = same.sha256
            copies[f.path] = same.signature
            if not same.linked and same.mode != same.source_mode:
                chmods.append((at.dest, same.source_mode))  # a copy, not a link: its mode follows
            continue
        now, rendered = at.current, hashlib.sha256(f.content).hexdigest()
        if now is not None and now.sha256 == rendered:
            unchanged.append(f.path)
            digests[f.path] = now.sha256
            if now.mode != f.mode:
                chmods.append((at.dest, f.mode))
            continue
        edited = now is not None and recorded.files.get(f.path) != now.sha256
        if edited:
            conflicts.append(f.path)
        writes.append(Write(f, at.dest, at.staged_inside, backup=edited, old=now.data if edited and now else None))
        digests[f.path] = rendered
    if conflicts and not force:
        raise _conflict(out_dir, conflicts)
    removed, kept = _judge_leftovers(folder, orphan_candidates(files, folder.manifest, requested, exact))
    strays, foreign = split_found(folder.found, folder.manifest)
    made = {f.path for f in files}
    forgotten = [p for p in recorded.files if under(p, exact) and p not in made and p not in strays]
    remove = removed + forgotten + strays
    after = {**recorded.owners, **{f.path: owners[f.path] for f in files if owners and f.path in owners}}
    for path in remove:
        digests.pop(path, None)
        after.pop(path, None)
    return WritePlan(
        writes=tuple(writes), chmods=tuple(chmods), remove=tuple(remove), folders=folder.subfolders,
        manifest=Manifest(digests, after), copies=copies, unchanged=tuple(unchanged), removed=tuple(removed),
        kept=tuple(kept), pruned=tuple(strays), foreign=tuple(foreign))


def _judge_leftovers(folder: Folder, candidates: list[str]) -> tuple[list[str], list[str]]:
    """(removed, kept): a leftover goes when gone already or unedited; an edit, a link or a folder stays."""
    recorded = folder.manifest or Manifest()
    removed: list[str] = []
    kept: list[str] = []
    for path in candidates:
        left = folder.leftovers[path]
        if left.kind == "gone" or left.kind == "file" and left.sha256 == recorded.files[path]:
            removed.append(path)
        else:
            kept.append(path)
    return removed, kept
