"""Bounded, non-blocking reads of a user's file: the one implementation (stdlib only).

The harness reads ``--expect`` with it inside containers; :mod:`envkit.safeio`
wraps it for every host-side input (profile, ``.wslconfig``, certificates,
scripts), so the rule exists once. The path must be a regular file (checked with
``stat`` and again with ``fstat`` on the descriptor, so a path swapped for a FIFO
between the two still cannot block); it is opened with ``O_NONBLOCK``; its size
is checked against ``limit`` and never more than ``limit + 1`` bytes are read
(``/dev/zero`` cannot grow memory). Every refusal raises the caller's ``error``
class (or, where the file system refused, its ``refused`` class) with one line naming the
path, what it is and what was expected.

Example:
    >>> read_bounded("/dev/null", 1024, "a note", ValueError)
    Traceback (most recent call last):
    ...
    ValueError: /dev/null: is a character device, not a regular file; expected a note
"""

from __future__ import annotations

import os
import stat

from .rules.bytesize import exact_bytes


# st_mode tests in the order they are tried, each with its words.
_KINDS = ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISLNK, "a symbolic link"))


def kind_of(mode: int) -> str:
    """What a ``st_mode`` is, in words.

    >>> kind_of(stat.S_IFIFO | 0o644), kind_of(stat.S_IFREG | 0o600), kind_of(0)
    ('a FIFO (named pipe)', 'a regular file', 'not a regular file')
    """
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def read_bounded(path, limit: int, what: str, error: type[Exception],
                 refused: type[Exception] | None = None) -> bytes:
    """The bytes of regular file ``path``, at most ``limit`` of them; anything else raises ``error(message)``.

    When the file system refuses (permissions, an I/O error) ``refused(message)`` is raised instead,
    where the caller gives one (envkit's exit 1, not bad input); without it, ``error``.
    """
    refused = refused or error
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise error(f"{path}: no such file; expected {what}") from None
    except OSError as e:
        raise refused(f"{path}: cannot read: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{path}: is {kind_of(st.st_mode)}, not a regular file; expected {what}")
    if st.st_size > limit:
        raise error(f"{path}: is {st.st_size} bytes; {what} is at most {exact_bytes(limit)} ({limit} bytes)")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise refused(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{path}: is {kind_of(st.st_mode)}, not a regular file; expected {what}")
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(limit + 1 - total, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as e:
        raise refused(f"{path}: cannot read: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if total > limit:  # the file grew after the stat
        raise error(f"{path}: is more than {limit} bytes; {what} is at most {exact_bytes(limit)} ({limit} bytes)")
    return b"".join(chunks)
