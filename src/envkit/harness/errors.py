"""The one usage error and the one SIGTERM, shared by the harness and the envkit CLI (standard library only).

Invalid input (an expectation, an override, ``--dataset``, a command-line argument)
raises :class:`UsageError`; both CLIs print its message (and ``hint``) on one line
and exit with code 2. ``envkit.errors`` re-exports it, so there is one class.

Example:
    >>> e = UsageError("--timeout must be > 0", hint="use --timeout 60")
    >>> str(e), e.hint, e.exit_code
    ('--timeout must be > 0', 'use --timeout 60', 2)
    >>> interrupted_status(Terminated()), interrupted_status(KeyboardInterrupt())
    (143, 130)
"""

from __future__ import annotations

import signal
import threading


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


class Terminated(KeyboardInterrupt):
    """SIGTERM (docker stop, a CI cancel, Slurm's scancel), raised like Ctrl-C so every ``finally`` cleans up."""


def _on_sigterm(signum, frame):
    raise Terminated()


def raise_on_sigterm() -> None:
    """Make SIGTERM unwind as :class:`Terminated` (in the main thread; elsewhere Python allows no handler)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)


def interrupted_status(exc: KeyboardInterrupt) -> int:
    """The exit status of a run ended by ``exc``: 143 for SIGTERM (128 + 15), 130 for Ctrl-C (128 + 2)."""
    return 143 if isinstance(exc, Terminated) else 130
