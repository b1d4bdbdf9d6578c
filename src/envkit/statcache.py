"""This machine's cache of the build context copies' digests, kept out of the output folder.

A copy's sha256 (a multi-GB wheel hard-linked into ``.envkit/wheels``) is trusted again without
reading the file while its ``(dev, inode, size, mtime_ns, ctime_ns)`` is what it was when it was
hashed: any write to the inode moves its ctime, which no user call can set back. Those numbers are
this machine's, so they never go into the committed manifest (a clone or a ``cp -r`` of the output
folder would rewrite it): they live in the user's cache folder, one file per output folder (named by
the sha256 of its real path), under ``$XDG_CACHE_HOME/envkit/copies`` (``~/.cache``; on Windows
``%LOCALAPPDATA%``).

The cache is a hint, never a source of truth: a missing, unreadable, oversized or malformed file is
an empty cache, an entry is used only when all five numbers match the file as it is now, and a cache
that cannot be written is skipped (the next run hashes those copies again).

Example:
    >>> import tempfile; d = Path(tempfile.mkdtemp()); f = d / "w.whl"; _ = f.write_bytes(b"PK")
    >>> save(d, {"w.whl": (signature(f.stat()), "ab" * 32)}, root=d / "cache")
    >>> load(d, root=d / "cache") == {"w.whl": (signature(f.stat()), "ab" * 32)}
    True
    >>> load(d / "elsewhere", root=d / "cache")
    {}
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from pathlib import Path

Signature = tuple[int, int, int, int, int]
Entries = dict[str, tuple[Signature, str]]

CACHE_MAX = 16 * 1024 * 1024
_DIGEST = re.compile(r"[0-9a-f]{64}")


def signature(st: os.stat_result) -> Signature:
    """What a copy's cached digest is trusted for: (dev, inode, size, mtime_ns, ctime_ns)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def cache_root() -> Path | None:
    """The folder holding the caches; None when this environment names no home for them."""
    base = os.environ.get("XDG_CACHE_HOME") or (os.environ.get("LOCALAPPDATA") if os.name == "nt" else None)
    if base:
        return Path(base) / "envkit" / "copies"
    home = os.environ.get("HOME")
    return Path(home) / ".cache" / "envkit" / "copies" if home else None


def _file(out_dir: Path, root: Path | None) -> Path | None:
    root = cache_root() if root is None else root
    if root is None:
        return None
    return root / (hashlib.sha256(os.path.realpath(out_dir).encode("utf-8", "surrogateescape")).hexdigest() + ".json")


def load(out_dir: Path, *, root: Path | None = None) -> Entries:
    """The cached (signature, sha256) of each copy under ``out_dir``, by its path there; {} when none."""
    path = _file(out_dir, root)
    if path is None:
        return {}
    try:
        with open(path, "rb") as f:
            raw = f.read(CACHE_MAX + 1)
        doc = json.loads(raw) if len(raw) <= CACHE_MAX else None
    except (OSError, ValueError, RecursionError):
        return {}
    out: Entries = {}
    for rel, entry in (doc.items() if isinstance(doc, dict) else ()):
        if (isinstance(entry, list) and len(entry) == 6 and all(type(n) is int for n in entry[:5])
                and isinstance(entry[5], str) and _DIGEST.fullmatch(entry[5])):
            out[rel] = (tuple(entry[:5]), entry[5])
    return out


def save(out_dir: Path, entries: Entries, *, root: Path | None = None) -> None:
    """Record ``entries`` for ``out_dir`` (replacing what was there); best effort, silent on failure."""
    path = _file(out_dir, root)
    if path is None:
        return
    doc = {rel: [*sig, digest] for rel, (sig, digest) in sorted(entries.items())}
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(doc) + "\n")
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
