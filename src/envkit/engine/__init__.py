"""The one seam between envkit and a container engine (after repo2docker's engine.py).

Contract: all container-engine use goes through :class:`Engine`, in envkit's own types (a
container's settings are a :class:`~envkit.plan.runsettings.RunSettings`); every failure is an
:class:`~envkit.errors.EngineError` (or :class:`BuildFailed`) with a ``hint``, never a raw
traceback. This module knows nothing of Docker: the Docker implementation, with everything
Docker-specific (docker-py's arguments and types, daemon error texts, the classic builder's
stream), is :mod:`envkit.engine.docker`. Only :func:`connect` here imports it (lazily, so
importing this module never loads docker-py); every other module asks :func:`connect` for an
engine. Everything envkit creates carries the label ``LABEL=1``.

Example:
    >>> RunResult(exit_code=0, stdout="ok\\n", stderr="")
    RunResult(exit_code=0, stdout='ok\\n', stderr='', timed_out=False)
    >>> eng = connect()                                                  # doctest: +SKIP
    >>> eng.run("envkit/demo:dev", ["python3", "-V"], build_plan(loaded).settings, timeout=60)  # doctest: +SKIP
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from envkit.errors import EngineError

if TYPE_CHECKING:
    from envkit.plan.runsettings import RunSettings

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


class EngineSilent(EngineError):
    """The engine did not accept, or did not answer, within the first contact's timeout; the message says which."""


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
    def run(self, image: str, command: list[str], run: RunSettings, *,
            labels: dict[str, str] | None = None, timeout: float = 600) -> RunResult:
        """Run ``command`` in a fresh container with the settings ``run`` (always removed).

        Every field of ``run`` applies (``None`` and empty ones leave the engine's default);
        volume sources must be absolute (:meth:`~envkit.plan.runsettings.RunSettings.with_sources`
        resolves a profile's relative ones); ``start_as_root`` starts the container as root.
        ``labels`` go on the container besides the engine's own; after ``timeout`` seconds the
        container is killed and the result says ``timed_out``.
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

    def probe_ulimits(self, ulimits: tuple[Any, ...]) -> tuple[bool | None, str]:
        """Does the engine start a container with these ulimits? ``(True|False, what it said)``, or ``(None, why
        it could not tell)``: a container of a local image, its command a path that does not exist, is started
        with them and removed; the engine applies rlimits before it looks for the command, so "executable
        file not found" means they were granted and "error setting rlimit" that they were not. Seconds, no pull."""
        return None, "this engine cannot probe ulimits"

    def image_labels(self, image: str) -> dict[str, str]:
        """The labels of ``image`` ({} when the engine cannot tell); ``validate --image`` compares them."""
        return {}

    def export_image(self, image: str, write: Callable[[bytes], object], *,
                     labels: dict[str, str] | None = None) -> tuple[str, list[str]]:
        """Stream ``image``'s file system (a tar, through a created, never started container carrying
        only ``labels``, removed afterwards) to ``write``; return the image id and its ``Env``.

        EngineError (with a hint) when the image is missing or the engine cannot export.
        """
        raise EngineError("this engine cannot export an image's file system")

    def close(self) -> None:
        """Release the connection (an engine is not used after this); a no-op where there is none."""
        return None


_OS_KINDS = (FileNotFoundError, PermissionError, ConnectionRefusedError, ConnectionResetError, TimeoutError)


def os_error_in(exc: BaseException | None, seen: set | None = None) -> OSError | None:
    """The first OSError in ``exc``'s chain (cause, context, and exceptions held in ``args``)."""
    seen = set() if seen is None else seen
    if exc is None or id(exc) in seen:
        return None
    seen.add(id(exc))
    # An errno, or one of the OS's own kinds: requests' ConnectionError is an OSError too, and says nothing.
    if isinstance(exc, OSError) and (exc.errno is not None or type(exc) in _OS_KINDS):
        return exc
    for nxt in (*(a for a in getattr(exc, "args", ()) if isinstance(a, BaseException)),
                exc.__cause__, exc.__context__):
        found = os_error_in(nxt, seen)
        if found is not None:
            return found
    return None


def connect(labels: dict[str, str] | None = None) -> Engine:
    """The engine of this host (Docker through DOCKER_HOST or its default socket), connected.

    ``labels`` go on everything it creates. EngineError with a hint when no engine answers.
    The Docker implementation (and docker-py) is imported here, only when an engine is needed.
    """
    from envkit.engine.docker import DockerEngine

    return DockerEngine.connect(labels)
