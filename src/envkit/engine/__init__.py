"""The one seam between envkit and a container engine (after repo2docker's engine.py).

Contract: all container-engine use goes through :class:`Engine`, in plain data; every
failure is an :class:`~envkit.errors.EngineError` (or :class:`BuildFailed`) with a
``hint``, never a raw traceback. This module knows nothing of Docker: the Docker
implementation, with everything Docker-specific (docker-py keyword arguments, daemon
error texts, the classic builder's stream), is :mod:`envkit.engine.docker`, which
imports this module and never the reverse. Everything envkit creates carries the
label ``LABEL=1``.

Example:
    >>> RunResult(exit_code=0, stdout="ok\\n", stderr="")
    RunResult(exit_code=0, stdout='ok\\n', stderr='', timed_out=False)
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from envkit.errors import EngineError

LABEL = "io.envkit.managed"


@dataclass(frozen=True)
class BuildEvent:
    """One line of build progress: ``kind`` is "step" (a new ``Step N/M``) or "log"."""
    kind: str
    step: int  # current step (0 before the first), total steps, and the line itself
    total: int
    text: str


@dataclass(frozen=True)
class RunResult:
    """Outcome of :meth:`Engine.run`; ``timed_out`` means envkit killed the container."""
    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False


class BuildFailed(EngineError):
    """``docker build`` failed; ``step``: the failing ``Step N/M : ...`` line; ``log``: its tail."""

    def __init__(self, message: str, *, step: str | None = None, log: list[str] | None = None,
                 hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.step, self.log = step, list(log or [])


class Engine(abc.ABC):
    """What envkit needs from a container engine. Tests use a fake (tests/fakes.py)."""

    @abc.abstractmethod
    def ping(self) -> dict[str, Any]:
        """Server facts: version, os, cgroup_version, runtimes, nvidia_runtime, host_ulimits."""

    @abc.abstractmethod
    def build(self, context_dir: Path, tag: str, *, labels: dict[str, str] | None = None,
              nocache: bool = False, buildargs: dict[str, str] | None = None,
              on_event: Callable[[BuildEvent], None] | None = None) -> str:
        """Build ``context_dir``/Dockerfile as ``tag``; return the image id, or BuildFailed.

        ``buildargs`` are --build-arg values (the proxy settings), never written into the Dockerfile.
        """

    @abc.abstractmethod
    def run(self, image: str, command: list[str], *, settings: dict[str, Any],
            labels: dict[str, str] | None = None, timeout: float = 600) -> RunResult:
        """Run ``command`` in a fresh container (always removed).

        ``settings``: the engine's own container options, built from
        :class:`~envkit.runsettings.RunSettings` by the implementation's module
        (for Docker, :func:`envkit.engine.docker.sdk_kwargs`).
        """

    @abc.abstractmethod
    def remove_labeled(self, label_key: str = LABEL) -> int:
        """Force-remove every container carrying ``label_key``; return how many."""

    def list_owned(self) -> list[tuple[str, str, dict[str, str]]]:
        """(id, name, labels) of every container (any state) carrying ``LABEL``; [] when unsupported."""
        return []

    def remove_container(self, container_id: str) -> bool:
        """Force-remove one container; False when it was already gone."""
        return False

    def list_superseded_images(self) -> list[tuple[str, dict[str, str]]]:
        """(id, labels) of every image carrying ``LABEL`` that no tag names any more; [] when unsupported.

        A rebuild under the same tag leaves the previous image nameless; its layers (a whole
        virtual environment after a package change) stay on disk until someone removes it.
        """
        return []

    def remove_image(self, image_id: str) -> bool:
        """Remove one image (never forced); False when it is gone or a container still uses it."""
        return False

    def image_labels(self, image: str) -> dict[str, str]:
        """The labels of ``image`` ({} when the engine cannot tell); ``validate --image`` compares them."""
        return {}
