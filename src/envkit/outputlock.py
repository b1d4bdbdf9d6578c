"""The output folder's lock: one envkit at a time writes into a folder, whoever runs it.

On POSIX the lock is the folder itself: ``flock`` on a read-only descriptor of the folder (``flock``
needs no write access). Every account that can open the folder takes the same lock, so two members
of a team generating into one group-writable checkout take turns; and there is no lock file to own,
neither in the output folder (which holds only envkit's outputs) nor in the system's temporary
folder. A file there belongs to whoever made it first, and filelock rightly refuses a lock file
another account owns in a sticky folder such as ``/tmp``, since its owner could replace it during
the hold (filelock 4.3, ``_native/_unix.py`` ``_finalize_locked_fd``, through
``_filesystem/_ownership.py`` ``foreign_owner``): that left the second teammate with exit 1 on every
run. A lock in each user's own folder would not keep the two apart. The kernel releases the lock
when the descriptor closes, so a killed run leaves nothing held. The NFS client has no ``flock`` of
its own for folders, so there the kernel's local lock applies: runs on one machine take turns, as
they did with the lock file in the local ``/tmp``.

filelock opens its file for writing and so cannot lock a folder; where there is no ``flock``
(Windows: a folder cannot be locked with ``msvcrt`` either) the lock stays filelock's file in the
user's temporary folder, named by the folder's real path.

Example:
    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> with output_lock(d, wait=0):
    ...     print("writing")
    writing
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from envkit.errors import UsageError
from envkit.safeio import FileRefused

POLL_S = 0.05


def lock_wait() -> float:
    """Seconds to wait for another envkit's lock: ``ENVKIT_LOCK_WAIT`` (default 30), a finite number >= 0.

    Anything else is bad input (UsageError, exit 2): NaN or infinity would wait forever.

    >>> import os; os.environ["ENVKIT_LOCK_WAIT"] = "2.5"; lock_wait()
    2.5
    >>> del os.environ["ENVKIT_LOCK_WAIT"]; lock_wait()
    30.0
    """
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
    """What is locked for ``out_dir``, by any path to it: the folder's real path on POSIX; on Windows a
    file in the temporary folder named by it (never removed: deleting a lock file another process holds
    open would let a third lock a new one).

    >>> lock_path(Path("/a/b/../b")) == lock_path(Path("/a/b"))
    True
    """
    real = os.path.realpath(out_dir)
    if _fcntl() is not None:
        return Path(real)
    import tempfile

    key = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return Path(tempfile.gettempdir()) / f"envkit-{key}.lock"


def _fcntl() -> ModuleType | None:
    """The ``fcntl`` module where the system has ``flock`` (POSIX); None on Windows."""
    try:
        import fcntl
    except ImportError:
        return None
    return fcntl


def _busy(out_dir: Path, wait: float) -> FileRefused:
    return FileRefused(f"{out_dir}: another envkit is writing into this folder; waited {wait:g}s, nothing was written",
                       hint="wait for the other run to finish, or generate into another folder with -o")


def _refused(out_dir: Path, e: OSError) -> FileRefused:
    return FileRefused(f"{out_dir}: cannot take the folder's lock {lock_path(out_dir)}: {e.strerror or e}; "
                       "nothing was written")


@contextlib.contextmanager
def output_lock(out_dir: Path, wait: float | None = None) -> Iterator[None]:
    """Hold the exclusive lock of the existing folder ``out_dir`` (see the module's docstring).

    A second envkit writing into the same folder (by any path to it, as any user) waits up to ``wait``
    seconds (``ENVKIT_LOCK_WAIT``, default 30), polling, then stops with exit 1 (FileRefused).
    """
    if wait is None:
        wait = lock_wait()
    fcntl = _fcntl()
    if fcntl is None:
        with _file_lock(out_dir, wait):
            yield
        return
    try:
        fd = os.open(out_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise _refused(out_dir, e) from None
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise _busy(out_dir, wait) from None
                time.sleep(POLL_S)
            except OSError as e:
                raise _refused(out_dir, e) from None
        yield
    finally:
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def _file_lock(out_dir: Path, wait: float) -> Iterator[None]:
    """filelock's lock file (``msvcrt`` locking), where a folder cannot be locked."""
    from filelock import FileLock, Timeout

    lock = FileLock(str(lock_path(out_dir)), timeout=wait)
    try:
        lock.acquire(poll_interval=POLL_S)
    except Timeout:
        raise _busy(out_dir, wait) from None
    except OSError as e:
        raise _refused(out_dir, e) from None
    try:
        yield
    finally:
        lock.release()
