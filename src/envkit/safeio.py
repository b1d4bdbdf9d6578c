"""Bounded reads and safe replacement of files that belong to the user.

Two promises live here, used by every command that reads an input or writes a
user's file (profile, ``--expect``, ``.wslconfig``, certificates, generate's
outputs, ``init``, ``wsl apply``):

- **Reads are bounded before they start.** :func:`read_bounded` checks with
  ``stat`` that the path is a regular file, opens it with ``O_NONBLOCK`` (a FIFO
  can never hang the read), checks the size against a cap and never reads more
  than the cap plus one byte (``/dev/zero`` cannot grow memory).
- **A file that is not ours to replace is never replaced.** :func:`write_target`
  follows a symlink to the file it names (the dotfiles-repo ``.wslconfig``
  stays a symlink, its target is edited); a device, FIFO, socket or folder is
  refused with :class:`FileRefused` (exit 1) naming what it is. A link into
  ``/dev``, ``/proc`` or ``/sys`` is refused too: nobody means to write there.
  :func:`replace_file` then writes a uniquely named temporary file in the
  target's own folder and ``os.replace``-s it, so readers never see half a file
  and a full disk or read-only folder leaves the old file as it was (exit 1).

Caps (also stated in the README, "Limits"): profile and expectation 1 MiB,
``.wslconfig`` 1 MiB, a certificate 1 MiB, a project's ``.dockerignore`` 1 MiB, a training script
checked by ``doctor`` 8 MiB.

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); p = d / "a.txt"
    >>> replace_file(p, b"hello\\n") == p
    True
    >>> read_bounded(p, 1024, "a note")
    b'hello\\n'
    >>> read_bounded(pathlib.Path("/dev/null"), 1024, "a note")
    Traceback (most recent call last):
    ...
    envkit.errors.ProfileError: /dev/null: is a character device, not a regular file; expected a note
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from envkit.errors import EnvkitError, ProfileError
from envkit.harness.boundedio import kind_of  # noqa: F401  # re-exported: envkit.safeio.kind_of
from envkit.harness.boundedio import read_bounded as _read_bounded

MIB = 1024 * 1024
PROFILE_MAX = 1 * MIB
WSLCONFIG_MAX = 1 * MIB
CERT_MAX = 1 * MIB
SCRIPT_MAX = 8 * MIB
# A requirements file or envkit.lock.txt, read to decide the layout and copied into the build context:
# one with every wheel's hash for torch's CUDA environment is tens of KB, so this is far above any real one.
REQUIREMENTS_MAX = 4 * MIB
# The project's .dockerignore (image.copy_project): patterns, one a line.
DOCKERIGNORE_MAX = 1 * MIB

# Symlink targets nobody means when they name a config file.
_SYSTEM_TREES = ("/dev", "/proc", "/sys")


class FileRefused(EnvkitError):
    """The file system refused, or a path is not a file envkit may replace. Exit code 1 (not bad input)."""

    exit_code = 1


def read_bounded(path: Path, limit: int, what: str, error: type[EnvkitError] = ProfileError) -> bytes:
    """The bytes of regular file ``path``, at most ``limit`` of them; anything else raises ``error``.

    ``error`` is the caller's bad-input class (exit 2); a file the file system will not let envkit
    read (permissions, an I/O error) raises :class:`FileRefused` (exit 1). The rule itself is the
    harness's (:func:`envkit.harness.boundedio.read_bounded`), which reads
    ``--expect`` inside containers with it.
    """
    return _read_bounded(path, limit, what, error, FileRefused)


def write_target(path: Path) -> Path:
    """The file to replace when asked to write ``path``: ``path`` itself, or the file its symlink names.

    Raises :class:`FileRefused` (exit 1) for a device, FIFO, socket or folder
    (at ``path`` or at the end of its links), for a link into ``/dev``, ``/proc``
    or ``/sys``, and for a link whose target's folder does not exist.
    """
    path = Path(path)
    target = path
    if path.is_symlink():
        target = Path(os.path.realpath(path))
        if any(str(target) == t or str(target).startswith(t + "/") for t in _SYSTEM_TREES):
            raise FileRefused(f"{path}: is a symbolic link to {target}, a system path; not writing there",
                              hint="point the link at a regular file, or give the file's own path")
        if not target.parent.is_dir():
            raise FileRefused(f"{path}: is a symbolic link to {target}, whose folder does not exist; not writing")
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return target
    except OSError as e:
        raise FileRefused(f"{path}: cannot inspect: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        via = f" (through the link to {target})" if target != path else ""
        raise FileRefused(f"{path}{via}: is {kind_of(st.st_mode)}, not a regular file; refusing to replace it",
                          hint="envkit writes only regular files; give another path")
    return target


def stage_file(target: Path, data: bytes, mode: int) -> Path:
    """Write ``data`` to a new, uniquely named temporary file beside ``target``; return its path.

    The caller renames it over ``target`` (``os.replace``) or unlinks it. An
    ``OSError`` (full disk, read-only folder) removes the partial file and is
    raised as :class:`FileRefused`.
    """
    try:
        import tempfile  # only when writing: not on every run's import path

        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.envkit-tmp-", dir=target.parent)
    except OSError as e:
        raise FileRefused(f"{target}: cannot write in {target.parent}: {e.strerror or e}; nothing was changed") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise FileRefused(f"{target}: cannot write: {e.strerror or e}; nothing was changed") from None
        raise
    return Path(tmp)


def replace_file(path: Path, data: bytes, mode: int | None = 0o644) -> Path:
    """Atomically replace the file ``path`` names (following a symlink) with ``data``; return that file.

    ``mode=None`` keeps the permissions of the file being replaced (0644 for a new one).
    """
    target = write_target(path)
    if mode is None:
        mode = (target.stat().st_mode & 0o777) if target.exists() else 0o644
    tmp = stage_file(target, data, mode)
    try:
        os.replace(tmp, target)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise FileRefused(f"{target}: cannot replace: {e.strerror or e}; nothing was changed") from None
        raise
    return target
