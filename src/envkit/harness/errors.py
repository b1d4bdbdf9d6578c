"""The one usage error, shared by the harness and the envkit CLI (standard library only).

Invalid input (an expectation, an override, ``--dataset``, a command-line argument)
raises :class:`UsageError`; both CLIs print its message (and ``hint``) on one line
and exit with code 2. ``envkit.errors`` re-exports it, so there is one class.

Example:
    >>> e = UsageError("--timeout must be > 0", hint="use --timeout 60")
    >>> str(e), e.hint, e.exit_code
    ('--timeout must be > 0', 'use --timeout 60', 2)
"""

from __future__ import annotations


class HintedError(Exception):
    """A user-facing failure: ``str(err)`` is the message, ``hint`` what to do next, ``exit_code`` the CLI's."""

    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class UsageError(HintedError, ValueError):
    """Bad input or command-line usage. Exit code 2."""


class FileUnreadable(UsageError):
    """An input the file system will not let us read (permissions, an I/O error). Exit code 1, not bad input."""

    exit_code = 1
