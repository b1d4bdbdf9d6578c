"""Which profile a command uses, and whether a profile found by looking is trusted.

The order (docs/cli.md, "Which profile a command uses"): the profile named on the command line
(PROFILE or ``-f``), else ``$ENVKIT_PROFILE``, else ``envkit.yaml`` in the current folder or the
nearest parent up to the repository root (:func:`discover_profile`), else the embedded default.
A profile found by walking up decides what runs and what is mounted, so it is trusted as git trusts
a repository: it must belong to this user or root, and the walk never enters a world-writable folder.

Example:
    >>> find_profile(None, None, {"ENVKIT_PROFILE": "team.yaml"}, Path("/nonexistent")).how
    'env'
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from envkit.errors import ProfileError, UsageError
from envkit.termtext import neutralise

DEFAULT_PROFILE_FILE = Path("envkit.yaml")
PROFILE_ENV = "ENVKIT_PROFILE"
PROFILE_SUFFIXES = (".yaml", ".yml")


class Found(NamedTuple):
    """The profile a command uses and how it was found: ``named``, ``env``, ``discovered`` or ``default``."""

    path: Path | None
    how: str


def discover_profile(start: Path, euid: int | None = None) -> Path | None:
    """``envkit.yaml`` in ``start`` or the nearest parent, up to the repository root (the folder holding
    ``.git``) or the filesystem root outside a repository; None when there is none.

    A profile decides what runs and what is mounted (``run.volumes: ["/:/host"]``), so one found by
    walking is trusted as git trusts a repository (safe.directory, CVE-2022-24765): it must belong to
    ``euid`` (default: this process's) or root, else :class:`~envkit.errors.ProfileError` (exit 2);
    and the walk never goes up into a world-writable folder (``/tmp``), where anyone can plant one.
    A profile named with PROFILE, ``-f`` or ``$ENVKIT_PROFILE`` is the user's choice and is not checked.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp()); (root / ".git").mkdir(); _ = (root / "envkit.yaml").write_text("")
    >>> (root / "a" / "b").mkdir(parents=True)
    >>> discover_profile(root / "a" / "b") == root / "envkit.yaml"
    True
    >>> (root / "a" / ".git").mkdir()  # a nested repository's root stops the walk
    >>> discover_profile(root / "a" / "b") is None
    True
    """
    if euid is None:
        euid = os.geteuid() if hasattr(os, "geteuid") else None  # Windows: no owner rule
    for folder in (start, *start.parents):
        if folder != start and _world_writable(folder):
            return None
        candidate = folder / DEFAULT_PROFILE_FILE
        if candidate.is_file():
            _check_owner(candidate, euid)
            return candidate
        if (folder / ".git").exists():
            return None
    return None


def _world_writable(folder: Path) -> bool:
    try:
        return bool(folder.stat().st_mode & stat.S_IWOTH)
    except OSError:
        return True  # a folder envkit cannot inspect is not one to trust either


def _check_owner(candidate: Path, euid: int | None) -> None:
    owner = candidate.stat().st_uid
    if euid is None or owner in (euid, 0):
        return
    try:
        import pwd

        who = f"uid {owner} ({pwd.getpwuid(owner).pw_name})"
    except (ImportError, KeyError):
        who = f"uid {owner}"
    raise ProfileError(f"{neutralise(str(candidate))}: found by looking up from this folder, but owned by {who}, "
                       "not by you or root; envkit does not use a profile another user could have put there "
                       "(as git refuses such a repository, safe.directory)",
                       hint=f"if you trust it, name it: -f {neutralise(str(candidate))}; or run envkit where "
                            "your own envkit.yaml is")


def find_profile(named: Path | None, file: Path | None, environ: Mapping[str, str], cwd: Path) -> Found:
    """The profile for PROFILE / ``-f`` (never both: UsageError), else ``$ENVKIT_PROFILE``, else discovery.

    >>> find_profile(None, Path("p.yaml"), {}, Path("/nonexistent"))
    Found(path=PosixPath('p.yaml'), how='named')
    >>> find_profile(None, None, {"ENVKIT_PROFILE": "team.yaml"}, Path("/nonexistent"))
    Found(path=PosixPath('team.yaml'), how='env')
    >>> find_profile(None, None, {}, Path("/nonexistent"))
    Found(path=None, how='default')
    """
    if named is not None and file is not None:
        raise UsageError(f"the profile is named twice ({named} and -f {file}); give PROFILE or -f, not both")
    if named is not None or file is not None:
        return Found(named or file, "named")
    if environ.get(PROFILE_ENV):
        return Found(Path(environ[PROFILE_ENV]), "env")
    found = discover_profile(cwd)
    if found is None:
        return Found(None, "default")
    return Found(_shown(found, cwd), "discovered")


def _shown(path: Path, cwd: Path) -> Path:
    """``path`` as the user would type it from ``cwd``: ``envkit.yaml``, ``../envkit.yaml``, ...

    >>> _shown(Path("/p/envkit.yaml"), Path("/p/a/b"))
    PosixPath('../../envkit.yaml')
    """
    ups = len(cwd.parts) - len(path.parent.parts)
    return Path(*([".."] * ups), path.name) if ups else Path(path.name)
