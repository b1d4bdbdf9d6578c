"""The Docker implementation of :class:`envkit.engine.Engine`, over the Docker SDK (docker-py).

Imported only when an engine is actually used (``envkit.engine.DockerEngine`` loads it lazily),
so ``envkit generate`` never imports ``docker``.

Example:
    >>> eng = DockerEngine.connect()                                     # doctest: +SKIP
    >>> eng.run("envkit/demo:dev", ["python3", "-V"], settings={}, timeout=60)  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from pathlib import Path
from typing import Any, Callable

from envkit.engine import (
    _RLIMITS, BASE_IMAGE_HINT, LABEL, START_HINT, BuildEvent, BuildFailed, BuildStreamParser, Engine, RunResult,
    explain_start_error, parse_proc_limits, to_create_kwargs,
)
from envkit.leftovers import owner_labels
from envkit.errors import EngineError


class DockerEngine(Engine):
    """:class:`Engine` over the Docker SDK. ``labels`` go on everything it creates."""

    def __init__(self, client: Any, labels: dict[str, str] | None = None) -> None:
        import docker.errors
        import requests.exceptions  # docker-py's own transport; its timeouts surface as these
        self.client, self._errors, self._requests_exc = client, docker.errors, requests.exceptions
        self.labels = {**(labels or {}), LABEL: "1"}

    @classmethod
    def connect(cls, labels: dict[str, str] | None = None) -> "DockerEngine":
        """Connect via DOCKER_HOST / the default socket; EngineError (with hint) if no engine."""
        import docker  # here, not at module top: `envkit generate` must never import it
        try:
            client = docker.from_env()
            client.ping()
        except Exception as exc:  # DockerException, requests errors, FileNotFoundError ...
            where = os.environ.get("DOCKER_HOST") or "the default socket (/var/run/docker.sock)"
            raise EngineError(f"cannot reach a Docker engine at {where}: {exc}",
                              hint=START_HINT) from None
        return cls(client, labels)

    def ping(self) -> dict[str, Any]:
        try:
            info, ver = self.client.info(), self.client.version()
        except self._errors.DockerException as exc:
            raise EngineError(f"the engine stopped answering: {exc}", hint=START_HINT) from None
        runtimes, host = sorted(info.get("Runtimes") or {}), {}
        for n in ("memlock", "nofile", "stack"):
            if v := self._host_limit(n):
                host[n] = {"soft": v[0], "hard": v[1], "source": v[2]}
        return {
            "server_version": ver.get("Version"), "api_version": ver.get("ApiVersion"),
            "os": info.get("OperatingSystem"), "os_type": info.get("OSType"),
            "arch": info.get("Architecture"), "kernel": info.get("KernelVersion"),
            "cgroup_version": info.get("CgroupVersion"), "cgroup_driver": info.get("CgroupDriver"),
            "runtimes": runtimes, "nvidia_runtime": "nvidia" in runtimes,
            "default_runtime": info.get("DefaultRuntime"),
            "ncpu": info.get("NCPU"), "mem_total": info.get("MemTotal"),
            # The API does not expose daemon.json default-ulimits; the daemon's own hard
            # limits are the ceiling containers inherit, so report those where readable.
            "host_ulimits": host}

    def _daemon_pid(self) -> int | None:
        if not os.environ.get("DOCKER_HOST", "unix://").startswith("unix://"):
            return None  # remote daemon: its /proc is not ours
        for comm in Path("/proc").glob("[0-9]*/comm"):
            try:
                if comm.read_text().strip() == "dockerd":
                    return int(comm.parent.name)
            except OSError:  # the process exited while we looked
                pass
        return None

    def _host_limit(self, name: str) -> tuple[int, int, str] | None:
        """(soft, hard, where): the daemon's limit (the containers' ceiling), else ours."""
        pid = self._daemon_pid()
        with contextlib.suppress(OSError):  # not ours to read (other user) or just exited
            lim = parse_proc_limits(Path(f"/proc/{pid}/limits").read_text()) if pid else {}
            if name in lim:
                return (*lim[name], f"/proc/{pid}/limits of dockerd")
        if name not in _RLIMITS:  # not a Linux rlimit we know
            return None
        import resource  # POSIX-only: keep `import envkit.engine` working on Windows
        soft, hard = resource.getrlimit(_RLIMITS[name][0])
        return (soft, hard, "this process's limit (`ulimit -H`), as the daemon's was not readable")

    def build(self, context_dir: Path, tag: str, *, labels: dict[str, str] | None = None,
              nocache: bool = False, buildargs: dict[str, str] | None = None,
              on_event: Callable[[BuildEvent], None] | None = None) -> str:
        parser, emit = BuildStreamParser(), on_event or (lambda _e: None)
        try:
            # Low-level API: images.build() only reports after the build ends; we stream.
            # rm/forcerm: intermediate containers must not outlive a failed step.
            for chunk in self.client.api.build(
                    path=str(context_dir), tag=tag, labels={**(labels or {}), **self.labels},
                    nocache=nocache, rm=True, forcerm=True, decode=True, buildargs=dict(buildargs or {})):
                for ev in parser.feed(chunk):
                    emit(ev)
        except (self._errors.DockerException, OSError, TypeError) as exc:
            why = getattr(exc, "explanation", None) or exc  # APIError: the daemon's own words
            raise BuildFailed(f"docker build of {tag} failed: {why}", step=parser.step_text,
                              log=list(parser.tail)) from None
        for ev in parser.close():
            emit(ev)
        if parser.error or not parser.image_id:
            step, hint = parser.step_text, None
            if step and re.match(r"Step \d+/\d+ : FROM", step, re.I):
                hint = f"The base image is not available locally; {BASE_IMAGE_HINT}."
            raise BuildFailed(f"docker build of {tag} failed at {step or 'start'}: "
                              f"{parser.error or 'no image id'}", step=step,
                              log=list(parser.tail), hint=hint)
        return parser.image_id

    def run(self, image: str, command: list[str], *, settings: dict[str, Any],
            labels: dict[str, str] | None = None, timeout: float = 600) -> RunResult:
        errors, rexc, kwargs = self._errors, self._requests_exc, to_create_kwargs(settings)
        # Our own unique name (a caller's is overridden) lets the finally remove the container
        # even if interrupted between the daemon creating it and create() returning.
        name = kwargs["name"] = f"envkit-run-{uuid.uuid4().hex[:12]}"
        try:
            try:
                # create + start, not run(remove=True): that leaves a "Created" container
                # behind when start fails.
                # The owner (pid, start time, boot id) lets a later run sweep this container if we are killed.
                c = self.client.containers.create(
                    image, command, labels={**(labels or {}), **self.labels, **owner_labels()}, detach=True,
                    **kwargs)
                c.start()
            except errors.ImageNotFound as exc:
                raise EngineError(f"image {image!r} not found: {exc.explanation}",
                                  hint=BASE_IMAGE_HINT) from None
            except TypeError as exc:  # docker-py rejects unknown keyword arguments
                raise EngineError(f"unsupported container setting: {exc}") from None
            except errors.APIError as exc:
                raise explain_start_error(str(exc.explanation or exc), settings,
                                          self._host_limit) from None
            timed_out = False
            try:
                code = int(c.wait(timeout=timeout).get("StatusCode", -1))
            except (rexc.ReadTimeout, rexc.ConnectionError):  # docker-py's wait timeout
                timed_out, code = True, -1
                with contextlib.suppress(errors.APIError, rexc.RequestException):
                    c.kill()  # if this fails the finally's forced remove still kills it
                    code = int(c.wait(timeout=30).get("StatusCode", -1))
            out = c.logs(stdout=True, stderr=False).decode("utf-8", "replace")
            err = c.logs(stdout=False, stderr=True).decode("utf-8", "replace")
            return RunResult(code, out, err, timed_out)
        except errors.APIError as exc:
            raise EngineError(f"the engine failed while running {image}: "
                              f"{exc.explanation or exc}") from None
        finally:
            # Always, also after start failures, timeouts and KeyboardInterrupt. APIError:
            # never created (NotFound) or a removal already in progress.
            with contextlib.suppress(errors.APIError):
                self.client.api.remove_container(name, force=True)

    def list_owned(self) -> list[tuple[str, str, dict[str, str]]]:
        try:
            found = self.client.containers.list(all=True, filters={"label": LABEL})
        except self._errors.APIError as exc:
            raise EngineError(f"the engine failed while listing containers: {exc.explanation or exc}") from None
        return [(c.id, c.name, dict(c.labels or {})) for c in found]

    def remove_container(self, container_id: str) -> bool:
        try:
            self.client.api.remove_container(container_id, force=True)
            return True
        except self._errors.NotFound:
            return False
        except self._errors.APIError as exc:
            raise EngineError(f"the engine failed while removing {container_id[:12]}: {exc.explanation or exc}") from None

    def image_labels(self, image: str) -> dict[str, str]:
        try:
            return dict(self.client.images.get(image).labels or {})
        except self._errors.ImageNotFound as exc:
            raise EngineError(f"image {image!r} not found: {exc.explanation}", hint=BASE_IMAGE_HINT) from None
        except self._errors.APIError as exc:
            raise EngineError(f"the engine failed while inspecting {image}: {exc.explanation or exc}") from None

    def remove_labeled(self, label_key: str = LABEL) -> int:
        n = 0
        for c in self.client.containers.list(all=True, filters={"label": label_key}):
            with contextlib.suppress(self._errors.NotFound):  # raced with another remover
                c.remove(force=True)
                n += 1
        return n
