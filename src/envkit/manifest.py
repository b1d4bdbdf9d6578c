"""The manifest: envkit's record, in the output folder, of each file it wrote there.

``.envkit-manifest.json`` maps each path (relative to the output folder) to the sha256 envkit
wrote and to the target that wrote it. It holds only what a clone of the folder reproduces (no
inode, no time), so regenerating into a copy of the folder leaves it byte-identical. It sits in the
user's folder, where a pull request or an unpacked archive can edit it, so it is read bounded and
validated whole before anything is written or removed: a bad one is exit 2 naming the manifest,
the line and the entry.

Example:
    >>> m = Manifest({"run.sh": "ab" * 32}, {"run.sh": "run"})
    >>> print(manifest_bytes(m).decode(), end="")
    {
      "envkit_manifest": 1,
      "files": {
        "run.sh": "abababababababababababababababababababababababababababababababab"
      },
      "owners": {
        "run.sh": "run"
      }
    }
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PureWindowsPath
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, StringConstraints, ValidationError

from envkit.errors import ProfileError
from envkit.plan.paths import MANIFEST
from envkit.safeio import read_bounded
from envkit.termtext import neutralise

MANIFEST_MAX = 4 * 1024 * 1024


@dataclass(frozen=True)
class Manifest:
    """What a manifest records: each path's sha256, and the target that wrote it (when recorded)."""

    files: Mapping[str, str] = field(default_factory=dict)
    owners: Mapping[str, str] = field(default_factory=dict)


class _Document(BaseModel):
    """The manifest as :func:`manifest_bytes` writes it; keys it does not know are ignored."""

    model_config = ConfigDict(extra="ignore")

    envkit_manifest: Literal[1] = 1
    files: dict[str, Annotated[StrictStr, StringConstraints(pattern=r"^[0-9a-f]{64}$")]] = {}
    owners: dict[str, StrictStr] = {}
    # Written by earlier versions (each copy's stat signature, now in envkit.statcache): still validated, not used.
    copies: dict[str, tuple[StrictInt, StrictInt, StrictInt, StrictInt, StrictInt]] = {}


_EXPECTED = {
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


def _error(out_dir: Path, where: str, what: str) -> ProfileError:
    name = neutralise(str(out_dir / MANIFEST))
    return ProfileError(
        f"{name}:{where} {neutralise(what)}; nothing was written or removed",
        hint=f"remove the entry, or delete {name} (envkit then removes nothing it finds in the folder "
             "and refuses to replace a file it did not write)")


def read_manifest(out_dir: Path) -> Manifest | None:
    """The manifest of ``out_dir``; None when the folder has none (envkit never wrote there).

    Validated whole: a manifest that is not envkit's form, or an entry that is not a path inside the
    folder (:func:`entry_problem`), is exit 2 naming the manifest, the line and the entry.
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
        raise _error(out_dir, at, f"is not JSON ({getattr(e, 'msg', e)})") from None
    if not isinstance(data, dict):
        raise _error(out_dir, "", "expected a JSON object with files, owners and copies")
    try:
        doc = _Document.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = [str(p) for p in err["loc"]]
        key = loc[0]
        entry = loc[1] if len(loc) > 1 and isinstance(data.get(key), dict) and loc[1] in data[key] else None
        needle = json.dumps(entry) if entry is not None else json.dumps(key)
        shown = f"{key}[{json.dumps(entry)}]" if entry is not None else key
        raise _error(out_dir, _position(text, needle),
                     f"{shown}: expected {_EXPECTED.get(key, 'what envkit writes')}, "
                     f"got {json.dumps(err.get('input'))[:80]}") from None
    for section in ("files", "owners", "copies"):
        for rel in getattr(doc, section):
            problem = entry_problem(out_dir, rel)
            if problem is not None:
                raise _error(out_dir, _position(text, json.dumps(rel)),
                             f"{section}[{json.dumps(rel)}]: expected a path relative to the output "
                             f"folder and inside it; the entry {problem}")
    return Manifest(dict(doc.files), dict(doc.owners))


def manifest_bytes(manifest: Manifest) -> bytes:
    """The manifest file: each path's sha256 and owner, sorted; nothing of this machine's."""
    doc = {"envkit_manifest": 1, "files": dict(sorted(manifest.files.items())),
           "owners": dict(sorted((k, v) for k, v in manifest.owners.items() if k in manifest.files))}
    return (json.dumps(doc, indent=2) + "\n").encode()
