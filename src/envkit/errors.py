"""The one exception root. The CLI catches ``EnvkitError`` once and maps it to an exit code.

Example:
    >>> raise ProfileError("envkit.yaml:3:5: run.shm_size: expected a size")  # doctest: +SKIP
"""

from __future__ import annotations


class EnvkitError(Exception):
    """A user-facing failure: ``str(err)`` is the message, ``hint`` what to do next."""

    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class ProfileError(EnvkitError):
    """The profile (or another input file) is invalid. Exit code 2."""

    exit_code = 2


class UsageError(EnvkitError):
    """Bad command-line usage. Exit code 2."""

    exit_code = 2


class EngineError(EnvkitError):
    """The Docker engine is missing, refused a setting, or failed. Exit code 3."""

    exit_code = 3


class OutputConflict(EnvkitError):
    """A generated file was edited by the user; refusing to overwrite without --force. Exit code 1."""

    exit_code = 1


class CheckFailed(EnvkitError):
    """A check failed (``--strict`` warnings, a failed validation). Exit code 1."""

    exit_code = 1
