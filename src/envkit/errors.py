"""The one exception root. The CLI catches ``EnvkitError`` once and maps it to an exit code.

Example:
    >>> raise ProfileError("envkit.yaml:3:5: run.shm_size: expected a size")  # doctest: +SKIP
"""

from __future__ import annotations

# One UsageError for envkit and its harness: defined in the stdlib-only harness (which
# cannot import this module) and re-exported here. The CLI catches it beside EnvkitError.
from envkit.harness.errors import HintedError, UsageError

__all__ = ["CheckFailed", "EngineError", "EnvkitError", "OutputConflict", "ProfileError", "UsageError"]


class EnvkitError(HintedError):
    """A user-facing failure: ``str(err)`` is the message, ``hint`` what to do next."""


class ProfileError(EnvkitError):
    """The profile (or another input file) is invalid. Exit code 2."""

    exit_code = 2


class EngineError(EnvkitError):
    """The Docker engine is missing, refused a setting, or failed. Exit code 3."""

    exit_code = 3


class OutputConflict(EnvkitError):
    """A generated file was edited by the user; refusing to overwrite without --force. Exit code 1."""

    exit_code = 1


class CheckFailed(EnvkitError):
    """A check on a built image failed (``envkit build``: not the profile's Python). Exit code 1."""

    exit_code = 1
